package io.magnetar.interop;

import static io.magnetar.interop.Interop.assertNothingMore;
import static io.magnetar.interop.Interop.assertSameList;
import static io.magnetar.interop.Interop.numbered;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.DeadLetterPolicy;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.SubscriptionType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Negative acks, ack timeouts, the dead letter topic and the retry letter topic. */
@Timeout(value = 90, unit = TimeUnit.SECONDS)
class RedeliveryTest {
    private PulsarClient client;

    @BeforeEach
    void open() throws Exception {
        client = Interop.sharedClient();
    }

    private Producer<String> producer(String topic) throws Exception {
        return client.newProducer(Schema.STRING).topic(topic).enableBatching(false).create();
    }

    @Test
    void negativeAckRedeliversWithACount() throws Exception {
        String topic = Interop.topic("nack");
        try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                        .subscriptionType(SubscriptionType.Shared)
                        .negativeAckRedeliveryDelay(500, TimeUnit.MILLISECONDS).subscribe();
                Producer<String> producer = producer(topic)) {
            for (String value : numbered("n", 3)) {
                producer.send(value);
            }
            List<Message<String>> first = Interop.receive(consumer, 3);
            consumer.acknowledge(first.get(0));
            consumer.acknowledge(first.get(2));
            long nackedAt = System.nanoTime();
            consumer.negativeAcknowledge(first.get(1));
            Message<String> again = consumer.receive(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
            assertNotNull(again, "the negatively acknowledged message never came back");
            assertEquals("n-1", again.getValue());
            assertEquals(1, again.getRedeliveryCount());
            assertTrue(System.nanoTime() - nackedAt >= TimeUnit.MILLISECONDS.toNanos(400), "redelivered too early");
            consumer.acknowledge(again);
            assertNothingMore(consumer);
        }
    }

    @Test
    void ackTimeoutRedeliversUnackedMessages() throws Exception {
        String topic = Interop.topic("acktimeout");
        try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                        .subscriptionType(SubscriptionType.Shared).ackTimeout(1, TimeUnit.SECONDS)
                        .ackTimeoutTickTime(100, TimeUnit.MILLISECONDS).subscribe();
                Producer<String> producer = producer(topic)) {
            for (String value : numbered("t", 4)) {
                producer.send(value);
            }
            List<Message<String>> first = Interop.receive(consumer, 4);
            consumer.acknowledge(first.get(0));
            consumer.acknowledge(first.get(3));
            List<Message<String>> again = Interop.receive(consumer, 2);
            List<String> values = new ArrayList<>(Interop.values(again));
            values.sort(null);
            assertSameList(List.of("t-1", "t-2"), values);
            for (Message<String> message : again) {
                assertEquals(1, message.getRedeliveryCount(), "redelivery count of " + message.getValue());
                consumer.acknowledge(message);
            }
            assertNothingMore(consumer);
        }
    }

    @Test
    void deadLetterTopicGetsMessagesAfterMaxRedeliveries() throws Exception {
        String topic = Interop.topic("dlq");
        String dlq = topic + "-my-DLQ";
        try (Consumer<String> dlqConsumer = client.newConsumer(Schema.STRING).topic(dlq).subscriptionName("dlq-sub")
                        .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
                Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                        .subscriptionType(SubscriptionType.Shared)
                        .negativeAckRedeliveryDelay(100, TimeUnit.MILLISECONDS)
                        .deadLetterPolicy(DeadLetterPolicy.builder().maxRedeliverCount(2).deadLetterTopic(dlq).build())
                        .subscribe();
                Producer<String> producer = producer(topic)) {
            producer.newMessage().key("k").property("p", "v").value("poison").send();
            producer.send("good");
            int poisonDeliveries = 0;
            boolean goodSeen = false;
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(20);
            while (System.nanoTime() < deadline && (poisonDeliveries < 3 || !goodSeen)) {
                Message<String> message = consumer.receive(1, TimeUnit.SECONDS);
                if (message == null) {
                    continue;
                }
                if (message.getValue().equals("good")) {
                    goodSeen = true;
                    consumer.acknowledge(message);
                } else {
                    assertEquals(poisonDeliveries, message.getRedeliveryCount());
                    poisonDeliveries++;
                    consumer.negativeAcknowledge(message);
                }
            }
            assertTrue(goodSeen);
            assertEquals(3, poisonDeliveries, "deliveries of the poison message before the DLQ");
            Message<String> dead = dlqConsumer.receive(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
            assertNotNull(dead, "nothing on the dead letter topic");
            assertEquals("poison", dead.getValue());
            assertEquals("k", dead.getKey());
            assertEquals("v", dead.getProperty("p"));
            assertEquals(topic, dead.getProperty("REAL_TOPIC"));
            assertNotNull(dead.getProperty("ORIGIN_MESSAGE_ID"));
            dlqConsumer.acknowledge(dead);
            assertNothingMore(consumer);
        }
    }

    @Test
    void retryLetterTopicRedeliversLaterThenDeadLetters() throws Exception {
        String topic = Interop.topic("retry");
        String retry = topic + "-sub-RETRY";
        String dlq = topic + "-sub-DLQ";
        try (Consumer<String> dlqConsumer = client.newConsumer(Schema.STRING).topic(dlq).subscriptionName("dlq-sub")
                        .subscriptionInitialPosition(SubscriptionInitialPosition.Earliest).subscribe();
                Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                        .subscriptionType(SubscriptionType.Shared).enableRetry(true)
                        .deadLetterPolicy(DeadLetterPolicy.builder().maxRedeliverCount(2)
                                .retryLetterTopic(retry).deadLetterTopic(dlq).build())
                        .subscribe();
                Producer<String> producer = producer(topic)) {
            producer.send("again");
            List<Long> reconsumeTimes = new ArrayList<>();
            for (int attempt = 0; attempt < 3; attempt++) {
                Message<String> message = consumer.receive(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
                assertNotNull(message, "delivery " + (attempt + 1) + " did not arrive");
                assertEquals("again", message.getValue());
                String times = message.getProperty("RECONSUMETIMES");
                reconsumeTimes.add(times == null ? 0L : Long.parseLong(times));
                if (attempt > 0) {
                    assertEquals(retry, message.getTopicName());
                    assertEquals(topic, message.getProperty("REAL_TOPIC"));
                }
                consumer.reconsumeLater(message, 1, TimeUnit.SECONDS);
            }
            assertSameList(List.of(0L, 1L, 2L), reconsumeTimes);
            Message<String> dead = dlqConsumer.receive(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
            assertNotNull(dead, "nothing on the dead letter topic after the retries");
            assertEquals("again", dead.getValue());
            assertNothingMore(consumer);
        }
    }
}
