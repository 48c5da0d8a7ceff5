package io.magnetar.interop;

import static io.magnetar.interop.Interop.assertSameList;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.Schema;
import magnetar.interop.User;
import org.apache.pulsar.client.api.schema.SchemaDefinition;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Cross-language round trips. Topics are named xlang-RUN-WRITER-KIND; each writer (py, go, java) writes
 * five messages per kind. The pytest driver runs the Python writer and the Go writer before Maven, and
 * the Go and Python readers of the Java topics after it.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CrossLanguageTest {
    /** The Avro (and JSON) schema of the exchanged record, the same text in every language. */
    static final String USER_SCHEMA = "{\"type\":\"record\",\"name\":\"User\",\"namespace\":\"magnetar.interop\","
            + "\"fields\":[{\"name\":\"age\",\"type\":\"int\"},{\"name\":\"name\",\"type\":\"string\"}]}";
    static final int COUNT = 5;

    private PulsarClient client;

    @BeforeEach
    void open() throws Exception {
        client = Interop.sharedClient();
    }

    static String topic(String writer, String kind) {
        return "persistent://public/default/xlang-" + Interop.runId() + "-" + writer + "-" + kind;
    }

    static Schema<User> avro() {
        return Schema.AVRO(SchemaDefinition.<User>builder().withPojo(User.class).withAlwaysAllowNull(false).build());
    }

    static Schema<User> json() {
        return Schema.JSON(SchemaDefinition.<User>builder().withPojo(User.class).withAlwaysAllowNull(false).build());
    }

    @Test
    void theJavaRecordHasTheSharedSchema() {
        assertEquals(USER_SCHEMA, avro().getSchemaInfo().getSchemaDefinition());
        assertEquals(USER_SCHEMA, json().getSchemaInfo().getSchemaDefinition());
    }

    private <T> List<Message<T>> readAll(Schema<T> schema, String topic) throws Exception {
        try (Reader<T> reader = client.newReader(schema).topic(topic).startMessageId(MessageId.earliest).create()) {
            List<Message<T>> out = new ArrayList<>();
            for (int i = 0; i < COUNT; i++) {
                Message<T> message = reader.readNext(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
                if (message == null) {
                    throw new AssertionError("message " + i + " of " + topic + " missing; got " + Interop.values(out));
                }
                out.add(message);
            }
            Interop.assertNothingMore(reader);
            return out;
        }
    }

    private void readFrom(String writer) throws Exception {
        List<Message<String>> strings = readAll(Schema.STRING, topic(writer, "string"));
        for (int i = 0; i < COUNT; i++) {
            Message<String> message = strings.get(i);
            assertEquals(writer + "-" + i + "-ünï", message.getValue());
            assertEquals("k" + i, message.getKey());
            assertEquals(writer, message.getProperty("writer"));
        }
        List<User> expected = new ArrayList<>();
        for (int i = 0; i < COUNT; i++) {
            expected.add(new User(writer + "-" + i, i));
        }
        assertSameList(expected, Interop.values(readAll(avro(), topic(writer, "avro"))));
        assertSameList(expected, Interop.values(readAll(json(), topic(writer, "json"))));
    }

    @Test
    void javaWritesForGoAndPython() throws Exception {
        try (Producer<String> strings = client.newProducer(Schema.STRING).topic(topic("java", "string")).create();
                Producer<User> avro = client.newProducer(avro()).topic(topic("java", "avro")).create();
                Producer<User> json = client.newProducer(json()).topic(topic("java", "json")).create()) {
            for (int i = 0; i < COUNT; i++) {
                strings.newMessage().key("k" + i).property("writer", "java").value("java-" + i + "-ünï").send();
                avro.send(new User("java-" + i, i));
                json.send(new User("java-" + i, i));
            }
        }
        readFrom("java");
    }

    @Test
    void javaReadsWhatPythonWrote() throws Exception {
        readFrom("py");
    }

    @Test
    void javaReadsWhatGoWrote() throws Exception {
        readFrom("go");
    }
}
