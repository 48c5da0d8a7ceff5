package interop

import (
	"bytes"
	"context"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
)

func TestBatchesArriveWithBatchIndexes(t *testing.T) {
	client := newClient(t)
	topic := topicName("batch")
	consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub"})
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, BatchingMaxMessages: 10, BatchingMaxPublishDelay: time.Second})
	for _, v := range numbered("b", 30) {
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(v)}, func(pulsar.MessageID, *pulsar.ProducerMessage, error) {})
	}
	must(t, p.Flush())
	msgs := receive(t, consumer, 30)
	equal(t, numbered("b", 30), payloads(msgs), "payloads")
	entries := map[string]int{}
	for i, m := range msgs {
		equal(t, int32(i%10), m.ID().BatchIdx(), fmt.Sprintf("batch index of message %d", i))
		equal(t, int32(10), m.ID().BatchSize(), fmt.Sprintf("batch size of message %d", i))
		entries[fmt.Sprintf("%d:%d", m.ID().LedgerID(), m.ID().EntryID())]++
		must(t, consumer.Ack(m))
	}
	equal(t, 3, len(entries), "entries")
}

func TestKeyBasedBatchesHoldOneKeyEach(t *testing.T) {
	client := newClient(t)
	topic := topicName("keybatch")
	consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub"})
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, BatcherBuilderType: pulsar.KeyBasedBatchBuilder,
		BatchingMaxMessages: 100, BatchingMaxPublishDelay: time.Second})
	for i := 0; i < 30; i++ {
		p.SendAsync(context.Background(), &pulsar.ProducerMessage{Key: fmt.Sprintf("key-%d", i%3), Payload: []byte(fmt.Sprintf("kb-%d", i))},
			func(pulsar.MessageID, *pulsar.ProducerMessage, error) {})
	}
	must(t, p.Flush())
	keysPerEntry := map[string]map[string]bool{}
	perKey := map[string][]string{}
	for _, m := range receive(t, consumer, 30) {
		if m.ID().BatchIdx() < 0 {
			t.Fatalf("message %s was not batched", m.Payload())
		}
		entry := fmt.Sprintf("%d:%d", m.ID().LedgerID(), m.ID().EntryID())
		if keysPerEntry[entry] == nil {
			keysPerEntry[entry] = map[string]bool{}
		}
		keysPerEntry[entry][m.Key()] = true
		perKey[m.Key()] = append(perKey[m.Key()], string(m.Payload()))
		must(t, consumer.Ack(m))
	}
	for entry, keys := range keysPerEntry {
		if len(keys) != 1 {
			t.Fatalf("entry %s holds keys %v", entry, keys)
		}
	}
	for k := 0; k < 3; k++ {
		var expected []string
		for i := k; i < 30; i += 3 {
			expected = append(expected, fmt.Sprintf("kb-%d", i))
		}
		equal(t, expected, perKey[fmt.Sprintf("key-%d", k)], "order of key")
	}
}

func TestEveryCompressionCodec(t *testing.T) {
	codecs := map[string]pulsar.CompressionType{"LZ4": pulsar.LZ4, "ZLIB": pulsar.ZLib, "ZSTD": pulsar.ZSTD, "SNAPPY": pulsar.SNAPPY}
	for name, codec := range codecs {
		t.Run(name, func(t *testing.T) {
			client := newClient(t)
			topic := topicName("codec-" + strings.ToLower(name))
			consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub"})
			batched := producer(t, client, pulsar.ProducerOptions{Topic: topic, CompressionType: codec, BatchingMaxMessages: 5,
				BatchingMaxPublishDelay: time.Second})
			single := producer(t, client, pulsar.ProducerOptions{Topic: topic, CompressionType: codec, DisableBatching: true})
			var expected []string
			for i := 0; i < 10; i++ {
				v := fmt.Sprintf("value-%d-%s", i, strings.Repeat("abcdefghij", 50))
				expected = append(expected, v)
				batched.SendAsync(context.Background(), &pulsar.ProducerMessage{Payload: []byte(v)}, func(pulsar.MessageID, *pulsar.ProducerMessage, error) {})
			}
			must(t, batched.Flush())
			for i := 10; i < 13; i++ {
				v := fmt.Sprintf("value-%d-%s", i, strings.Repeat("abcdefghij", 50))
				expected = append(expected, v)
				send(t, single, &pulsar.ProducerMessage{Payload: []byte(v)})
			}
			equal(t, expected, receiveAndAck(t, consumer, 13), "payloads")
			assertNothingMore(t, consumer)
		})
	}
}

func TestChunkingOfAMessageOverTheMaxSize(t *testing.T) {
	client := newClient(t)
	topic := topicName("chunk")
	big := make([]byte, 5*1024*1024/2)
	rand.New(rand.NewSource(1)).Read(big)
	consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub"})
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, DisableBatching: true, EnableChunking: true})
	send(t, p, &pulsar.ProducerMessage{Key: "big", Payload: big})
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("small")})
	msgs := receive(t, consumer, 2)
	if !bytes.Equal(big, msgs[0].Payload()) {
		t.Fatalf("chunked message differs: %d bytes received of %d", len(msgs[0].Payload()), len(big))
	}
	equal(t, "big", msgs[0].Key(), "key")
	equal(t, "small", string(msgs[1].Payload()), "next message")
	// without chunking the client refuses what the broker announced it would not take
	plain := producer(t, client, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	ctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
	defer cancel()
	if _, err := plain.Send(ctx, &pulsar.ProducerMessage{Payload: make([]byte, 1024*1024+1024)}); err == nil {
		t.Fatalf("a message over the 1 MiB limit was accepted without chunking")
	}
}

func TestNegativeAckRedelivers(t *testing.T) {
	client := newClient(t)
	topic := topicName("nack")
	// precision 0: the Go client otherwise rounds the nack deadline down to 2^8 ms buckets and asks for the
	// redelivery up to 256 ms before the delay
	precision := int64(0)
	consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Shared,
		NackRedeliveryDelay: 500 * time.Millisecond, NackPrecisionBit: &precision})
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendStrings(t, p, numbered("n", 3))
	msgs := receive(t, consumer, 3)
	must(t, consumer.Ack(msgs[0]))
	must(t, consumer.Ack(msgs[2]))
	nackedAt := time.Now()
	consumer.Nack(msgs[1])
	again := receive(t, consumer, 1)[0]
	equal(t, "n-1", string(again.Payload()), "redelivered message")
	equal(t, uint32(1), again.RedeliveryCount(), "redelivery count")
	if time.Since(nackedAt) < 400*time.Millisecond {
		t.Fatalf("redelivered after %v, before the nack delay", time.Since(nackedAt))
	}
	must(t, consumer.Ack(again))
	assertNothingMore(t, consumer)
}

func TestDeadLetterTopicAfterMaxDeliveries(t *testing.T) {
	client := newClient(t)
	topic := topicName("dlq")
	dlq := topic + "-my-DLQ"
	dlqConsumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: dlq, SubscriptionName: "dlq-sub",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Shared,
		NackRedeliveryDelay: 100 * time.Millisecond, DLQ: &pulsar.DLQPolicy{MaxDeliveries: 3, DeadLetterTopic: dlq}})
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	send(t, p, &pulsar.ProducerMessage{Key: "k", Payload: []byte("poison"), Properties: map[string]string{"p": "v"}})
	for i := 0; i < 3; i++ {
		m := receive(t, consumer, 1)[0]
		equal(t, "poison", string(m.Payload()), "delivery")
		equal(t, uint32(i), m.RedeliveryCount(), "redelivery count")
		consumer.Nack(m)
	}
	dead := receive(t, dlqConsumer, 1)[0]
	equal(t, "poison", string(dead.Payload()), "dead letter")
	equal(t, "k", dead.Key(), "dead letter key")
	equal(t, "v", dead.Properties()["p"], "dead letter property")
	equal(t, topic, dead.Properties()["REAL_TOPIC"], "REAL_TOPIC")
	must(t, dlqConsumer.Ack(dead))
	assertNothingMore(t, consumer)
}

func TestRetryLetterTopic(t *testing.T) {
	client := newClient(t)
	topic := topicName("retry")
	retry, dlq := topic+"-sub-RETRY", topic+"-sub-DLQ"
	dlqConsumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: dlq, SubscriptionName: "dlq-sub",
		SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Shared,
		RetryEnable: true, DLQ: &pulsar.DLQPolicy{MaxDeliveries: 2, RetryLetterTopic: retry, DeadLetterTopic: dlq}})
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("again")})
	var times []string
	for i := 0; i < 3; i++ {
		m := receive(t, consumer, 1)[0]
		equal(t, "again", string(m.Payload()), "delivery")
		times = append(times, m.Properties()["RECONSUMETIMES"])
		consumer.ReconsumeLater(m, time.Second)
	}
	equal(t, []string{"", "1", "2"}, times, "RECONSUMETIMES of the deliveries")
	equal(t, "again", string(receive(t, dlqConsumer, 1)[0].Payload()), "dead letter")
	assertNothingMore(t, consumer)
}

func TestDelayedDelivery(t *testing.T) {
	client := newClient(t)
	topic := topicName("delayed")
	consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Shared})
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	// delivery times travel in whole milliseconds: measure from a whole millisecond too
	start := time.Now().Truncate(time.Millisecond)
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("late-3s"), DeliverAfter: 3 * time.Second})
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("late-at-2s"), DeliverAt: start.Add(2 * time.Second)})
	send(t, p, &pulsar.ProducerMessage{Payload: []byte("now")})
	for _, expect := range []struct {
		value   string
		minimum time.Duration
	}{{"now", 0}, {"late-at-2s", 2 * time.Second}, {"late-3s", 3 * time.Second}} {
		m := receive(t, consumer, 1)[0]
		equal(t, expect.value, string(m.Payload()), "order of release")
		if elapsed := time.Since(start); elapsed < expect.minimum || (expect.minimum == 0 && elapsed > 1800*time.Millisecond) {
			t.Fatalf("%s arrived after %v", expect.value, elapsed)
		}
		must(t, consumer.Ack(m))
	}
	assertNothingMore(t, consumer)
}

func TestDeduplicationAcrossProducerRestart(t *testing.T) {
	client := newClient(t)
	topic := topicName("dedup")
	path := "/admin/v2/persistent/public/default/" + localName(topic)
	rest(t, "PUT", path, "")
	rest(t, "POST", path+"/deduplicationEnabled", "true")
	name := "dedup-" + localName(topic)
	seq := func(n int64) *int64 { return &n }
	first, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, Name: name, DisableBatching: true})
	must(t, err)
	equal(t, int64(-1), first.LastSequenceID(), "last sequence id of a new producer")
	for i := int64(0); i < 5; i++ {
		send(t, first, &pulsar.ProducerMessage{Payload: []byte(fmt.Sprintf("v-%d", i)), SequenceID: seq(i)})
	}
	send(t, first, &pulsar.ProducerMessage{Payload: []byte("dup-2"), SequenceID: seq(2)})
	first.Close()
	second := producer(t, client, pulsar.ProducerOptions{Topic: topic, Name: name, DisableBatching: true})
	// The Go client's LastSequenceID() reports only receipts of this producer object (-1 here), but it
	// numbers new messages from the broker's last sequence id + 1: "v-5" below gets sequence id 5 only
	// if the broker remembered 4, and is dropped as a duplicate otherwise.
	send(t, second, &pulsar.ProducerMessage{Payload: []byte("dup-3"), SequenceID: seq(3)})
	send(t, second, &pulsar.ProducerMessage{Payload: []byte("dup-4"), SequenceID: seq(4)})
	send(t, second, &pulsar.ProducerMessage{Payload: []byte("v-5")})
	equal(t, int64(5), second.LastSequenceID(), "sequence id the restarted producer gave its first new message")
	reader, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	must(t, err)
	defer reader.Close()
	equal(t, numbered("v", 6), payloads(read(t, reader, 6)), "stored messages")
	assertNothingMoreToRead(t, reader)
}

func TestProducerAccessModes(t *testing.T) {
	client := newClient(t)
	topic := topicName("access")
	owner, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, ProducerAccessMode: pulsar.ProducerAccessModeExclusive, DisableBatching: true})
	must(t, err)
	_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic, ProducerAccessMode: pulsar.ProducerAccessModeExclusive})
	if err == nil || !strings.Contains(err.Error(), "ProducerFenced") {
		t.Fatalf("second exclusive producer: expected ProducerFenced, got %v", err)
	}
	_, err = client.CreateProducer(pulsar.ProducerOptions{Topic: topic})
	if err == nil || !strings.Contains(err.Error(), "ProducerBusy") {
		t.Fatalf("shared producer beside an exclusive one: expected ProducerBusy, got %v", err)
	}
	send(t, owner, &pulsar.ProducerMessage{Payload: []byte("from-owner")})
	waiting := make(chan pulsar.Producer, 1)
	go func() {
		p, err := client.CreateProducer(pulsar.ProducerOptions{Topic: topic, ProducerAccessMode: pulsar.ProducerAccessModeWaitForExclusive, DisableBatching: true})
		if err != nil {
			close(waiting)
			return
		}
		waiting <- p
	}()
	select {
	case <-waiting:
		t.Fatalf("WaitForExclusive producer created while the topic had an owner")
	case <-time.After(time.Second):
	}
	owner.Close()
	var next pulsar.Producer
	select {
	case next = <-waiting:
	case <-time.After(receiveTimeout):
		t.Fatalf("WaitForExclusive producer not created after the owner left")
	}
	if next == nil {
		t.Fatalf("WaitForExclusive producer failed")
	}
	defer next.Close()
	send(t, next, &pulsar.ProducerMessage{Payload: []byte("from-waiter")})
	reader, err := client.CreateReader(pulsar.ReaderOptions{Topic: topic, StartMessageID: pulsar.EarliestMessageID()})
	must(t, err)
	defer reader.Close()
	equal(t, []string{"from-owner", "from-waiter"}, payloads(read(t, reader, 2)), "stored messages")
}

// TestTransactionsAreRefusedWithoutACoordinator runs against the broker MAGNETAR_NO_TXN_SERVICE_URL
// names (one started with transactionCoordinatorEnabled=false), else against the broker under test.
func TestTransactionsAreRefusedWithoutACoordinator(t *testing.T) {
	url := env("MAGNETAR_NO_TXN_SERVICE_URL", serviceURL())
	_, err := pulsar.NewClient(pulsar.ClientOptions{URL: url, EnableTransaction: true,
		OperationTimeout: 10 * time.Second, ConnectionTimeout: 5 * time.Second})
	// as against a Pulsar broker with transactions disabled: the coordinator-assign topic has no partitions
	if err == nil || !strings.Contains(err.Error(), "The broker doesn't enable the transaction coordinator") {
		t.Fatalf("expected the client error for a broker without a transaction coordinator, got %v", err)
	}
}
