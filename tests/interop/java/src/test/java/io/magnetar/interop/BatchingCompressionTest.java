package io.magnetar.interop;

import static io.magnetar.interop.Interop.assertNothingMore;
import static io.magnetar.interop.Interop.assertSameList;
import static io.magnetar.interop.Interop.numbered;
import static io.magnetar.interop.Interop.receive;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.BatcherBuilder;
import org.apache.pulsar.client.api.CompressionType;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.MessageIdAdv;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Batches (default and key-based) and every compression codec. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BatchingCompressionTest {
    private PulsarClient client;

    @BeforeEach
    void open() throws Exception {
        client = Interop.sharedClient();
    }

    private static String payload(int i) {
        return "value-" + i + "-" + "abcdefghij".repeat(50);
    }

    @Test
    void batchesArriveWithBatchIndexesAndPartialAcks() throws Exception {
        String topic = Interop.topic("batch");
        try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                        .enableBatchIndexAcknowledgment(true).acknowledgmentGroupTime(0, TimeUnit.MILLISECONDS)
                        .subscribe();
                Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(true)
                        .batchingMaxMessages(10).batchingMaxPublishDelay(1, TimeUnit.SECONDS).create()) {
            List<CompletableFuture<MessageId>> ids = new ArrayList<>();
            for (String value : numbered("b", 30)) {
                ids.add(producer.sendAsync(value));
            }
            producer.flush();
            List<Message<String>> got = receive(consumer, 30);
            assertSameList(numbered("b", 30), Interop.values(got));
            Map<String, Integer> perEntry = new HashMap<>();
            for (int i = 0; i < got.size(); i++) {
                MessageIdAdv id = (MessageIdAdv) got.get(i).getMessageId();
                assertEquals(i % 10, id.getBatchIndex(), "batch index of message " + i);
                assertEquals(10, id.getBatchSize(), "batch size of message " + i);
                assertEquals(ids.get(i).get(), got.get(i).getMessageId(), "send id = receive id for message " + i);
                perEntry.merge(id.getLedgerId() + ":" + id.getEntryId(), 1, Integer::sum);
            }
            assertEquals(3, perEntry.size(), "entries: " + perEntry);
            for (int i = 0; i < got.size(); i++) {
                if (i % 10 != 3) {
                    consumer.acknowledge(got.get(i));
                }
            }
            consumer.redeliverUnacknowledgedMessages();
            List<Message<String>> again = receive(consumer, 3);
            assertSameList(List.of("b-3", "b-13", "b-23"), Interop.values(again));
            for (Message<String> message : again) {
                consumer.acknowledge(message);
            }
            assertNothingMore(consumer);
        }
    }

    @Test
    void keyBasedBatchesHoldOneKeyEach() throws Exception {
        String topic = Interop.topic("keybatch");
        try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                        .subscribe();
                Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(true)
                        .batcherBuilder(BatcherBuilder.KEY_BASED).batchingMaxMessages(100)
                        .batchingMaxPublishDelay(1, TimeUnit.SECONDS).create()) {
            for (int i = 0; i < 30; i++) {
                producer.newMessage().key("key-" + (i % 3)).value("kb-" + i).sendAsync();
            }
            producer.flush();
            List<Message<String>> got = receive(consumer, 30);
            Map<String, Set<String>> keysPerEntry = new HashMap<>();
            Map<String, List<String>> perKey = new HashMap<>();
            for (Message<String> message : got) {
                MessageIdAdv id = (MessageIdAdv) message.getMessageId();
                assertTrue(id.getBatchIndex() >= 0, "not batched: " + id);
                keysPerEntry.computeIfAbsent(id.getLedgerId() + ":" + id.getEntryId(), e -> new HashSet<>())
                        .add(message.getKey());
                perKey.computeIfAbsent(message.getKey(), k -> new ArrayList<>()).add(message.getValue());
                consumer.acknowledge(message);
            }
            for (Set<String> keys : keysPerEntry.values()) {
                assertEquals(1, keys.size(), "an entry holds several keys: " + keysPerEntry);
            }
            for (int k = 0; k < 3; k++) {
                List<String> expected = new ArrayList<>();
                for (int i = k; i < 30; i += 3) {
                    expected.add("kb-" + i);
                }
                assertSameList(expected, perKey.get("key-" + k));
            }
        }
    }

    @ParameterizedTest
    @EnumSource(value = CompressionType.class, names = {"LZ4", "ZLIB", "ZSTD", "SNAPPY"})
    void everyCodecRoundTripsBatchedAndSingle(CompressionType codec) throws Exception {
        String topic = Interop.topic("codec-" + codec.name().toLowerCase());
        try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                        .subscribe();
                Producer<String> batched = client.newProducer(Schema.STRING).topic(topic).compressionType(codec)
                        .enableBatching(true).batchingMaxMessages(5).batchingMaxPublishDelay(1, TimeUnit.SECONDS)
                        .create();
                Producer<String> single = client.newProducer(Schema.STRING).topic(topic).compressionType(codec)
                        .enableBatching(false).create()) {
            List<String> expected = new ArrayList<>();
            for (int i = 0; i < 10; i++) {
                batched.sendAsync(payload(i));
                expected.add(payload(i));
            }
            batched.flush();
            for (int i = 10; i < 13; i++) {
                single.send(payload(i));
                expected.add(payload(i));
            }
            assertSameList(expected, Interop.receiveAndAck(consumer, 13));
            assertNothingMore(consumer);
        }
    }

    @Test
    void batchIndexAcksLowerTheUnackedCountOfTheConsumer() throws Exception {
        String topic = Interop.topic("batch-unacked");
        String path = "/admin/v2/persistent/public/default/" + Interop.localName(topic);
        Interop.restOk("PUT", path, null);
        Interop.restOk("POST", path + "/maxUnackedMessagesOnConsumer", "20");
        try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                        .subscriptionType(org.apache.pulsar.client.api.SubscriptionType.Shared)
                        .enableBatchIndexAcknowledgment(true).acknowledgmentGroupTime(0, TimeUnit.MILLISECONDS)
                        .receiverQueueSize(10).subscribe();
                Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(true)
                        .batchingMaxMessages(10).batchingMaxPublishDelay(1, TimeUnit.SECONDS).create()) {
            for (String value : numbered("u", 100)) {
                producer.sendAsync(value);
            }
            producer.flush();
            // 9 of every 10 messages acknowledged: 10 stay unacknowledged, under the limit of 20
            List<String> got = new ArrayList<>();
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            while (got.size() < 100 && System.nanoTime() < deadline) {
                Message<String> message = consumer.receive(500, TimeUnit.MILLISECONDS);
                if (message != null) {
                    got.add(message.getValue());
                    if (((MessageIdAdv) message.getMessageId()).getBatchIndex() != 9) {
                        consumer.acknowledge(message);
                    }
                }
            }
            assertEquals(100, got.size(), "delivery stopped after " + got.size() + " messages");
            assertSameList(numbered("u", 100), got);
        }
    }
}
