package io.magnetar.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.client.api.transaction.Transaction;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Transactions with the Java client: commit, abort, timeout, conflict, consume-transform-produce. */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class TransactionsEndToEndTest {
    private static PulsarClient client;

    @BeforeAll
    static void open() throws Exception {
        client = PulsarClient.builder().serviceUrl(Interop.serviceUrl())
                .operationTimeout(15, TimeUnit.SECONDS).enableTransaction(true).build();
    }

    @AfterAll
    static void close() throws Exception {
        client.close();
    }

    private static Transaction txn(long timeoutSeconds) throws Exception {
        return client.newTransaction().withTransactionTimeout(timeoutSeconds, TimeUnit.SECONDS).build()
                .get(20, TimeUnit.SECONDS);
    }

    private static Producer<String> producer(String topic) throws Exception {
        return client.newProducer(Schema.STRING).topic(topic).sendTimeout(0, TimeUnit.SECONDS)
                .enableBatching(false).create();
    }

    private static Consumer<String> consumer(String topic, String sub, SubscriptionType type) throws Exception {
        return client.newConsumer(Schema.STRING).topic(topic).subscriptionName(sub).subscriptionType(type)
                .subscribe();
    }

    @Test
    void commitMakesMessagesVisibleAndAbortHidesThem() throws Exception {
        String topic = Interop.topic("txn-commit-abort");
        try (Consumer<String> consumer = consumer(topic, "s", SubscriptionType.Exclusive);
                Producer<String> producer = producer(topic)) {
            Transaction committed = txn(60);
            for (String v : Interop.numbered("c", 3)) {
                producer.newMessage(committed).value(v).send();
            }
            Interop.assertNothingMore(consumer);
            committed.commit().get(20, TimeUnit.SECONDS);
            Interop.assertSameList(Interop.numbered("c", 3), Interop.receiveAndAck(consumer, 3));
            Transaction aborted = txn(60);
            for (String v : Interop.numbered("a", 3)) {
                producer.newMessage(aborted).value(v).send();
            }
            aborted.abort().get(20, TimeUnit.SECONDS);
            producer.send("plain");
            Interop.assertSameList(List.of("plain"), Interop.receiveAndAck(consumer, 1));
            Interop.assertNothingMore(consumer);
        }
    }

    @Test
    void aTimedOutTransactionIsAborted() throws Exception {
        String topic = Interop.topic("txn-timeout");
        try (Consumer<String> consumer = consumer(topic, "s", SubscriptionType.Exclusive);
                Producer<String> producer = producer(topic)) {
            Transaction txn = txn(2);
            producer.newMessage(txn).value("never").send();
            producer.send("plain");
            Interop.assertSameList(List.of("plain"), Interop.receiveAndAck(consumer, 1));
            assertThrows(ExecutionException.class, () -> txn.commit().get(20, TimeUnit.SECONDS));
            Interop.assertNothingMore(consumer);
        }
    }

    @Test
    void aSecondTransactionAckingTheSameMessageConflicts() throws Exception {
        String topic = Interop.topic("txn-conflict");
        try (Consumer<String> consumer = consumer(topic, "s", SubscriptionType.Shared);
                Producer<String> producer = producer(topic)) {
            producer.send("m");
            Message<String> msg = Interop.receive(consumer, 1).get(0);
            Transaction first = txn(60);
            Transaction second = txn(60);
            consumer.acknowledgeAsync(msg.getMessageId(), first).get(20, TimeUnit.SECONDS);
            ExecutionException refused = assertThrows(ExecutionException.class,
                    () -> consumer.acknowledgeAsync(msg.getMessageId(), second).get(20, TimeUnit.SECONDS));
            assertTrue(String.valueOf(refused.getCause()).contains("Conflict"), String.valueOf(refused.getCause()));
            first.commit().get(20, TimeUnit.SECONDS);
        }
        try (Consumer<String> again = consumer(topic, "s", SubscriptionType.Shared)) {
            Interop.assertNothingMore(again);
        }
    }

    @Test
    void consumeTransformProduceAcrossPartitions() throws Exception {
        String input = Interop.topic("ctp-in");
        String output = Interop.topic("ctp-out");
        Interop.createPartitioned(input, 3);
        Interop.createPartitioned(output, 2);
        List<String> inputs = Interop.numbered("in", 20);
        try (Consumer<String> in = consumer(input, "ctp", SubscriptionType.Shared);
                Consumer<String> check = consumer(output, "check", SubscriptionType.Exclusive);
                Producer<String> source = client.newProducer(Schema.STRING).topic(input).enableBatching(false).create();
                Producer<String> sink = producer(output)) {
            for (String v : inputs) {
                source.newMessage().key(v).value(v).send();
            }
            List<String> done = new ArrayList<>();
            boolean abortedOnce = false;
            while (done.size() < inputs.size()) {
                Transaction txn = txn(60);
                List<Message<String>> batch = Interop.receive(in, 5);
                for (Message<String> m : batch) {
                    sink.newMessage(txn).key(m.getValue()).value("out-" + m.getValue()).send();
                    in.acknowledgeAsync(m.getMessageId(), txn).get(20, TimeUnit.SECONDS);
                }
                if (!abortedOnce) {
                    abortedOnce = true;
                    txn.abort().get(20, TimeUnit.SECONDS); // the broker delivers the batch again
                    continue;
                }
                txn.commit().get(20, TimeUnit.SECONDS);
                for (Message<String> m : batch) {
                    done.add(m.getValue());
                }
            }
            List<String> expected = new ArrayList<>(inputs);
            Collections.sort(expected);
            Collections.sort(done);
            assertEquals(expected, done);
            List<String> outputs = Interop.receiveAndAck(check, inputs.size());
            Collections.sort(outputs);
            List<String> wanted = new ArrayList<>();
            for (String v : expected) {
                wanted.add("out-" + v);
            }
            assertEquals(wanted, outputs);
            Interop.assertNothingMore(check);
            Interop.assertNothingMore(in);
        }
    }
}
