package io.magnetar.interop;

import static io.magnetar.interop.Interop.assertNothingMore;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** deliverAfter / deliverAt on Shared subscriptions. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DelayedDeliveryTest {
    private PulsarClient client;

    @BeforeEach
    void open() throws Exception {
        client = Interop.sharedClient();
    }

    @Test
    void delayedMessagesArriveAfterTheirDelayAndOthersFirst() throws Exception {
        String topic = Interop.topic("delayed");
        try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                        .subscriptionType(SubscriptionType.Shared).subscribe();
                Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                        .create()) {
            long sentAt = System.currentTimeMillis();
            producer.newMessage().value("late-3s").deliverAfter(3, TimeUnit.SECONDS).send();
            producer.newMessage().value("late-at-2s").deliverAt(sentAt + 2000).send();
            producer.send("now");
            Message<String> first = consumer.receive(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
            assertNotNull(first);
            assertEquals("now", first.getValue());
            assertTrue(System.currentTimeMillis() - sentAt < 1800, "the undelayed message was held");
            consumer.acknowledge(first);
            Message<String> second = consumer.receive(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
            assertNotNull(second);
            assertEquals("late-at-2s", second.getValue());
            assertTrue(System.currentTimeMillis() - sentAt >= 2000, "deliverAt released early");
            consumer.acknowledge(second);
            Message<String> third = consumer.receive(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
            assertNotNull(third);
            assertEquals("late-3s", third.getValue());
            assertTrue(System.currentTimeMillis() - sentAt >= 3000, "deliverAfter released early");
            consumer.acknowledge(third);
            assertNothingMore(consumer);
        }
    }

    @Test
    void exclusiveSubscriptionsIgnoreTheDelay() throws Exception {
        String topic = Interop.topic("delayed-excl");
        try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                        .subscriptionType(SubscriptionType.Exclusive).subscribe();
                Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                        .create()) {
            long sentAt = System.currentTimeMillis();
            producer.newMessage().value("delayed").deliverAfter(5, TimeUnit.SECONDS).send();
            Message<String> message = consumer.receive(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
            assertNotNull(message);
            assertEquals("delayed", message.getValue());
            assertTrue(System.currentTimeMillis() - sentAt < 4000, "Exclusive subscription honoured the delay");
        }
    }
}
