package io.magnetar.interop;

import static io.magnetar.interop.Interop.assertNothingMore;
import static io.magnetar.interop.Interop.assertSameList;
import static io.magnetar.interop.Interop.numbered;
import static io.magnetar.interop.Interop.receive;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Produce and consume with keys, properties, event times and raw bytes. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class RoundTripTest {
    private PulsarClient client;

    @BeforeEach
    void open() throws Exception {
        client = Interop.sharedClient();
    }

    @Test
    void keysPropertiesAndEventTimeRoundTrip() throws Exception {
        String topic = Interop.topic("roundtrip");
        try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic)
                        .subscriptionName("sub").subscribe();
                Producer<String> producer = client.newProducer(Schema.STRING).topic(topic)
                        .enableBatching(false).create()) {
            List<String> sent = numbered("m", 20);
            for (int i = 0; i < sent.size(); i++) {
                producer.newMessage().key("key-" + (i % 3)).value(sent.get(i))
                        .property("index", Integer.toString(i)).property("lang", "java")
                        .eventTime(1_000_000L + i).send();
            }
            List<Message<String>> got = receive(consumer, 20);
            assertSameList(sent, Interop.values(got));
            for (int i = 0; i < got.size(); i++) {
                Message<String> message = got.get(i);
                assertEquals("key-" + (i % 3), message.getKey());
                assertEquals(Map.of("index", Integer.toString(i), "lang", "java"), message.getProperties());
                assertEquals(1_000_000L + i, message.getEventTime());
                assertEquals(producer.getProducerName(), message.getProducerName());
                assertEquals(i, message.getSequenceId());
                assertEquals(topic, message.getTopicName());
                assertTrue(message.getPublishTime() > 0);
                consumer.acknowledge(message);
            }
            assertNothingMore(consumer);
        }
    }

    @Test
    void bytesAndEmptyPayloadsArriveUnchanged() throws Exception {
        String topic = Interop.topic("bytes");
        byte[] binary = new byte[256];
        for (int i = 0; i < binary.length; i++) {
            binary[i] = (byte) i;
        }
        try (Consumer<byte[]> consumer = client.newConsumer().topic(topic).subscriptionName("sub").subscribe();
                Producer<byte[]> producer = client.newProducer().topic(topic).create()) {
            producer.send(binary);
            producer.send(new byte[0]);
            producer.send("héllo wörld ✓".getBytes(StandardCharsets.UTF_8));
            List<Message<byte[]>> got = receive(consumer, 3);
            assertArrayEquals(binary, got.get(0).getData());
            assertEquals(0, got.get(1).getData().length);
            assertEquals("héllo wörld ✓", new String(got.get(2).getData(), StandardCharsets.UTF_8));
            consumer.acknowledgeCumulative(got.get(2));
        }
    }

    @Test
    void acknowledgedMessagesAreNotRedeliveredToANewConsumer() throws Exception {
        String topic = Interop.topic("acked");
        try (Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                .create()) {
            Consumer<String> first = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                    .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
            for (String value : numbered("a", 10)) {
                producer.send(value);
            }
            List<Message<String>> got = receive(first, 10);
            first.acknowledgeCumulative(got.get(5));
            first.close();
            try (Consumer<String> second = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                    .subscribe()) {
                assertSameList(List.of("a-6", "a-7", "a-8", "a-9"), Interop.receiveAndAck(second, 4));
                assertNothingMore(second);
            }
        }
    }
}
