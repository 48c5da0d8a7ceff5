package interop

import (
	"context"
	"fmt"
	"testing"

	"github.com/apache/pulsar-client-go/pulsar"
)

// Cross-language round trips. Topics are xlang-RUN-WRITER-KIND; each writer (py, go, java) writes five
// messages per kind. tests/interop/test_go.py runs TestXlangWrite before Maven and the rest after it.
const xlangCount = 5

func xlangTopic(writer, kind string) string {
	return fmt.Sprintf("persistent://public/default/xlang-%s-%s-%s", runID(), writer, kind)
}

func xlangSchemas() map[string]func() pulsar.Schema {
	return map[string]func() pulsar.Schema{
		"avro": func() pulsar.Schema { return pulsar.NewAvroSchema(userSchema, nil) },
		"json": func() pulsar.Schema { return pulsar.NewJSONSchema(userSchema, nil) },
	}
}

func TestXlangWrite(t *testing.T) {
	client := newClient(t)
	strings := producer(t, client, pulsar.ProducerOptions{Topic: xlangTopic("go", "string"), Schema: pulsar.NewStringSchema(nil)})
	for i := 0; i < xlangCount; i++ {
		send(t, strings, &pulsar.ProducerMessage{Key: fmt.Sprintf("k%d", i), Value: fmt.Sprintf("go-%d-ünï", i),
			Properties: map[string]string{"writer": "go"}})
	}
	for kind, schema := range xlangSchemas() {
		p := producer(t, client, pulsar.ProducerOptions{Topic: xlangTopic("go", kind), Schema: schema()})
		for i := 0; i < xlangCount; i++ {
			send(t, p, &pulsar.ProducerMessage{Value: &User{Name: fmt.Sprintf("go-%d", i), Age: int32(i)}})
		}
	}
}

func readXlang(t *testing.T, writer string) {
	client := newClient(t)
	reader := newReader(t, client, pulsar.ReaderOptions{Topic: xlangTopic(writer, "string"),
		StartMessageID: pulsar.EarliestMessageID(), Schema: pulsar.NewStringSchema(nil)})
	for i, m := range read(t, reader, xlangCount) {
		var value *string
		must(t, m.GetSchemaValue(&value))
		if value == nil {
			t.Fatalf("message %d has no string value", i)
		}
		equal(t, fmt.Sprintf("%s-%d-ünï", writer, i), *value, "string value")
		equal(t, fmt.Sprintf("k%d", i), m.Key(), "key")
		equal(t, writer, m.Properties()["writer"], "writer property")
	}
	assertNothingMoreToRead(t, reader)
	for kind, schema := range xlangSchemas() {
		r := newReader(t, client, pulsar.ReaderOptions{Topic: xlangTopic(writer, kind),
			StartMessageID: pulsar.EarliestMessageID(), Schema: schema()})
		var got, expected []User
		for i, m := range read(t, r, xlangCount) {
			var u User
			must(t, m.GetSchemaValue(&u))
			got = append(got, u)
			expected = append(expected, User{Name: fmt.Sprintf("%s-%d", writer, i), Age: int32(i)})
		}
		equal(t, expected, got, kind+" records")
		ctx, cancel := context.WithTimeout(context.Background(), quietTimeout)
		if m, err := r.Next(ctx); err == nil {
			t.Fatalf("unexpected extra %s message %v", kind, m.ID())
		}
		cancel()
	}
}

func TestXlangGoReadsWhatJavaWrote(t *testing.T)   { readXlang(t, "java") }
func TestXlangGoReadsWhatPythonWrote(t *testing.T) { readXlang(t, "py") }
