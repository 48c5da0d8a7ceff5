package io.magnetar.interop;

import static io.magnetar.interop.Interop.assertNothingMore;
import static io.magnetar.interop.Interop.assertSameList;
import static io.magnetar.interop.Interop.numbered;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Readers from earliest, latest and a message id (inclusive or not), and seeks by id and by time. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class ReaderSeekTest {
    private PulsarClient client;

    @BeforeEach
    void open() throws Exception {
        client = Interop.sharedClient();
    }

    /** Send "r-0".."r-(n-1)" unbatched and return their ids. */
    private List<MessageId> fill(String topic, int count) throws Exception {
        List<MessageId> ids = new ArrayList<>();
        try (Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                .create()) {
            for (String value : numbered("r", count)) {
                ids.add(producer.send(value));
            }
        }
        return ids;
    }

    @Test
    void readersStartAtEarliestLatestOrAMessageId() throws Exception {
        String topic = Interop.topic("reader");
        List<MessageId> ids = fill(topic, 10);
        try (Reader<String> earliest = client.newReader(Schema.STRING).topic(topic)
                .startMessageId(MessageId.earliest).create()) {
            assertSameList(numbered("r", 10), Interop.read(earliest, 10));
            assertFalse(earliest.hasMessageAvailable());
        }
        try (Reader<String> after = client.newReader(Schema.STRING).topic(topic).startMessageId(ids.get(4))
                .create()) {
            assertSameList(List.of("r-5", "r-6", "r-7", "r-8", "r-9"), Interop.read(after, 5));
            assertNothingMore(after);
        }
        try (Reader<String> inclusive = client.newReader(Schema.STRING).topic(topic).startMessageId(ids.get(7))
                .startMessageIdInclusive().create()) {
            assertSameList(List.of("r-7", "r-8", "r-9"), Interop.read(inclusive, 3));
        }
        try (Reader<String> latest = client.newReader(Schema.STRING).topic(topic).startMessageId(MessageId.latest)
                .create()) {
            assertFalse(latest.hasMessageAvailable());
            try (Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).create()) {
                producer.send("new");
            }
            assertSameList(List.of("new"), Interop.read(latest, 1));
        }
        assertEquals(ids.get(9), client.newReader(Schema.STRING).topic(topic).startMessageId(ids.get(9))
                .startMessageIdInclusive().create().readNext(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS)
                .getMessageId());
    }

    @Test
    void readerSeeksByIdAndByTime() throws Exception {
        String topic = Interop.topic("reader-seek");
        List<MessageId> ids = fill(topic, 5);
        Thread.sleep(300);
        long middle = System.currentTimeMillis();
        Thread.sleep(300);
        try (Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                .create()) {
            for (int i = 5; i < 10; i++) {
                producer.send("r-" + i);
            }
        }
        try (Reader<String> reader = client.newReader(Schema.STRING).topic(topic).startMessageId(MessageId.earliest)
                .create()) {
            assertSameList(numbered("r", 10), Interop.read(reader, 10));
            reader.seek(ids.get(2));
            assertSameList(List.of("r-3", "r-4", "r-5"), Interop.read(reader, 3));
            reader.seek(middle);
            assertSameList(List.of("r-5", "r-6"), Interop.read(reader, 2));
            reader.seek(MessageId.earliest);
            assertSameList(List.of("r-0"), Interop.read(reader, 1));
        }
    }

    @Test
    void consumerSeekRewindsTheSubscription() throws Exception {
        String topic = Interop.topic("consumer-seek");
        List<MessageId> ids = fill(topic, 6);
        try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe()) {
            assertSameList(numbered("r", 6), Interop.receiveAndAck(consumer, 6));
            consumer.seek(ids.get(1));
            assertSameList(List.of("r-2", "r-3", "r-4", "r-5"), Interop.receiveAndAck(consumer, 4));
            consumer.seek(0L);
            assertSameList(numbered("r", 6), Interop.receiveAndAck(consumer, 6));
            consumer.seek(System.currentTimeMillis() + 60_000);
            assertNothingMore(consumer);
            assertTrue(consumer.isConnected());
        }
    }
}
