// Package interop drives a magnetar broker with the official Go client (github.com/apache/pulsar-client-go).
// The broker's URLs come from MAGNETAR_SERVICE_URL and MAGNETAR_HTTP_URL; tests/interop/test_go.py sets them.
package interop

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
	"github.com/google/uuid"
)

// receiveTimeout bounds the wait for a message that must arrive; quietTimeout the check that none does.
const (
	receiveTimeout = 10 * time.Second
	quietTimeout   = 700 * time.Millisecond
)

func env(name, fallback string) string {
	if value := os.Getenv(name); value != "" {
		return value
	}
	return fallback
}

func serviceURL() string { return env("MAGNETAR_SERVICE_URL", "pulsar://127.0.0.1:6650") }
func httpURL() string    { return env("MAGNETAR_HTTP_URL", "http://127.0.0.1:8080") }
func runID() string      { return env("MAGNETAR_INTEROP_RUN", "local") }

// newClient opens a client of the broker under test that is closed when the test ends.
func newClient(t *testing.T) pulsar.Client {
	t.Helper()
	client, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:               serviceURL(),
		OperationTimeout:  15 * time.Second,
		ConnectionTimeout: 5 * time.Second,
		Logger:            log.DefaultNopLogger(),
	})
	must(t, err)
	t.Cleanup(client.Close)
	return client
}

// topicName is a persistent topic in public/default that no other test uses.
func topicName(prefix string) string {
	return "persistent://public/default/go-" + prefix + "-" + uuid.NewString()[:12]
}

func localName(topic string) string { return topic[strings.LastIndex(topic, "/")+1:] }

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatalf("unexpected error: %v", err)
	}
}

func equal(t *testing.T, expected, actual interface{}, what string) {
	t.Helper()
	if !reflect.DeepEqual(expected, actual) {
		t.Fatalf("%s: expected %v but got %v", what, expected, actual)
	}
}

// rest sends one admin request and fails the test unless it answers 2xx.
func rest(t *testing.T, method, path, body string) string {
	t.Helper()
	req, err := http.NewRequest(method, httpURL()+path, strings.NewReader(body))
	must(t, err)
	req.Header.Set("Content-Type", "application/json")
	resp, err := (&http.Client{Timeout: 15 * time.Second}).Do(req)
	must(t, err)
	defer resp.Body.Close()
	text, _ := io.ReadAll(resp.Body)
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s %s answered %d: %s", method, path, resp.StatusCode, text)
	}
	return string(text)
}

func createPartitioned(t *testing.T, topic string, partitions int) {
	t.Helper()
	rest(t, "PUT", "/admin/v2/persistent/public/default/"+localName(topic)+"/partitions", fmt.Sprint(partitions))
}

func producer(t *testing.T, client pulsar.Client, options pulsar.ProducerOptions) pulsar.Producer {
	t.Helper()
	p, err := client.CreateProducer(options)
	must(t, err)
	t.Cleanup(p.Close)
	return p
}

func subscribe(t *testing.T, client pulsar.Client, options pulsar.ConsumerOptions) pulsar.Consumer {
	t.Helper()
	c, err := client.Subscribe(options)
	must(t, err)
	t.Cleanup(c.Close)
	return c
}

func send(t *testing.T, p pulsar.Producer, msg *pulsar.ProducerMessage) pulsar.MessageID {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
	defer cancel()
	id, err := p.Send(ctx, msg)
	must(t, err)
	return id
}

func sendStrings(t *testing.T, p pulsar.Producer, values []string) []pulsar.MessageID {
	t.Helper()
	ids := make([]pulsar.MessageID, 0, len(values))
	for _, v := range values {
		ids = append(ids, send(t, p, &pulsar.ProducerMessage{Payload: []byte(v)}))
	}
	return ids
}

// receive returns exactly count messages, each within receiveTimeout.
func receive(t *testing.T, c pulsar.Consumer, count int) []pulsar.Message {
	t.Helper()
	out := make([]pulsar.Message, 0, count)
	for i := 0; i < count; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
		msg, err := c.Receive(ctx)
		cancel()
		if err != nil {
			t.Fatalf("message %d of %d did not arrive (%v); got %v", i+1, count, err, payloads(out))
		}
		out = append(out, msg)
	}
	return out
}

// receiveAndAck receives and acknowledges exactly count messages and returns their payloads.
func receiveAndAck(t *testing.T, c pulsar.Consumer, count int) []string {
	t.Helper()
	msgs := receive(t, c, count)
	for _, m := range msgs {
		must(t, c.Ack(m))
	}
	return payloads(msgs)
}

func assertNothingMore(t *testing.T, c pulsar.Consumer) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), quietTimeout)
	defer cancel()
	if msg, err := c.Receive(ctx); err == nil {
		t.Fatalf("unexpected message %q id=%v", msg.Payload(), msg.ID())
	}
}

func read(t *testing.T, r pulsar.Reader, count int) []pulsar.Message {
	t.Helper()
	out := make([]pulsar.Message, 0, count)
	for i := 0; i < count; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
		msg, err := r.Next(ctx)
		cancel()
		if err != nil {
			t.Fatalf("message %d of %d could not be read (%v); got %v", i+1, count, err, payloads(out))
		}
		out = append(out, msg)
	}
	return out
}

func assertNothingMoreToRead(t *testing.T, r pulsar.Reader) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), quietTimeout)
	defer cancel()
	if msg, err := r.Next(ctx); err == nil {
		t.Fatalf("unexpected message %q id=%v", msg.Payload(), msg.ID())
	}
}

func payloads(msgs []pulsar.Message) []string {
	out := make([]string, 0, len(msgs))
	for _, m := range msgs {
		out = append(out, string(m.Payload()))
	}
	return out
}

func numbered(prefix string, count int) []string {
	out := make([]string, 0, count)
	for i := 0; i < count; i++ {
		out = append(out, fmt.Sprintf("%s-%d", prefix, i))
	}
	return out
}
