package interop

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

func newReader(t *testing.T, client pulsar.Client, options pulsar.ReaderOptions) pulsar.Reader {
	t.Helper()
	r, err := client.CreateReader(options)
	must(t, err)
	t.Cleanup(r.Close)
	return r
}

func TestReadersStartAtEarliestLatestOrAMessageID(t *testing.T) {
	client := newClient(t)
	topic := topicName("reader")
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	ids := sendStrings(t, p, numbered("r", 10))
	earliest := newReader(t, client, pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	equal(t, numbered("r", 10), payloads(read(t, earliest, 10)), "from earliest")
	if earliest.HasNext() {
		t.Fatalf("HasNext after the last message")
	}
	after := newReader(t, client, pulsar.ReaderOptions{Topic: topic, StartMessageID: ids[4]})
	equal(t, []string{"r-5", "r-6", "r-7", "r-8", "r-9"}, payloads(read(t, after, 5)), "after id 4")
	assertNothingMoreToRead(t, after)
	inclusive := newReader(t, client, pulsar.ReaderOptions{Topic: topic, StartMessageID: ids[7], StartMessageIDInclusive: true})
	equal(t, []string{"r-7", "r-8", "r-9"}, payloads(read(t, inclusive, 3)), "from id 7 inclusive")
	latest := newReader(t, client, pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.LatestMessageID()})
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("new")})
	equal(t, []string{"new"}, payloads(read(t, latest, 1)), "from latest")
}

func TestReaderSeeksByIDAndTime(t *testing.T) {
	client := newClient(t)
	topic := topicName("reader-seek")
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	ids := sendStrings(t, p, numbered("r", 5))
	time.Sleep(300 * time.Millisecond)
	middle := time.Now()
	time.Sleep(300 * time.Millisecond)
	for i := 5; i < 10; i++ {
		send(t, p, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("r-%d", i))})
	}
	reader := newReader(t, client, pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	equal(t, numbered("r", 10), payloads(read(t, reader, 10)), "all")
	must(t, reader.Seek(ids[2]))
	equal(t, []string{"r-3", "r-4", "r-5"}, payloads(read(t, reader, 3)), "after seek to id 2")
	must(t, reader.SeekByTime(middle))
	equal(t, []string{"r-5", "r-6"}, payloads(read(t, reader, 2)), "after seek by time")
}

func TestConsumerSeekRewinds(t *testing.T) {
	client := newClient(t)
	topic := topicName("consumer-seek")
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	ids := sendStrings(t, p, numbered("r", 6))
	consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "by-id",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	equal(t, numbered("r", 6), receiveAndAck(t, consumer, 6), "first pass")
	must(t, consumer.Seek(ids[1]))
	equal(t, []string{"r-2", "r-3", "r-4", "r-5"}, receiveAndAck(t, consumer, 4), "after seek to id 1")
	assertNothingMore(t, consumer)
	// a seek by time on a consumer that sought by id before keeps the old start id in the Go client
	// (it then drops r-0 and r-1 client-side), so the time seek gets a subscription of its own
	byTime := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "by-time",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	equal(t, numbered("r", 6), receiveAndAck(t, byTime, 6), "first pass")
	must(t, byTime.SeekByTime(time.UnixMilli(0)))
	equal(t, numbered("r", 6), receiveAndAck(t, byTime, 6), "after seek to time 0")
	must(t, byTime.SeekByTime(time.Now().Add(time.Minute)))
	assertNothingMore(t, byTime)
}

// userSchema is the Avro schema of the record every language exchanges (same text as the Java side).
const userSchema = `{"type":"record","name":"User","namespace":"magnetar.interop",` +
	`"fields":[{"name":"age","type":"int"},{"name":"name","type":"string"}]}`

// User is the record every language exchanges.
type User struct {
	Name string `avro:"name" json:"name"`
	Age  int32  `avro:"age" json:"age"`
}

func TestSchemasRoundTrip(t *testing.T) {
	schemas := map[string]func() pulsar.Schema{
		"avro": func() pulsar.Schema { return pulsar.NewAvroSchema(userSchema, nil) },
		"json": func() pulsar.Schema { return pulsar.NewJSONSchema(userSchema, nil) },
	}
	for name, schema := range schemas {
		t.Run(name, func(t *testing.T) {
			client := newClient(t)
			topic := topicName("schema-" + name)
			consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Schema: schema()})
			p := producer(t, client, pulsar.ProducerOptions{Topic: topic, Schema: schema()})
			users := []User{{"ada", 36}, {"linus", 21}, {"grace", 85}}
			for _, u := range users {
				u := u
				send(t, p, &pulsar.ProducerMessage{Value: &u})
			}
			var got []User
			for _, m := range receive(t, consumer, 3) {
				var u User
				must(t, m.GetSchemaValue(&u))
				got = append(got, u)
				must(t, consumer.Ack(m))
			}
			equal(t, users, got, "records")
			info := rest(t, "GET", "/admin/v2/schemas/public/default/"+localName(topic)+"/schema", "")
			if !strings.Contains(info, strings.ToUpper(name)) {
				t.Fatalf("registered schema is not %s: %s", name, info)
			}
		})
	}
}

func TestIncompatibleSchemaIsRefused(t *testing.T) {
	client := newClient(t)
	topic := topicName("incompatible")
	producer(t, client, pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewAvroSchema(userSchema, nil)})
	other := `{"type":"record","name":"Other","fields":[{"name":"id","type":"long"},{"name":"weight","type":"double"}]}`
	_, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Schema: pulsar.NewAvroSchema(other, nil)})
	if err == nil || !strings.Contains(err.Error(), "IncompatibleSchema") {
		t.Fatalf("expected IncompatibleSchema, got %v", err)
	}
}

func partitionOf(t *testing.T, m pulsar.Message) int {
	t.Helper()
	topic := m.Topic()
	index, err := strconv.Atoi(topic[strings.LastIndex(topic, "-partition-")+len("-partition-"):])
	must(t, err)
	equal(t, int32(index), m.ID().PartitionIdx(), "partition index of the message id")
	return index
}

func TestPartitionedKeyRoutingMatchesTheClientHash(t *testing.T) {
	schemes := map[string]pulsar.HashingScheme{"JavaStringHash": pulsar.JavaStringHash, "Murmur3_32Hash": pulsar.Murmur3_32Hash}
	for name, scheme := range schemes {
		t.Run(name, func(t *testing.T) {
			const partitions = 5
			client := newClient(t)
			topic := topicName("partitioned-" + strings.ToLower(name))
			createPartitioned(t, topic, partitions)
			consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Shared})
			p := producer(t, client, pulsar.ProducerOptions{Topic: topic, HashingScheme: scheme, DisableBatching: true})
			expected := map[string]int{}
			for i := 0; i < 60; i++ {
				key := fmt.Sprintf("key-%d", i)
				if i%7 == 0 {
					key += "-ünï"
				}
				hash := goJavaStringHash(key)
				if scheme == pulsar.Murmur3_32Hash {
					hash = murmur3(key)
				}
				expected[key] = int(hash % partitions)
				send(t, p, &pulsar.ProducerMessage{Key: key, Payload: []byte(key)})
			}
			actual := map[string]int{}
			for _, m := range receive(t, consumer, 60) {
				actual[m.Key()] = partitionOf(t, m)
				must(t, consumer.Ack(m))
			}
			equal(t, expected, actual, "partition of each key")
		})
	}
}

func TestPartitionedTopicWithoutKeysUsesEveryPartition(t *testing.T) {
	client := newClient(t)
	topic := topicName("partitioned-rr")
	createPartitioned(t, topic, 3)
	consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Failover})
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	ctx := context.Background()
	for i := 0; i < 30; i++ {
		if _, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("rr-%d", i))}); err != nil {
			t.Fatal(err)
		}
	}
	perPartition := map[int][]int{}
	for _, m := range receive(t, consumer, 30) {
		index, _ := strconv.Atoi(string(m.Payload())[3:])
		perPartition[partitionOf(t, m)] = append(perPartition[partitionOf(t, m)], index)
		must(t, consumer.Ack(m))
	}
	equal(t, 3, len(perPartition), "partitions used")
	for partition, indexes := range perPartition {
		for i := 1; i < len(indexes); i++ {
			if indexes[i] < indexes[i-1] {
				t.Fatalf("partition %d out of order: %v", partition, indexes)
			}
		}
	}
}
