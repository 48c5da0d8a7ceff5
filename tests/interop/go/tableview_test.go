package interop

import (
	"reflect"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

func tableSnapshot(tv pulsar.TableView) map[string]User {
	out := map[string]User{}
	for key, value := range tv.Entries() {
		out[key] = value.(User)
	}
	return out
}

func TestTableViewHoldsTheLatestValuePerKey(t *testing.T) {
	client := newClient(t)
	topic := topicName("tableview")
	schema := func() pulsar.Schema { return pulsar.NewJSONSchema(userSchema, nil) }
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, Schema: schema(), DisableBatching: true})
	put := func(key string, u *User) {
		if u == nil {
			// the Go client drops a non-batched message with an empty payload and no properties as
			// corrupt (MessageReader.ReadMessage returns ErrEOM), whichever broker sent it: the
			// tombstone carries a property so that it reaches the table view
			send(t, p, &pulsar.ProducerMessage{Key: key, Payload: []byte{}, Properties: map[string]string{"tombstone": "1"}})
			return
		}
		send(t, p, &pulsar.ProducerMessage{Key: key, Value: u})
	}
	put("a", &User{Name: "a1", Age: 1})
	put("b", &User{Name: "b1", Age: 1})
	put("a", &User{Name: "a2", Age: 2})
	put("c", &User{Name: "c1", Age: 1})
	tv, err := client.CreateTableView(pulsar.TableViewOptions{Topic: topic, Schema: schema(),
		SchemaValueType: reflect.TypeOf(User{})})
	must(t, err)
	defer tv.Close()
	equal(t, map[string]User{"a": {"a2", 2}, "b": {"b1", 1}, "c": {"c1", 1}}, tableSnapshot(tv), "initial table")
	put("b", &User{Name: "b2", Age: 2})
	put("d", &User{Name: "d1", Age: 1})
	put("c", nil)
	expected := map[string]User{"a": {"a2", 2}, "b": {"b2", 2}, "d": {"d1", 1}}
	deadline := time.Now().Add(receiveTimeout)
	for !reflect.DeepEqual(expected, tableSnapshot(tv)) && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	equal(t, expected, tableSnapshot(tv), "table after updates")
}
