package io.magnetar.interop;

import static io.magnetar.interop.Interop.assertSameList;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.google.protobuf.Timestamp;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import magnetar.interop.User;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.SubscriptionInitialPosition;
import org.apache.pulsar.client.api.schema.GenericRecord;
import org.apache.pulsar.common.schema.KeyValue;
import org.apache.pulsar.common.schema.KeyValueEncodingType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/** KeyValue schemas (INLINE and SEPARATED encodings) and PROTOBUF_NATIVE. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class SchemaKindsTest {
    private PulsarClient client;

    @BeforeEach
    void open() throws Exception {
        client = Interop.sharedClient();
    }

    private String registeredType(String topic) throws Exception {
        return Interop.restOk("GET", "/admin/v2/schemas/public/default/" + Interop.localName(topic) + "/schema", null);
    }

    @ParameterizedTest
    @EnumSource(KeyValueEncodingType.class)
    void keyValueOfPrimitivesRoundTrips(KeyValueEncodingType encoding) throws Exception {
        String topic = Interop.topic("kv-" + encoding.name().toLowerCase());
        Schema<KeyValue<String, Integer>> schema = Schema.KeyValue(Schema.STRING, Schema.INT32, encoding);
        List<KeyValue<String, Integer>> sent = new ArrayList<>();
        try (Consumer<KeyValue<String, Integer>> consumer = client.newConsumer(schema).topic(topic)
                        .subscriptionName("sub").subscribe();
                Producer<KeyValue<String, Integer>> producer = client.newProducer(schema).topic(topic).create()) {
            for (int i = 0; i < 5; i++) {
                KeyValue<String, Integer> kv = new KeyValue<>("key-" + i, i * 100);
                sent.add(kv);
                producer.send(kv);
            }
            List<Message<KeyValue<String, Integer>>> got = Interop.receive(consumer, 5);
            assertSameList(sent, Interop.values(got));
            if (encoding == KeyValueEncodingType.SEPARATED) {
                for (Message<KeyValue<String, Integer>> message : got) {
                    assertTrue(message.hasBase64EncodedKey(), "SEPARATED key not carried as the message key");
                    assertEquals(message.getValue().getKey(), new String(message.getKeyBytes()));
                }
            }
        }
        String info = registeredType(topic);
        assertTrue(info.contains("KEY_VALUE"), info);
        assertTrue(info.contains(encoding.name()), info);
    }

    @Test
    void keyValueOfRecordsSeparatedRoundTrips() throws Exception {
        String topic = Interop.topic("kv-records");
        Schema<KeyValue<User, User>> schema = Schema.KeyValue(Schema.AVRO(User.class), Schema.JSON(User.class),
                KeyValueEncodingType.SEPARATED);
        try (Consumer<KeyValue<User, User>> consumer = client.newConsumer(schema).topic(topic).subscriptionName("sub")
                        .subscribe();
                Producer<KeyValue<User, User>> producer = client.newProducer(schema).topic(topic).create()) {
            producer.send(new KeyValue<>(new User("key", 1), new User("value", 2)));
            Message<KeyValue<User, User>> message = consumer.receive(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
            assertNotNull(message);
            assertEquals(new User("key", 1), message.getValue().getKey());
            assertEquals(new User("value", 2), message.getValue().getValue());
        }
    }

    @Test
    void protobufNativeRoundTrips() throws Exception {
        String topic = Interop.topic("protobuf");
        Schema<Timestamp> schema = Schema.PROTOBUF_NATIVE(Timestamp.class);
        List<Timestamp> sent = List.of(Timestamp.newBuilder().setSeconds(1).setNanos(2).build(),
                Timestamp.newBuilder().setSeconds(1_700_000_000L).build());
        try (Consumer<Timestamp> consumer = client.newConsumer(schema).topic(topic).subscriptionName("sub")
                        .subscribe();
                Producer<Timestamp> producer = client.newProducer(schema).topic(topic).create()) {
            for (Timestamp value : sent) {
                producer.send(value);
            }
            assertSameList(sent, Interop.receiveAndAck(consumer, 2));
        }
        try (Consumer<GenericRecord> generic = client.newConsumer(Schema.AUTO_CONSUME()).topic(topic)
                .subscriptionName("generic").subscriptionInitialPosition(SubscriptionInitialPosition.Earliest)
                .subscribe()) {
            Message<GenericRecord> first = generic.receive(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
            assertNotNull(first);
            assertEquals(1L, first.getValue().getField("seconds"));
            assertEquals(2, first.getValue().getField("nanos"));
        }
        assertTrue(registeredType(topic).contains("PROTOBUF_NATIVE"), registeredType(topic));
    }
}
