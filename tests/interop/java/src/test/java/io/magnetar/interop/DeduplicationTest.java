package io.magnetar.interop;

import static io.magnetar.interop.Interop.assertNothingMore;
import static io.magnetar.interop.Interop.assertSameList;
import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.Reader;
import org.apache.pulsar.client.api.Schema;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Broker-side deduplication across a producer restart (same producer name, sequence ids). */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class DeduplicationTest {
    private PulsarClient client;

    @BeforeEach
    void open() throws Exception {
        client = Interop.sharedClient();
    }

    private Producer<String> producer(String topic, String name) throws Exception {
        return client.newProducer(Schema.STRING).topic(topic).producerName(name).enableBatching(false)
                .sendTimeout(0, TimeUnit.SECONDS).create();
    }

    @Test
    void restartedProducerResumesAndDuplicatesAreDropped() throws Exception {
        String topic = Interop.topic("dedup");
        String path = "/admin/v2/persistent/public/default/" + Interop.localName(topic);
        Interop.restOk("PUT", path, null);
        Interop.restOk("POST", path + "/deduplicationEnabled", "true");
        String name = "dedup-" + Interop.localName(topic);
        try (Producer<String> first = producer(topic, name)) {
            assertEquals(-1, first.getLastSequenceId());
            for (long seq = 0; seq < 5; seq++) {
                first.newMessage().sequenceId(seq).value("v-" + seq).send();
            }
            first.newMessage().sequenceId(2).value("dup-2").send();
            assertEquals(4, first.getLastSequenceId());
        }
        try (Producer<String> second = producer(topic, name)) {
            assertEquals(4, second.getLastSequenceId(), "the restarted producer did not learn its last sequence id");
            second.newMessage().sequenceId(3).value("dup-3").send();
            second.newMessage().sequenceId(4).value("dup-4").send();
            second.newMessage().sequenceId(5).value("v-5").send();
            second.newMessage().sequenceId(6).value("v-6").send();
            assertEquals(6, second.getLastSequenceId());
        }
        try (Reader<String> reader = client.newReader(Schema.STRING).topic(topic).startMessageId(MessageId.earliest)
                .create()) {
            assertSameList(List.of("v-0", "v-1", "v-2", "v-3", "v-4", "v-5", "v-6"), Interop.read(reader, 7));
            assertNothingMore(reader);
        }
    }
}
