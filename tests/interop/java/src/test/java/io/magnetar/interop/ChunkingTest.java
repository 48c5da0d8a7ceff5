package io.magnetar.interop;

import static io.magnetar.interop.Interop.assertNothingMore;
import static io.magnetar.interop.Interop.receive;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Reader;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Messages larger than the broker's max message size: refused, or chunked when chunking is on. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class ChunkingTest {
    /** The interop broker runs with max_message_size = 1 MiB (see tests/interop/conftest.py). */
    private static final int MAX_MESSAGE_SIZE = 1024 * 1024;

    private PulsarClient client;

    @BeforeEach
    void open() throws Exception {
        client = Interop.sharedClient();
    }

    private static byte[] randomBytes(int size, long seed) {
        byte[] data = new byte[size];
        new Random(seed).nextBytes(data);
        return data;
    }

    @Test
    void largeMessageIsChunkedAndReassembled() throws Exception {
        String topic = Interop.topic("chunk");
        byte[] big = randomBytes(MAX_MESSAGE_SIZE * 5 / 2, 1);
        byte[] small = randomBytes(1000, 2);
        try (Consumer<byte[]> consumer = client.newConsumer().topic(topic).subscriptionName("sub").subscribe();
                Producer<byte[]> producer = client.newProducer().topic(topic).enableBatching(false)
                        .enableChunking(true).create()) {
            MessageId bigId = producer.newMessage().key("big").value(big).send();
            producer.send(small);
            List<Message<byte[]>> got = receive(consumer, 2);
            assertArrayEquals(big, got.get(0).getData());
            assertEquals("big", got.get(0).getKey());
            assertEquals(bigId, got.get(0).getMessageId());
            assertArrayEquals(small, got.get(1).getData());
            consumer.acknowledge(got.get(0));
            consumer.acknowledge(got.get(1));
            assertNothingMore(consumer);
        }
        try (Reader<byte[]> reader = client.newReader().topic(topic).startMessageId(MessageId.earliest).create()) {
            assertArrayEquals(big, reader.readNext(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS).getData());
        }
    }

    @Test
    void messageOverTheLimitIsRefusedWithoutChunking() throws Exception {
        String topic = Interop.topic("toolarge");
        try (Producer<byte[]> producer = client.newProducer().topic(topic).enableBatching(false).create()) {
            assertThrows(PulsarClientException.InvalidMessageException.class,
                    () -> producer.send(randomBytes(MAX_MESSAGE_SIZE + 1024, 3)));
            producer.send(randomBytes(MAX_MESSAGE_SIZE - 10 * 1024, 4));
        }
    }
}
