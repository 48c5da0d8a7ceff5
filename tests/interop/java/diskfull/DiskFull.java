// Drives a magnetar broker whose data directory is on a small file system with the official Java
// client, through a full disk: tests/e2e/test_disk_faults.py runs it (java -cp <the interop suite's
// dependencies> DiskFull.java URL DIR TOPIC) and checks the JSON it prints. It fills the disk (a filler
// file leaving 3 MiB), sends 40 kB messages until a send fails, times that failure and the next send's,
// receives and acknowledges everything stored, removes the filler, and times how long the same producer
// takes to publish again.
import java.io.File;
import java.io.FileOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.PulsarClient;
import org.apache.pulsar.client.api.PulsarClientException;

public class DiskFull {
    static byte[] payload(int i) {
        byte[] body = new byte[40000];
        byte[] head = String.format("full-%05d:", i).getBytes(StandardCharsets.US_ASCII);
        System.arraycopy(head, 0, body, 0, head.length);
        return body;
    }

    static File fill(File dir, long leave) throws IOException {
        File filler = new File(dir, "filler");
        long remaining = dir.getUsableSpace() - leave;
        byte[] chunk = new byte[1 << 20];
        try (FileOutputStream out = new FileOutputStream(filler)) {
            while (remaining > 0) {
                int n = (int) Math.min(chunk.length, remaining);
                out.write(chunk, 0, n);
                remaining -= n;
            }
            out.getFD().sync();
        }
        return filler;
    }

    /** The send's failure (null when it was stored) and how long it took, in seconds, in out[0]. */
    static Exception send(Producer<byte[]> producer, int i, double[] took) {
        long started = System.nanoTime();
        try {
            producer.send(payload(i));
            return null;
        } catch (PulsarClientException e) {
            return e;
        } finally {
            took[0] = (System.nanoTime() - started) / 1e9;
        }
    }

    static String quote(String text) {
        return "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"").replace("\n", " ") + "\"";
    }

    public static void main(String[] args) throws Exception {
        String url = args[0];
        File dir = new File(args[1]);
        String topic = args[2];
        try (PulsarClient client = PulsarClient.builder().serviceUrl(url).build();
             Consumer<byte[]> consumer = client.newConsumer().topic(topic).subscriptionName("live").subscribe();
             Producer<byte[]> producer = client.newProducer().topic(topic).enableBatching(false)
                     .sendTimeout(10, TimeUnit.SECONDS).create()) {
            File filler = fill(dir, 3L << 20);
            List<Integer> confirmed = new ArrayList<>();
            double[] took = new double[1];
            Exception failure = null;
            double failSeconds = 0;
            for (int i = 0; i < 400; i++) {
                failure = send(producer, i, took);
                if (failure != null) {
                    failSeconds = took[0];
                    break;
                }
                confirmed.add(i);
            }
            Exception next = send(producer, 1000, took);
            double nextSeconds = took[0];
            List<Integer> received = new ArrayList<>();
            while (true) {
                // up to 3 s for each confirmed message, then 0.5 s of silence: nothing unconfirmed follows
                int waitMillis = received.size() < confirmed.size() ? 3000 : 500;
                Message<byte[]> msg = consumer.receive(waitMillis, TimeUnit.MILLISECONDS);
                if (msg == null) {
                    break;
                }
                received.add(Integer.parseInt(new String(msg.getData(), 5, 5, StandardCharsets.US_ASCII)));
                consumer.acknowledge(msg);
            }
            if (!filler.delete()) {
                throw new IOException("cannot delete " + filler);
            }
            long freed = System.nanoTime();
            while (send(producer, 9999, took) != null) {
                if (System.nanoTime() - freed > 60_000_000_000L) {
                    throw new IllegalStateException("publishing did not resume within a minute of space being freed");
                }
            }
            double resumed = (System.nanoTime() - freed) / 1e9;
            System.out.println("{\"confirmed\": " + confirmed + ", \"received\": " + received
                    + ", \"fail_error\": " + quote(failure == null ? "" : failure.getClass().getSimpleName() + ": " + failure.getMessage())
                    + ", \"fail_blocked\": " + (failure instanceof PulsarClientException.ProducerBlockedQuotaExceededException)
                    + ", \"fail_seconds\": " + failSeconds
                    + ", \"next_error\": " + quote(next == null ? "" : next.getClass().getSimpleName() + ": " + next.getMessage())
                    + ", \"next_seconds\": " + nextSeconds
                    + ", \"resumed_seconds\": " + resumed + "}");
        }
    }
}
