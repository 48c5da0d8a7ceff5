package io.magnetar.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

import java.io.IOException;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;
import org.apache.pulsar.client.api.Reader;

/** What every interop test needs: the broker's URLs, clients, unique topics and REST calls. */
public final class Interop {
    /** How long a message that must arrive may take. */
    public static final int RECEIVE_SECONDS = 10;
    /** How long to wait when checking that nothing (more) arrives. */
    public static final int QUIET_MILLIS = 700;

    private static final HttpClient HTTP = HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    private Interop() {}

    /** The broker's pulsar:// URL (MAGNETAR_SERVICE_URL). */
    public static String serviceUrl() {
        return env("MAGNETAR_SERVICE_URL", "pulsar://127.0.0.1:6650");
    }

    /** The broker's http:// URL (MAGNETAR_HTTP_URL). */
    public static String httpUrl() {
        return env("MAGNETAR_HTTP_URL", "http://127.0.0.1:8080");
    }

    /** The id of this interop run, shared with the Go and Python sides (MAGNETAR_INTEROP_RUN). */
    public static String runId() {
        return env("MAGNETAR_INTEROP_RUN", "local");
    }

    private static String env(String name, String fallback) {
        String value = System.getenv(name);
        return value == null || value.isEmpty() ? fallback : value;
    }

    private static PulsarClient shared;

    /**
     * The client every test of this JVM shares (one connection; closing a client costs about 2 s, which
     * per test would double the suite's time). Tests close their producers, consumers and readers.
     */
    public static synchronized PulsarClient sharedClient() throws PulsarClientException {
        if (shared == null) {
            shared = client();
        }
        return shared;
    }

    /** A new client of the broker under test with bounded operation times. */
    public static PulsarClient client() throws PulsarClientException {
        return PulsarClient.builder()
                .serviceUrl(serviceUrl())
                .operationTimeout(15, TimeUnit.SECONDS)
                .connectionTimeout(5, TimeUnit.SECONDS)
                .build();
    }

    /** A persistent topic name in public/default that no other test uses. */
    public static String topic(String prefix) {
        return "persistent://public/default/java-" + prefix + "-" + UUID.randomUUID().toString().substring(0, 12);
    }

    /** The local name of a full topic name (what the REST paths take). */
    public static String localName(String topic) {
        return topic.substring(topic.lastIndexOf('/') + 1);
    }

    /** Send an HTTP request to the broker's admin API and return the response. */
    public static HttpResponse<String> rest(String method, String path, String jsonBody)
            throws IOException, InterruptedException {
        HttpRequest.Builder builder = HttpRequest.newBuilder(URI.create(httpUrl() + path))
                .timeout(Duration.ofSeconds(15))
                .header("Content-Type", "application/json");
        HttpRequest.BodyPublisher body = jsonBody == null
                ? HttpRequest.BodyPublishers.noBody()
                : HttpRequest.BodyPublishers.ofString(jsonBody);
        return HTTP.send(builder.method(method, body).build(), HttpResponse.BodyHandlers.ofString());
    }

    /** REST call that must answer 2xx. */
    public static String restOk(String method, String path, String jsonBody) throws IOException, InterruptedException {
        HttpResponse<String> response = rest(method, path, jsonBody);
        if (response.statusCode() / 100 != 2) {
            throw new AssertionError(method + " " + path + " answered " + response.statusCode() + ": " + response.body());
        }
        return response.body();
    }

    /** Create a partitioned topic over REST (PUT .../partitions with body N). */
    public static void createPartitioned(String topic, int partitions) throws IOException, InterruptedException {
        restOk("PUT", "/admin/v2/persistent/public/default/" + localName(topic) + "/partitions", Integer.toString(partitions));
    }

    /** Receive exactly {@code count} messages, each within RECEIVE_SECONDS. */
    public static <T> List<Message<T>> receive(Consumer<T> consumer, int count) throws PulsarClientException {
        List<Message<T>> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Message<T> message = consumer.receive(RECEIVE_SECONDS, TimeUnit.SECONDS);
            assertNotNull(message, "message " + (i + 1) + " of " + count + " did not arrive; got " + values(out));
            out.add(message);
        }
        return out;
    }

    /** Receive and acknowledge exactly {@code count} messages and return their values. */
    public static <T> List<T> receiveAndAck(Consumer<T> consumer, int count) throws PulsarClientException {
        List<Message<T>> messages = receive(consumer, count);
        for (Message<T> message : messages) {
            consumer.acknowledge(message);
        }
        return values(messages);
    }

    /** Read exactly {@code count} messages from a reader. */
    public static <T> List<T> read(Reader<T> reader, int count) throws PulsarClientException {
        List<T> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            Message<T> message = reader.readNext(RECEIVE_SECONDS, TimeUnit.SECONDS);
            assertNotNull(message, "message " + (i + 1) + " of " + count + " did not arrive; got " + out);
            out.add(message.getValue());
        }
        return out;
    }

    /** Assert that nothing more arrives on the consumer for QUIET_MILLIS. */
    public static <T> void assertNothingMore(Consumer<T> consumer) throws PulsarClientException {
        Message<T> message = consumer.receive(QUIET_MILLIS, TimeUnit.MILLISECONDS);
        assertNull(message, () -> "unexpected message " + message.getValue() + " id=" + message.getMessageId());
    }

    /** Assert that nothing more can be read from the reader for QUIET_MILLIS. */
    public static <T> void assertNothingMore(Reader<T> reader) throws PulsarClientException {
        Message<T> message = reader.readNext(QUIET_MILLIS, TimeUnit.MILLISECONDS);
        assertNull(message, () -> "unexpected message " + message.getValue() + " id=" + message.getMessageId());
    }

    /** The values of some messages, in order. */
    public static <T> List<T> values(List<Message<T>> messages) {
        List<T> out = new ArrayList<>();
        for (Message<T> message : messages) {
            out.add(message.getValue());
        }
        return out;
    }

    /** "prefix-0" ... "prefix-(n-1)". */
    public static List<String> numbered(String prefix, int count) {
        List<String> out = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            out.add(prefix + "-" + i);
        }
        return out;
    }

    /** Assert two lists are equal, with both shown on failure. */
    public static <T> void assertSameList(List<T> expected, List<T> actual) {
        assertEquals(expected, actual, "expected " + expected + " but got " + actual);
    }
}
