package io.magnetar.interop;

import static io.magnetar.interop.Interop.assertNothingMore;
import static io.magnetar.interop.Interop.assertSameList;
import static io.magnetar.interop.Interop.numbered;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.ConsumerEventListener;
import org.apache.pulsar.client.api.KeySharedPolicy;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Range;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Exclusive, Shared, Failover and Key_Shared subscriptions as the Java client sees them. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class SubscriptionTypesTest {
    private PulsarClient client;

    @BeforeEach
    void open() throws Exception {
        client = Interop.sharedClient();
    }

    private Consumer<String> subscribe(String topic, SubscriptionType type, String name) throws Exception {
        return client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub").subscriptionType(type)
                .consumerName(name).receiverQueueSize(10).subscribe();
    }

    /** Drain both consumers until {@code total} messages arrived; values per consumer. */
    private static List<List<Message<String>>> drain(List<Consumer<String>> consumers, int total) throws Exception {
        List<List<Message<String>>> got = new ArrayList<>();
        consumers.forEach(c -> got.add(new ArrayList<>()));
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
        int count = 0;
        while (count < total && System.nanoTime() < deadline) {
            for (int i = 0; i < consumers.size(); i++) {
                Message<String> message = consumers.get(i).receive(50, TimeUnit.MILLISECONDS);
                if (message != null) {
                    got.get(i).add(message);
                    consumers.get(i).acknowledge(message);
                    count++;
                }
            }
        }
        assertEquals(total, count, "messages received by all consumers together");
        return got;
    }

    @Test
    void exclusiveRefusesASecondConsumer() throws Exception {
        String topic = Interop.topic("exclusive");
        try (Consumer<String> first = subscribe(topic, SubscriptionType.Exclusive, "first")) {
            PulsarClientException error = assertThrows(PulsarClientException.ConsumerBusyException.class,
                    () -> subscribe(topic, SubscriptionType.Exclusive, "second"));
            assertTrue(error.getMessage().toLowerCase().contains("exclusive"), error.getMessage());
            assertThrows(PulsarClientException.ConsumerBusyException.class,
                    () -> subscribe(topic, SubscriptionType.Shared, "shared"));
            assertTrue(first.isConnected());
        }
    }

    @Test
    void sharedSpreadsMessagesOverConsumers() throws Exception {
        String topic = Interop.topic("shared");
        try (Consumer<String> a = subscribe(topic, SubscriptionType.Shared, "a");
                Consumer<String> b = subscribe(topic, SubscriptionType.Shared, "b");
                Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                        .create()) {
            List<String> sent = numbered("s", 100);
            for (String value : sent) {
                producer.sendAsync(value);
            }
            producer.flush();
            List<List<Message<String>>> got = drain(List.of(a, b), 100);
            assertTrue(got.get(0).size() >= 10, "consumer a got only " + got.get(0).size());
            assertTrue(got.get(1).size() >= 10, "consumer b got only " + got.get(1).size());
            Set<String> union = new HashSet<>(Interop.values(got.get(0)));
            union.addAll(Interop.values(got.get(1)));
            assertEquals(new HashSet<>(sent), union);
            assertNothingMore(a);
            assertNothingMore(b);
        }
    }

    @Test
    void failoverDeliversToTheActiveConsumerOnlyAndFailsOver() throws Exception {
        String topic = Interop.topic("failover");
        Map<String, Boolean> active = new ConcurrentHashMap<>();
        ConsumerEventListener listener = new ConsumerEventListener() {
            @Override
            public void becameActive(Consumer<?> consumer, int partitionId) {
                active.put(consumer.getConsumerName(), true);
            }

            @Override
            public void becameInactive(Consumer<?> consumer, int partitionId) {
                active.put(consumer.getConsumerName(), false);
            }
        };
        Consumer<String> a = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                .subscriptionType(SubscriptionType.Failover).consumerName("a").consumerEventListener(listener)
                .subscribe();
        Consumer<String> b = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                .subscriptionType(SubscriptionType.Failover).consumerName("b").consumerEventListener(listener)
                .subscribe();
        try (Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                .create()) {
            for (String value : numbered("f", 10)) {
                producer.send(value);
            }
            List<List<Message<String>>> got = drain(List.of(a, b), 10);
            boolean aActive = !got.get(0).isEmpty();
            assertTrue(got.get(aActive ? 1 : 0).isEmpty(), "both failover consumers received messages");
            assertSameList(numbered("f", 10), Interop.values(got.get(aActive ? 0 : 1)));
            String activeName = aActive ? "a" : "b";
            assertEquals(Boolean.TRUE, active.get(activeName), "events: " + active);
            assertEquals(Boolean.FALSE, active.get(aActive ? "b" : "a"), "events: " + active);
            Consumer<String> standby = aActive ? b : a;
            (aActive ? a : b).close();
            for (String value : numbered("g", 5)) {
                producer.send(value);
            }
            assertSameList(numbered("g", 5), Interop.receiveAndAck(standby, 5));
        } finally {
            a.close();
            b.close();
        }
    }

    @Test
    void keySharedKeepsPerKeyOrderAndSplitsKeysOverConsumers() throws Exception {
        String topic = Interop.topic("keyshared");
        try (Consumer<String> a = subscribe(topic, SubscriptionType.Key_Shared, "a");
                Consumer<String> b = subscribe(topic, SubscriptionType.Key_Shared, "b");
                Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                        .create()) {
            int keys = 20;
            int perKey = 10;
            for (int i = 0; i < perKey; i++) {
                for (int k = 0; k < keys; k++) {
                    producer.newMessage().key("k" + k).value("k" + k + ":" + i).sendAsync();
                }
            }
            producer.flush();
            List<List<Message<String>>> got = drain(List.of(a, b), keys * perKey);
            Map<String, String> owner = new HashMap<>();
            for (int c = 0; c < 2; c++) {
                Map<String, Integer> next = new HashMap<>();
                for (Message<String> message : got.get(c)) {
                    String key = message.getKey();
                    String previous = owner.putIfAbsent(key, "c" + c);
                    assertTrue(previous == null || previous.equals("c" + c), "key " + key + " went to both");
                    int expected = next.getOrDefault(key, 0);
                    assertEquals(key + ":" + expected, message.getValue(), "order of key " + key);
                    next.put(key, expected + 1);
                }
            }
            assertEquals(keys, owner.size());
            assertTrue(owner.containsValue("c0") && owner.containsValue("c1"), "all keys on one consumer: " + owner);
        }
    }

    @Test
    void keySharedStickyRangesRouteByMurmurHashOfTheKey() throws Exception {
        String topic = Interop.topic("sticky");
        Consumer<String> low = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                .subscriptionType(SubscriptionType.Key_Shared)
                .keySharedPolicy(KeySharedPolicy.stickyHashRange().ranges(Range.of(0, 32767))).subscribe();
        Consumer<String> high = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                .subscriptionType(SubscriptionType.Key_Shared)
                .keySharedPolicy(KeySharedPolicy.stickyHashRange().ranges(Range.of(32768, 65535))).subscribe();
        try (Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                .create()) {
            List<String> expectLow = new ArrayList<>();
            List<String> expectHigh = new ArrayList<>();
            for (int k = 0; k < 30; k++) {
                String key = "key-" + k;
                producer.newMessage().key(key).value(key).send();
                int slot = Murmur3.hash32(key) % 65536;
                (slot < 32768 ? expectLow : expectHigh).add(key);
            }
            assertFalse(expectLow.isEmpty() || expectHigh.isEmpty());
            assertSameList(expectLow, Interop.receiveAndAck(low, expectLow.size()));
            assertSameList(expectHigh, Interop.receiveAndAck(high, expectHigh.size()));
            assertNothingMore(low);
            assertNothingMore(high);
            PulsarClientException overlap = assertThrows(PulsarClientException.class,
                    () -> client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                            .subscriptionType(SubscriptionType.Key_Shared)
                            .keySharedPolicy(KeySharedPolicy.stickyHashRange().ranges(Range.of(100, 200)))
                            .subscribe());
            assertNotNull(overlap.getMessage());
        } finally {
            low.close();
            high.close();
        }
    }

    @Test
    void keySharedAutoSplitHandsKeysToANewConsumer() throws Exception {
        String topic = Interop.topic("autosplit");
        try (Consumer<String> a = subscribe(topic, SubscriptionType.Key_Shared, "a");
                Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                        .create()) {
            for (int k = 0; k < 20; k++) {
                producer.newMessage().key("k" + k).value("first-" + k).send();
            }
            assertEquals(20, Interop.receiveAndAck(a, 20).size());
            try (Consumer<String> b = subscribe(topic, SubscriptionType.Key_Shared, "b")) {
                for (int k = 0; k < 20; k++) {
                    producer.newMessage().key("k" + k).value("second-" + k).send();
                }
                List<List<Message<String>>> got = drain(List.of(a, b), 20);
                assertFalse(got.get(1).isEmpty(), "the new consumer got no key after the split");
                assertFalse(got.get(0).isEmpty(), "the first consumer lost every key");
            }
        }
    }
}
