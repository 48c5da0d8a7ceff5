package io.magnetar.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.client.api.TableView;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** TableView: the latest value per key, live updates and deletions by null value. */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TableViewTest {
    private PulsarClient client;

    @BeforeEach
    void open() throws Exception {
        client = Interop.sharedClient();
    }

    private static Map<String, String> snapshot(TableView<String> table) {
        Map<String, String> out = new HashMap<>();
        table.forEach(out::put);
        return out;
    }

    private static void awaitEquals(Map<String, String> expected, TableView<String> table) throws Exception {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(Interop.RECEIVE_SECONDS);
        while (!expected.equals(snapshot(table)) && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        assertEquals(expected, snapshot(table));
    }

    @Test
    void tableViewHoldsTheLatestValuePerKey() throws Exception {
        String topic = Interop.topic("tableview");
        try (Producer<String> producer = client.newProducer(Schema.STRING).topic(topic).enableBatching(false)
                .create()) {
            producer.newMessage().key("a").value("a1").send();
            producer.newMessage().key("b").value("b1").send();
            producer.newMessage().key("a").value("a2").send();
            producer.newMessage().key("c").value("c1").send();
            try (TableView<String> table = client.newTableView(Schema.STRING).topic(topic).create()) {
                assertEquals(Map.of("a", "a2", "b", "b1", "c", "c1"), snapshot(table));
                Map<String, String> seen = new ConcurrentHashMap<>();
                table.forEachAndListen(seen::put);
                producer.newMessage().key("b").value("b2").send();
                producer.newMessage().key("d").value("d1").send();
                producer.newMessage().key("c").value(null).send();
                awaitEquals(Map.of("a", "a2", "b", "b2", "d", "d1"), table);
                assertEquals("b2", seen.get("b"));
                assertEquals("d1", seen.get("d"));
                assertEquals(3, table.size());
            }
        }
    }
}
