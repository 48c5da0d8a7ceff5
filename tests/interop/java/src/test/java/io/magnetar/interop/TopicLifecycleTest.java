package io.magnetar.interop;

import static io.magnetar.interop.Interop.assertSameList;
import static io.magnetar.interop.Interop.numbered;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.regex.Pattern;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Behaviour issue 12 lists as defects, seen from the Java client: termination, regex discovery, chunks. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class TopicLifecycleTest {
    private PulsarClient client;

    @BeforeEach
    void open() throws Exception {
        client = Interop.sharedClient();
    }

    @Test
    void terminatedTopicReportsTheEndOfTopic() throws Exception {
        String topic = Interop.topic("terminate");
        try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                        .subscribe();
                Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                        .create()) {
            for (String value : numbered("t", 3)) {
                producer.send(value);
            }
            Interop.restOk("POST", "/admin/v2/persistent/public/default/" + Interop.localName(topic) + "/terminate",
                    null);
            assertThrows(PulsarClientException.class, () -> producer.send("after"));
            assertSameList(numbered("t", 3), Interop.receiveAndAck(consumer, 3));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Interop.RECEIVE_SECONDS);
            while (!consumer.hasReachedEndOfTopic() && System.nanoTime() < deadline) {
                Thread.sleep(50);
            }
            assertTrue(consumer.hasReachedEndOfTopic(), "REACHED_END_OF_TOPIC never arrived after terminate");
        }
    }

    @Test
    void regexSubscriptionPicksUpATopicCreatedLater() throws Exception {
        String tag = UUID.randomUUID().toString().substring(0, 8);
        String prefix = "persistent://public/default/java-rx-" + tag + "-";
        try (Producer<String> first = client.newProducer(Schema.STRING).topic(prefix + "a").create();
                Consumer<String> consumer = client.newConsumer(Schema.STRING)
                        .topicsPattern(Pattern.compile(prefix + ".*")).subscriptionName("sub")
                        .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                        .patternAutoDiscoveryPeriod(1, TimeUnit.SECONDS).subscribe()) {
            first.send("on-a");
            assertSameList(List.of("on-a"), Interop.receiveAndAck(consumer, 1));
            try (Producer<String> later = client.newProducer(Schema.STRING).topic(prefix + "c").create()) {
                later.send("on-c-before");
                Thread.sleep(4000);
                later.send("on-c-after");
                Set<String> got = new HashSet<>(Interop.receiveAndAck(consumer, 2));
                assertEquals(Set.of("on-c-before", "on-c-after"), got);
            }
        }
    }

    @Test
    void chunkedMessagesOnASharedSubscriptionReachOneConsumerWhole() throws Exception {
        String topic = Interop.topic("chunk-shared");
        List<byte[]> sent = new ArrayList<>();
        Random random = new Random(7);
        Consumer<byte[]> a = client.newConsumer().topic(topic).subscriptionName("sub")
                .subscriptionType(SubscriptionType.Shared).subscribe();
        Consumer<byte[]> b = client.newConsumer().topic(topic).subscriptionName("sub")
                .subscriptionType(SubscriptionType.Shared).subscribe();
        try (Producer<byte[]> producer = client.newProducer().topic(topic).enableBatching(false).enableChunking(true)
                .chunkMaxMessageSize(100 * 1024).create()) {
            for (int i = 0; i < 4; i++) {
                byte[] data = new byte[350 * 1024];
                random.nextBytes(data);
                sent.add(data);
                producer.send(data);
            }
            Set<String> expected = new HashSet<>();
            sent.forEach(d -> expected.add(Integer.toHexString(java.util.Arrays.hashCode(d))));
            Set<String> got = new HashSet<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (got.size() < 4 && System.nanoTime() < deadline) {
                for (Consumer<byte[]> consumer : List.of(a, b)) {
                    Message<byte[]> message = consumer.receive(100, TimeUnit.MILLISECONDS);
                    if (message != null) {
                        got.add(Integer.toHexString(java.util.Arrays.hashCode(message.getData())));
                        consumer.acknowledge(message);
                    }
                }
            }
            assertEquals(expected, got, "chunked messages received whole by the two Shared consumers");
        } finally {
            a.close();
            b.close();
        }
    }
}
