package io.magnetar.interop;

import static io.magnetar.interop.Interop.assertSameList;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.TimeUnit;
import magnetar.interop.User;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.schema.GenericRecord;
import org.apache.pulsar.common.schema.SchemaType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Avro, JSON and primitive schemas: registration, round trips, AUTO_CONSUME and refusals. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SchemaTest {
    /** A record incompatible with User (a required field of another type). */
    public static class Other {
        public long id;
        public double weight;
    }

    private PulsarClient client;

    @BeforeEach
    void open() throws Exception {
        client = Interop.sharedClient();
    }

    private void roundTrip(Schema<User> schema, String prefix) throws Exception {
        String topic = Interop.topic(prefix);
        List<User> users = List.of(new User("ada", 36), new User("linus", 21), new User("grace", 85));
        try (Consumer<User> consumer = client.newConsumer(schema).topic(topic).subscriptionName("sub").subscribe();
                Producer<User> producer = client.newProducer(schema).topic(topic).create()) {
            for (User user : users) {
                producer.send(user);
            }
            assertSameList(users, Interop.receiveAndAck(consumer, users.size()));
        }
        try (Consumer<GenericRecord> generic = client.newConsumer(Schema.AUTO_CONSUME()).topic(topic)
                .subscriptionName("generic").subscriptionInitialPosition(
                        org.apache.pulsar.client.api.SubscriptionInitialPosition.Earliest).subscribe()) {
            Message<GenericRecord> first = generic.receive(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
            assertNotNull(first);
            assertEquals("ada", first.getValue().getField("name").toString());
            assertEquals(36, first.getValue().getField("age"));
            assertEquals(schema.getSchemaInfo().getType(), first.getValue().getSchemaType());
        }
        String info = Interop.restOk("GET", "/admin/v2/schemas/public/default/" + Interop.localName(topic) + "/schema",
                null);
        assertTrue(info.contains(schema.getSchemaInfo().getType().name()), info);
    }

    @Test
    void avroRecordsRoundTrip() throws Exception {
        roundTrip(Schema.AVRO(User.class), "avro");
    }

    @Test
    void jsonRecordsRoundTrip() throws Exception {
        roundTrip(Schema.JSON(User.class), "json");
    }

    @Test
    void primitiveSchemasRoundTrip() throws Exception {
        String topic = Interop.topic("int64");
        try (Consumer<Long> consumer = client.newConsumer(Schema.INT64).topic(topic).subscriptionName("sub")
                        .subscribe();
                Producer<Long> producer = client.newProducer(Schema.INT64).topic(topic).create()) {
            producer.send(Long.MIN_VALUE);
            producer.send(42L);
            assertSameList(List.of(Long.MIN_VALUE, 42L), Interop.receiveAndAck(consumer, 2));
        }
        String strings = Interop.topic("string");
        try (Consumer<String> consumer = client.newConsumer(Schema.STRING).topic(strings).subscriptionName("sub")
                        .subscribe();
                Producer<String> producer = client.newProducer(Schema.STRING).topic(strings).create()) {
            producer.send("ünïcødé ✓");
            assertSameList(List.of("ünïcødé ✓"), Interop.receiveAndAck(consumer, 1));
        }
    }

    @Test
    void incompatibleSchemaIsRefused() throws Exception {
        String topic = Interop.topic("incompatible");
        try (Producer<User> producer = client.newProducer(Schema.AVRO(User.class)).topic(topic).create()) {
            producer.send(new User("first", 1));
            assertThrows(PulsarClientException.IncompatibleSchemaException.class,
                    () -> client.newProducer(Schema.AVRO(Other.class)).topic(topic).create());
            assertThrows(PulsarClientException.IncompatibleSchemaException.class,
                    () -> client.newConsumer(Schema.INT64).topic(topic).subscriptionName("wrong").subscribe());
        }
        assertEquals(SchemaType.AVRO, Schema.AVRO(User.class).getSchemaInfo().getType());
    }
}
