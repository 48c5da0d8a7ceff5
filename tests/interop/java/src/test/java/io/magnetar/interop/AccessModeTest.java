package io.magnetar.interop;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.ProducerAccessMode;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.Schema;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Producer access modes: Exclusive, WaitForExclusive and ExclusiveWithFencing. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class AccessModeTest {
    private PulsarClient client;

    @BeforeEach
    void open() throws Exception {
        client = Interop.sharedClient();
    }

    private Producer<String> producer(String topic, ProducerAccessMode mode) throws Exception {
        return client.newProducer(Schema.STRING).topic(topic).accessMode(mode).enableBatching(false).create();
    }

    @Test
    void exclusiveProducerRefusesOthers() throws Exception {
        String topic = Interop.topic("excl-producer");
        try (Producer<String> owner = producer(topic, ProducerAccessMode.Exclusive)) {
            assertThrows(PulsarClientException.ProducerFencedException.class,
                    () -> producer(topic, ProducerAccessMode.Exclusive));
            assertThrows(PulsarClientException.ProducerBusyException.class,
                    () -> producer(topic, ProducerAccessMode.Shared));
            owner.send("still mine");
        }
        try (Producer<String> shared = producer(topic, ProducerAccessMode.Shared)) {
            assertThrows(PulsarClientException.ProducerFencedException.class,
                    () -> producer(topic, ProducerAccessMode.Exclusive));
        }
    }

    @Test
    void waitForExclusiveGetsTheTopicWhenTheOwnerLeaves() throws Exception {
        String topic = Interop.topic("wait-producer");
        Producer<String> owner = producer(topic, ProducerAccessMode.Exclusive);
        CompletableFuture<Producer<String>> waiting = client.newProducer(Schema.STRING).topic(topic)
                .accessMode(ProducerAccessMode.WaitForExclusive).enableBatching(false).createAsync();
        Thread.sleep(1000);
        assertFalse(waiting.isDone(), "WaitForExclusive producer was created while the topic had an owner");
        owner.send("from-owner");
        owner.close();
        try (Producer<String> next = waiting.get(10, TimeUnit.SECONDS)) {
            next.send("from-waiter");
        }
        try (Reader<String> reader = client.newReader(Schema.STRING).topic(topic).startMessageId(MessageId.earliest)
                .create()) {
            Interop.assertSameList(List.of("from-owner", "from-waiter"), Interop.read(reader, 2));
        }
    }

    @Test
    void exclusiveWithFencingTakesOverAndFencesTheOldProducer() throws Exception {
        String topic = Interop.topic("fence-producer");
        Producer<String> old = producer(topic, ProducerAccessMode.Exclusive);
        old.send("before");
        try (Producer<String> fencer = producer(topic, ProducerAccessMode.ExclusiveWithFencing)) {
            fencer.send("fencer");
            ExecutionException failure = assertThrows(ExecutionException.class,
                    () -> old.sendAsync("after-fence").get(20, TimeUnit.SECONDS));
            assertTrue(failure.getCause() instanceof PulsarClientException, failure.toString());
            assertThrows(PulsarClientException.class, () -> producer(topic, ProducerAccessMode.Exclusive));
        } finally {
            old.closeAsync();
        }
        try (Reader<String> reader = client.newReader(Schema.STRING).topic(topic).startMessageId(MessageId.earliest)
                .create()) {
            Interop.assertSameList(List.of("before", "fencer"), Interop.read(reader, 2));
            Interop.assertNothingMore(reader);
        }
    }
}
