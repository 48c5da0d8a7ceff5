package io.magnetar.interop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.common.schema.KeyValue;
import org.apache.pulsar.common.schema.KeyValueEncodingType;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * What magnetar.client (the project's Python client) and the Java client exchange. KeyValue SEPARATED:
 * topics xlang-RUN-WRITER-kvsep, WRITER "mpy" (magnetar.client, written by the pytest driver before
 * Maven: tests/interop/magnetar_side.py) or "java" (read by magnetar.client after Maven). The key is
 * bytes that are not UTF-8, so only a base64 key survives; the last message has a null key.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class MagnetarClientXlangTest {
    static final int COUNT = 5;

    private PulsarClient client;

    @BeforeEach
    void open() throws Exception {
        client = Interop.sharedClient();
    }

    static Schema<KeyValue<byte[], String>> keyValueSchema() {
        return Schema.KeyValue(Schema.BYTES, Schema.STRING, KeyValueEncodingType.SEPARATED);
    }

    static byte[] key(int i) {
        return new byte[] {(byte) 0xff, 0, (byte) i};
    }

    static String topic(String writer) {
        return "persistent://public/default/xlang-" + Interop.runId() + "-" + writer + "-kvsep";
    }

    @Test
    void javaWritesKeyValueSeparatedForMagnetar() throws Exception {
        try (Producer<KeyValue<byte[], String>> producer =
                client.newProducer(keyValueSchema()).topic(topic("java")).create()) {
            for (int i = 0; i < COUNT; i++) {
                producer.send(new KeyValue<>(key(i), "java-" + i));
            }
            producer.send(new KeyValue<>(null, "java-null-key"));
        }
    }

    @Test
    void javaReadsKeyValueSeparatedFromMagnetar() throws Exception {
        try (Reader<KeyValue<byte[], String>> reader = client.newReader(keyValueSchema()).topic(topic("mpy"))
                .startMessageId(MessageId.earliest).create()) {
            for (int i = 0; i < COUNT; i++) {
                Message<KeyValue<byte[], String>> message = reader.readNext(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
                assertTrue(message.hasBase64EncodedKey(), "the key is not marked base64");
                assertArrayEquals(key(i), message.getKeyBytes());
                assertArrayEquals(key(i), message.getValue().getKey());
                assertEquals("mpy-" + i, message.getValue().getValue());
                assertEquals("mpy-" + i, new String(message.getData(), java.nio.charset.StandardCharsets.UTF_8));
            }
            Message<KeyValue<byte[], String>> last = reader.readNext(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
            assertFalse(last.hasKey());
            assertNull(last.getValue().getKey());
            assertEquals("mpy-null-key", last.getValue().getValue());
            Interop.assertNothingMore(reader);
        }
    }
}
