package io.magnetar.interop;

import static io.magnetar.interop.Interop.assertNothingMore;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.HashingScheme;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageRoutingMode;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionType;
import org.apache.pulsar.client.api.TopicMessageId;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** Partitioned topics created over REST, key routing by JavaStringHash and Murmur3_32Hash. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class PartitionedTest {
    private static final int PARTITIONS = 5;

    private PulsarClient client;

    @BeforeEach
    void open() throws Exception {
        client = Interop.sharedClient();
    }

    /** The partition Pulsar's Java client picks for a key (SinglePartition/RoundRobin with a key). */
    static int expectedPartition(HashingScheme scheme, String key, int partitions) {
        int hash = scheme == HashingScheme.JavaStringHash
                ? key.hashCode() & Integer.MAX_VALUE
                : Murmur3.hash32(key);
        return hash % partitions;
    }

    private static int partitionOf(Message<?> message) {
        String topic = ((TopicMessageId) message.getMessageId()).getOwnerTopic();
        return Integer.parseInt(topic.substring(topic.lastIndexOf("-partition-") + "-partition-".length()));
    }

    @ParameterizedTest
    @EnumSource(HashingScheme.class)
    void keysGoToThePartitionOfTheJavaFormula(HashingScheme scheme) throws Exception {
        String topic = Interop.topic("partitioned-" + scheme.name().toLowerCase());
        Interop.createPartitioned(topic, PARTITIONS);
        String metadata = Interop.restOk("GET",
                "/admin/v2/persistent/public/default/" + Interop.localName(topic) + "/partitions", null);
        assertTrue(metadata.replace(" ", "").contains("\"partitions\":" + PARTITIONS), metadata);
        try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                        .subscriptionType(SubscriptionType.Shared).subscribe();
                Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).hashingScheme(scheme)
                        .messageRoutingMode(MessageRoutingMode.RoundRobinPartition).enableBatching(false).create()) {
            Map<String, Integer> expected = new HashMap<>();
            for (int i = 0; i < 60; i++) {
                String key = "key-" + i + (i % 7 == 0 ? "-ünï" : "");
                expected.put(key, expectedPartition(scheme, key, PARTITIONS));
                producer.newMessage().key(key).value(key).send();
            }
            Map<String, Integer> actual = new HashMap<>();
            for (Message<String> message : Interop.receive(consumer, 60)) {
                actual.put(message.getKey(), partitionOf(message));
                consumer.acknowledge(message);
            }
            assertEquals(expected, actual);
            assertEquals(PARTITIONS, new HashSet<>(actual.values()).size(), "keys used too few partitions");
            assertNothingMore(consumer);
        }
    }

    @Test
    void messagesWithoutKeysRoundRobinOverPartitionsInOrderPerPartition() throws Exception {
        String topic = Interop.topic("partitioned-rr");
        Interop.createPartitioned(topic, 3);
        try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                        .subscriptionType(SubscriptionType.Failover).subscribe();
                Producer<String> producer = client.newProducer(Schema.STRING).topic(topic)
                        .messageRoutingMode(MessageRoutingMode.RoundRobinPartition).enableBatching(false).create()) {
            for (int i = 0; i < 30; i++) {
                producer.send("rr-" + i);
            }
            Map<Integer, List<Integer>> perPartition = new HashMap<>();
            for (Message<String> message : Interop.receive(consumer, 30)) {
                int index = Integer.parseInt(message.getValue().substring(3));
                perPartition.computeIfAbsent(partitionOf(message), p -> new ArrayList<>()).add(index);
                consumer.acknowledge(message);
            }
            assertEquals(3, perPartition.size(), "partitions used: " + perPartition.keySet());
            for (List<Integer> indexes : perPartition.values()) {
                assertEquals(10, indexes.size(), "spread: " + perPartition);
                List<Integer> sorted = new ArrayList<>(indexes);
                sorted.sort(null);
                assertEquals(sorted, indexes, "order within a partition");
            }
        }
    }

    @Test
    void producerAndConsumerFollowAPartitionIncrease() throws Exception {
        String topic = Interop.topic("partitioned-grow");
        Interop.createPartitioned(topic, 2);
        try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(topic).subscriptionName("sub")
                        .subscriptionType(SubscriptionType.Shared).autoUpdatePartitionsInterval(1, TimeUnit.SECONDS)
                        .subscriptionInitialPosition(org.apache.pulsar.client.api.SubscriptionInitialPosition.Earliest)
                        .subscribe();
                Producer<String> producer = client.newProducer(Schema.STRING).topic(topic)
                        .hashingScheme(HashingScheme.Murmur3_32Hash).autoUpdatePartitionsInterval(1, TimeUnit.SECONDS)
                        .messageRoutingMode(MessageRoutingMode.RoundRobinPartition).enableBatching(false).create()) {
            Interop.restOk("POST", "/admin/v2/persistent/public/default/" + Interop.localName(topic) + "/partitions",
                    "4");
            Map<String, Integer> expected = new HashMap<>();
            for (int i = 0; i < 40; i++) {
                String key = "grow-" + i;
                expected.put(key, expectedPartition(HashingScheme.Murmur3_32Hash, key, 4));
            }
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(15);
            // the client's own view (an implementation class: the API has no getter for it)
            var partitionedProducer = (org.apache.pulsar.client.impl.PartitionedProducerImpl<String>) producer;
            var partitionedConsumer = (org.apache.pulsar.client.impl.MultiTopicsConsumerImpl<String>) consumer;
            while ((partitionedProducer.getNumOfPartitions() < 4 || partitionedConsumer.getPartitions().size() < 4)
                    && System.nanoTime() < deadline) {
                Thread.sleep(100);
            }
            assertEquals(4, partitionedProducer.getNumOfPartitions(), "producer partitions after the increase");
            assertEquals(4, partitionedConsumer.getPartitions().size(), "consumer partitions after the increase");
            for (String key : expected.keySet()) {
                producer.newMessage().key(key).value(key).send();
            }
            Map<String, Integer> actual = new HashMap<>();
            for (Message<String> message : Interop.receive(consumer, expected.size())) {
                actual.put(message.getKey(), partitionOf(message));
                consumer.acknowledge(message);
            }
            assertEquals(expected, actual);
            assertTrue(actual.containsValue(2) && actual.containsValue(3), "new partitions unused: " + actual);
        }
    }
}
