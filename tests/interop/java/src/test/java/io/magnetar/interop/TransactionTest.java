package io.magnetar.interop;

import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.TimeUnit;
import org.apache.pulsar.client.api.PulsarClient;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * A broker with transactions disabled (MAGNETAR_NO_TXN_SERVICE_URL: a magnetar started with
 * transactionCoordinatorEnabled=false; else the broker under test): as on such a Pulsar broker, the
 * coordinator-assign topic has no partitions, and the client refuses to open a transaction.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TransactionTest {
    private static String messages(Throwable error) {
        StringBuilder out = new StringBuilder();
        for (Throwable t = error; t != null; t = t.getCause()) {
            out.append(t.getClass().getSimpleName()).append(": ").append(t.getMessage()).append(" / ");
        }
        return out.toString();
    }

    @Test
    void transactionsAreRefusedWithoutACoordinator() throws Exception {
        Throwable refusal = null;
        String noTxn = System.getenv("MAGNETAR_NO_TXN_SERVICE_URL");
        String url = noTxn == null || noTxn.isEmpty() ? Interop.serviceUrl() : noTxn;
        try (PulsarClient client = PulsarClient.builder().serviceUrl(url)
                .operationTimeout(10, TimeUnit.SECONDS).enableTransaction(true).build()) {
            client.newTransaction().withTransactionTimeout(1, TimeUnit.MINUTES).build().get(20, TimeUnit.SECONDS);
        } catch (Exception error) {
            refusal = error;
        }
        assertNotNull(refusal, "a transaction was opened on a broker without a transaction coordinator");
        String text = messages(refusal);
        assertTrue(text.contains("TransactionCoordinatorClientException: The broker doesn't enable the transaction coordinator"), text);
    }
}
