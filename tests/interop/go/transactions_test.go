package interop

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/apache/pulsar-client-go/pulsar/log"
)

// txnClient opens a client with transactions enabled, closed when the test ends.
func txnClient(t *testing.T) pulsar.Client {
	t.Helper()
	client, err := pulsar.NewClient(pulsar.ClientOptions{
		URL:               serviceURL(),
		OperationTimeout:  15 * time.Second,
		ConnectionTimeout: 5 * time.Second,
		EnableTransaction: true,
		Logger:            log.DefaultNopLogger(),
	})
	must(t, err)
	t.Cleanup(client.Close)
	return client
}

func newTxn(t *testing.T, client pulsar.Client, timeout time.Duration) pulsar.Transaction {
	t.Helper()
	txn, err := client.NewTransaction(timeout)
	must(t, err)
	return txn
}

func sendInTxn(t *testing.T, p pulsar.Producer, txn pulsar.Transaction, payload string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
	defer cancel()
	_, err := p.Send(ctx, &pulsar.ProducerMessage{Payload: []byte(payload), Transaction: txn})
	must(t, err)
}

func txnProducer(t *testing.T, client pulsar.Client, topic string) pulsar.Producer {
	t.Helper()
	return producer(t, client, pulsar.ProducerOptions{Topic: topic, SendTimeout: 0, DisableBatching: true})
}

func TestTxnCommitMakesMessagesVisible(t *testing.T) {
	client := txnClient(t)
	topic := topicName("txn-commit")
	consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	p := txnProducer(t, client, topic)
	txn := newTxn(t, client, time.Minute)
	for _, v := range numbered("in-txn", 5) {
		sendInTxn(t, p, txn, v)
	}
	sendStrings(t, p, []string{"plain-after"})
	// the plain message waits behind the open transaction (the max-read position)
	assertNothingMore(t, consumer)
	must(t, txn.Commit(context.Background()))
	equal(t, append(numbered("in-txn", 5), "plain-after"), receiveAndAck(t, consumer, 6), "after commit")
	assertNothingMore(t, consumer)
	if err := txn.Commit(context.Background()); err == nil {
		t.Fatalf("a second commit succeeded")
	}
}

func TestTxnAbortHidesMessagesFromEveryone(t *testing.T) {
	client := txnClient(t)
	topic := topicName("txn-abort")
	consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	p := txnProducer(t, client, topic)
	txn := newTxn(t, client, time.Minute)
	for _, v := range numbered("aborted", 4) {
		sendInTxn(t, p, txn, v)
	}
	must(t, txn.Abort(context.Background()))
	sendStrings(t, p, []string{"plain"})
	equal(t, []string{"plain"}, receiveAndAck(t, consumer, 1), "after abort")
	assertNothingMore(t, consumer)
	reader, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	must(t, err)
	defer reader.Close()
	equal(t, []string{"plain"}, payloads(read(t, reader, 1)), "a reader from the earliest")
	if reader.HasNext() {
		t.Fatalf("the reader sees more than the plain message")
	}
}

func TestTxnTimeoutAbortsIt(t *testing.T) {
	client := txnClient(t)
	topic := topicName("txn-timeout")
	consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s"})
	p := txnProducer(t, client, topic)
	txn := newTxn(t, client, 2*time.Second)
	sendInTxn(t, p, txn, "timed-out")
	sendStrings(t, p, []string{"plain"})
	// the coordinator aborts it: the plain message goes out, the other never
	equal(t, []string{"plain"}, receiveAndAck(t, consumer, 1), "after the timeout")
	if err := txn.Commit(context.Background()); err == nil {
		t.Fatalf("a commit after the timeout succeeded")
	}
	assertNothingMore(t, consumer)
}

func TestTxnAckConflict(t *testing.T) {
	client := txnClient(t)
	topic := topicName("txn-conflict")
	consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	p := txnProducer(t, client, topic)
	sendStrings(t, p, []string{"m"})
	msg := receive(t, consumer, 1)[0]
	first := newTxn(t, client, time.Minute)
	second := newTxn(t, client, time.Minute)
	must(t, consumer.AckWithTxn(msg, first))
	err := consumer.AckWithTxn(msg, second)
	if err == nil || !strings.Contains(err.Error(), "TransactionConflict") {
		t.Fatalf("expected TransactionConflict for a second transaction's ack, got %v", err)
	}
	must(t, first.Commit(context.Background()))
	consumer.Close()
	again := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Shared})
	assertNothingMore(t, again)
}

// TestTxnConsumeTransformProducePartitioned moves 30 messages from a partitioned input to a
// partitioned output, 10 per transaction; the second batch is first aborted (its output never
// visible, its input redelivered) and then done again.
func TestTxnConsumeTransformProducePartitioned(t *testing.T) {
	client := txnClient(t)
	input, output := topicName("ctp-in"), topicName("ctp-out")
	createPartitioned(t, input, 3)
	createPartitioned(t, output, 2)
	in := subscribe(t, client, pulsar.ConsumerOptions{Topic: input, SubscriptionName: "ctp", Type: pulsar.Shared})
	out := subscribe(t, client, pulsar.ConsumerOptions{Topic: output, SubscriptionName: "check"})
	source := producer(t, client, pulsar.ProducerOptions{Topic: input, DisableBatching: true})
	sink := producer(t, client, pulsar.ProducerOptions{Topic: output, SendTimeout: 0, DisableBatching: true})
	inputs := numbered("in", 30)
	for _, v := range inputs {
		send(t, source, &pulsar.ProducerMessage{Payload: []byte(v), Key: v})
	}
	batch := func(abort bool) []string {
		txn := newTxn(t, client, time.Minute)
		msgs := receive(t, in, 10)
		for _, m := range msgs {
			ctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
			_, err := sink.Send(ctx, &pulsar.ProducerMessage{Payload: []byte("out-" + string(m.Payload())),
				Key: string(m.Payload()), Transaction: txn})
			cancel()
			must(t, err)
			must(t, in.AckWithTxn(m, txn))
		}
		if abort {
			// the abort releases the acknowledgements: the broker delivers the messages again
			must(t, txn.Abort(context.Background()))
		} else {
			must(t, txn.Commit(context.Background()))
		}
		return payloads(msgs)
	}
	var committed []string
	committed = append(committed, batch(false)...)
	aborted := batch(true)
	for len(committed) < 30 {
		committed = append(committed, batch(false)...)
	}
	sort.Strings(committed)
	expected := append([]string{}, inputs...)
	sort.Strings(expected)
	equal(t, expected, committed, "every input committed once")
	got := receiveAndAck(t, out, 30)
	sort.Strings(got)
	want := make([]string, 0, 30)
	for _, v := range expected {
		want = append(want, "out-"+v)
	}
	equal(t, want, got, "every output exactly once")
	assertNothingMore(t, out)
	assertNothingMore(t, in)
	if len(aborted) != 10 {
		t.Fatalf("the aborted batch had %d messages", len(aborted))
	}
}

// TestTxnChunkedMessageAckedInTxn: a chunked message sent in a transaction, acknowledged in an
// aborted transaction (it comes back), then in a committed one (it is gone).
func TestTxnChunkedMessageAckedInTxn(t *testing.T) {
	client := txnClient(t)
	topic := topicName("txn-chunk")
	consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Exclusive})
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, EnableChunking: true, DisableBatching: true,
		ChunkMaxMessageSize: 100_000})
	big := strings.Repeat("x", 350_000)
	txn := newTxn(t, client, time.Minute)
	sendInTxn(t, p, txn, big)
	assertNothingMore(t, consumer)
	must(t, txn.Commit(context.Background()))
	msg := receive(t, consumer, 1)[0]
	equal(t, len(big), len(msg.Payload()), "chunked payload size")
	aborted := newTxn(t, client, time.Minute)
	must(t, consumer.AckWithTxn(msg, aborted))
	must(t, aborted.Abort(context.Background()))
	consumer.Close()
	again := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Exclusive})
	msg = receive(t, again, 1)[0]
	equal(t, len(big), len(msg.Payload()), "redelivered after the abort")
	committed := newTxn(t, client, time.Minute)
	must(t, again.AckWithTxn(msg, committed))
	must(t, committed.Commit(context.Background()))
	again.Close()
	last := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "s", Type: pulsar.Exclusive})
	assertNothingMore(t, last)
}

// TestTxnMetadataOverAdmin: the admin API's view of an open transaction, as pulsar-admin shows it.
func TestTxnMetadataOverAdmin(t *testing.T) {
	client := txnClient(t)
	topic := topicName("txn-admin")
	p := txnProducer(t, client, topic)
	txn := newTxn(t, client, time.Minute)
	sendInTxn(t, p, txn, "m")
	id := txn.GetTxnID()
	body := rest(t, "GET", fmt.Sprintf("/admin/v3/transactions/transactionMetadata/%d/%d", id.MostSigBits, id.LeastSigBits), "")
	if !strings.Contains(body, `"status":"OPEN"`) || !strings.Contains(body, topic) {
		t.Fatalf("transaction metadata: %s", body)
	}
	must(t, txn.Commit(context.Background()))
}
