package interop

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/pulsar-client-go/pulsar"
	"github.com/google/uuid"
)

func TestRoundTripWithKeysPropertiesAndEventTime(t *testing.T) {
	client := newClient(t)
	topic := topicName("roundtrip")
	consumer := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub"})
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	base := time.UnixMilli(1_700_000_000_000)
	for i := 0; i < 20; i++ {
		send(t, p, &pulsar.ProducerMessage{
			Payload:    []byte(fmt.Sprintf("m-%d", i)),
			Key:        fmt.Sprintf("key-%d", i%3),
			Properties: map[string]string{"index": fmt.Sprint(i), "lang": "go"},
			EventTime:  base.Add(time.Duration(i) * time.Millisecond),
		})
	}
	msgs := receive(t, consumer, 20)
	equal(t, numbered("m", 20), payloads(msgs), "payloads")
	for i, m := range msgs {
		equal(t, fmt.Sprintf("key-%d", i%3), m.Key(), "key")
		equal(t, map[string]string{"index": fmt.Sprint(i), "lang": "go"}, m.Properties(), "properties")
		equal(t, base.Add(time.Duration(i)*time.Millisecond).UnixMilli(), m.EventTime().UnixMilli(), "event time")
		equal(t, p.Name(), m.ProducerName(), "producer name")
		equal(t, topic, m.Topic(), "topic")
		if m.PublishTime().IsZero() {
			t.Fatalf("no publish time")
		}
		must(t, consumer.Ack(m))
	}
	assertNothingMore(t, consumer)
}

func TestExclusiveSubscriptionRefusesASecondConsumer(t *testing.T) {
	client := newClient(t)
	topic := topicName("exclusive")
	subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Exclusive})
	_, err := client.Subscribe(pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Exclusive})
	if err == nil || !strings.Contains(err.Error(), "ConsumerBusy") {
		t.Fatalf("second exclusive consumer: expected ConsumerBusy, got %v", err)
	}
}

func TestSharedSpreadsMessages(t *testing.T) {
	client := newClient(t)
	topic := topicName("shared")
	options := pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Shared, ReceiverQueueSize: 10}
	a := subscribe(t, client, options)
	b := subscribe(t, client, options)
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendStrings(t, p, numbered("s", 100))
	got := drain(t, []pulsar.Consumer{a, b}, 100)
	if len(got[0]) < 10 || len(got[1]) < 10 {
		t.Fatalf("uneven spread: %d and %d", len(got[0]), len(got[1]))
	}
	seen := map[string]bool{}
	for _, list := range got {
		for _, m := range list {
			seen[string(m.Payload())] = true
		}
	}
	equal(t, 100, len(seen), "distinct messages")
}

// drain receives from all consumers until total messages arrived (acknowledging each); per consumer.
func drain(t *testing.T, consumers []pulsar.Consumer, total int) [][]pulsar.Message {
	t.Helper()
	got := make([][]pulsar.Message, len(consumers))
	count := 0
	deadline := time.After(20 * time.Second)
	for count < total {
		progressed := false
		for i, c := range consumers {
			select {
			case cm := <-c.Chan():
				got[i] = append(got[i], cm.Message)
				must(t, c.Ack(cm.Message))
				count++
				progressed = true
			default:
			}
		}
		if !progressed {
			select {
			case <-deadline:
				t.Fatalf("only %d of %d messages arrived", count, total)
			case <-time.After(20 * time.Millisecond):
			}
		}
	}
	return got
}

func TestFailoverDeliversToOneActiveConsumerAndFailsOver(t *testing.T) {
	client := newClient(t)
	topic := topicName("failover")
	options := pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.Failover}
	options.Name = "a"
	a, err := client.Subscribe(options)
	must(t, err)
	options.Name = "b"
	b, err := client.Subscribe(options)
	must(t, err)
	defer b.Close()
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	sendStrings(t, p, numbered("f", 10))
	got := drain(t, []pulsar.Consumer{a, b}, 10)
	active, standby := 0, 1
	if len(got[0]) == 0 {
		active, standby = 1, 0
	}
	if len(got[standby]) != 0 {
		t.Fatalf("both failover consumers received messages: %v and %v", payloads(got[0]), payloads(got[1]))
	}
	equal(t, numbered("f", 10), payloads(got[active]), "active consumer's messages")
	consumers := []pulsar.Consumer{a, b}
	consumers[active].Close()
	sendStrings(t, p, numbered("g", 5))
	equal(t, numbered("g", 5), receiveAndAck(t, consumers[standby], 5), "after failover")
	if active == 1 {
		a.Close()
	}
}

func TestKeySharedKeepsPerKeyOrderAndSplitsKeys(t *testing.T) {
	client := newClient(t)
	topic := topicName("keyshared")
	options := pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.KeyShared, ReceiverQueueSize: 10}
	a := subscribe(t, client, options)
	b := subscribe(t, client, options)
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	for i := 0; i < 10; i++ {
		for k := 0; k < 20; k++ {
			send(t, p, &pulsar.ProducerMessage{Key: fmt.Sprintf("k%d", k), Payload: []byte(fmt.Sprintf("k%d:%d", k, i))})
		}
	}
	got := drain(t, []pulsar.Consumer{a, b}, 200)
	owner := map[string]int{}
	for c, list := range got {
		next := map[string]int{}
		for _, m := range list {
			if o, ok := owner[m.Key()]; ok && o != c {
				t.Fatalf("key %s went to both consumers", m.Key())
			}
			owner[m.Key()] = c
			equal(t, fmt.Sprintf("%s:%d", m.Key(), next[m.Key()]), string(m.Payload()), "order of key "+m.Key())
			next[m.Key()]++
		}
	}
	if len(got[0]) == 0 || len(got[1]) == 0 {
		t.Fatalf("all keys went to one consumer")
	}
}

func TestKeySharedStickyRangesRouteByMurmur3(t *testing.T) {
	client := newClient(t)
	topic := topicName("sticky")
	lowPolicy, err := pulsar.NewKeySharedPolicySticky([]int{0, 32767})
	must(t, err)
	highPolicy, err := pulsar.NewKeySharedPolicySticky([]int{32768, 65535})
	must(t, err)
	low := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.KeyShared, KeySharedPolicy: lowPolicy})
	high := subscribe(t, client, pulsar.ConsumerOptions{Topic: topic, SubscriptionName: "sub", Type: pulsar.KeyShared, KeySharedPolicy: highPolicy})
	p := producer(t, client, pulsar.ProducerOptions{Topic: topic, DisableBatching: true})
	var expectLow, expectHigh []string
	for k := 0; k < 30; k++ {
		key := fmt.Sprintf("key-%d", k)
		send(t, p, &pulsar.ProducerMessage{Key: key, Payload: []byte(key)})
		if murmur3(key)%65536 < 32768 {
			expectLow = append(expectLow, key)
		} else {
			expectHigh = append(expectHigh, key)
		}
	}
	equal(t, expectLow, receiveAndAck(t, low, len(expectLow)), "low range")
	equal(t, expectHigh, receiveAndAck(t, high, len(expectHigh)), "high range")
	assertNothingMore(t, low)
	assertNothingMore(t, high)
}

func TestRegexSubscriptionPicksUpATopicCreatedLater(t *testing.T) {
	client := newClient(t)
	prefix := "persistent://public/default/go-rx-" + uuid.NewString()[:8] + "-"
	first := producer(t, client, pulsar.ProducerOptions{Topic: prefix + "a", DisableBatching: true})
	consumer := subscribe(t, client, pulsar.ConsumerOptions{TopicsPattern: prefix + ".*", SubscriptionName: "sub",
		AutoDiscoveryPeriod: time.Second, SubscriptionInitialPosition: pulsar.SubscriptionPositionEarliest})
	send(t, first, &pulsar.ProducerMessage{Payload: []byte("on-a")})
	equal(t, []string{"on-a"}, receiveAndAck(t, consumer, 1), "message of the first topic")
	later := producer(t, client, pulsar.ProducerOptions{Topic: prefix + "c", DisableBatching: true})
	send(t, later, &pulsar.ProducerMessage{Payload: []byte("on-c-before")})
	time.Sleep(4 * time.Second)
	send(t, later, &pulsar.ProducerMessage{Payload: []byte("on-c-after")})
	got := receiveAndAck(t, consumer, 2)
	sort.Strings(got)
	equal(t, []string{"on-c-after", "on-c-before"}, got, "messages of the topic created after subscribing")
}
