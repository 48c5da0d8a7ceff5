package io.magnetar.interop;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.CompressionType;
import org.apache.pulsar.client.api.CryptoKeyReader;
import org.apache.pulsar.client.api.EncryptionKeyInfo;
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
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * What magnetar.client (the project's Python client) and the Java client exchange. KeyValue SEPARATED:
 * topics xlang-RUN-WRITER-kvsep, WRITER "mpy" (magnetar.client, written by the pytest driver before
 * Maven: tests/interop/magnetar_side.py) or "java" (read by magnetar.client after Maven). The key is
 * bytes that are not UTF-8, so only a base64 key survives; the last message has a null key.
 *
 * <p>End-to-end encryption: topics xlang-RUN-WRITER-enc-KEY-MODE, KEY rsa or ec (ECIES), MODE batched (LZ4)
 * or single (ZLIB), five payloads each, with the key pairs in MAGNETAR_INTEROP_KEYS (NAME.pub.pem,
 * NAME.key.pem, written by the pytest driver).
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
        return topic(writer, "kvsep");
    }

    static String topic(String writer, String kind) {
        return "persistent://public/default/xlang-" + Interop.runId() + "-" + writer + "-" + kind;
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
                assertEquals("mpy-" + i, new String(message.getData(), StandardCharsets.UTF_8));
            }
            Message<KeyValue<byte[], String>> last = reader.readNext(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
            assertFalse(last.hasKey());
            assertNull(last.getValue().getKey());
            assertEquals("mpy-null-key", last.getValue().getValue());
            Interop.assertNothingMore(reader);
        }
    }

    /** Reads NAME.pub.pem / NAME.key.pem from MAGNETAR_INTEROP_KEYS for the key name NAME. */
    static final class FileKeyReader implements CryptoKeyReader {
        private EncryptionKeyInfo read(String file) {
            try {
                return new EncryptionKeyInfo(Files.readAllBytes(Path.of(System.getenv("MAGNETAR_INTEROP_KEYS"), file)),
                        Map.of());
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public EncryptionKeyInfo getPublicKey(String keyName, Map<String, String> metadata) {
            return read(keyName + ".pub.pem");
        }

        @Override
        public EncryptionKeyInfo getPrivateKey(String keyName, Map<String, String> metadata) {
            return read(keyName + ".key.pem");
        }
    }

    static List<String> payloads(String writer, String kind) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < COUNT; i++) {
            out.add(("secret " + writer + " " + kind + " " + i + " ").repeat(i + 1));
        }
        return out;
    }

    @ParameterizedTest
    @CsvSource({"rsa,batched", "rsa,single", "ec,batched", "ec,single"})
    void javaEncryptsForMagnetar(String key, String mode) throws Exception {
        String kind = "enc-" + key + "-" + mode;
        boolean batched = mode.equals("batched");
        try (Producer<byte[]> producer = client.newProducer().topic(topic("java", kind)).addEncryptionKey(key)
                .cryptoKeyReader(new FileKeyReader()).enableBatching(batched)
                .batchingMaxPublishDelay(1, TimeUnit.SECONDS)
                .compressionType(batched ? CompressionType.LZ4 : CompressionType.ZLIB).create()) {
            List<CompletableFuture<MessageId>> sent = new ArrayList<>();
            for (String payload : payloads("java", kind)) {
                sent.add(producer.sendAsync(payload.getBytes(StandardCharsets.UTF_8)));
            }
            producer.flush();
            CompletableFuture.allOf(sent.toArray(new CompletableFuture[0])).get(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
        }
    }

    @ParameterizedTest
    @CsvSource({"rsa,batched", "rsa,single", "ec,batched", "ec,single"})
    void javaDecryptsWhatMagnetarEncrypted(String key, String mode) throws Exception {
        String kind = "enc-" + key + "-" + mode;
        try (Reader<byte[]> reader = client.newReader().topic(topic("mpy", kind)).startMessageId(MessageId.earliest)
                .cryptoKeyReader(new FileKeyReader()).create()) {
            List<String> got = new ArrayList<>();
            for (int i = 0; i < COUNT; i++) {
                Message<byte[]> message = reader.readNext(Interop.RECEIVE_SECONDS, TimeUnit.SECONDS);
                got.add(new String(message.getData(), StandardCharsets.UTF_8));
                assertTrue(message.getEncryptionCtx().isPresent(), "not encrypted");
                assertEquals(List.of(key), new ArrayList<>(message.getEncryptionCtx().get().getKeys().keySet()));
            }
            assertEquals(payloads("mpy", kind), got);
            Interop.assertNothingMore(reader);
        }
    }
}
