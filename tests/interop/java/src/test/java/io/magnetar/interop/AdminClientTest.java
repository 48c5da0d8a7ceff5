package io.magnetar.interop;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.EnumSet;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import org.apache.pulsar.client.admin.PulsarAdmin;
import org.apache.pulsar.client.admin.PulsarAdminException;
import org.apache.pulsar.client.api.Consumer;
import org.apache.pulsar.client.api.Message;
import org.apache.pulsar.client.api.MessageId;
import org.apache.pulsar.client.api.Producer;
import org.apache.pulsar.client.api.Schema;
import org.apache.pulsar.common.policies.data.AuthAction;
import org.apache.pulsar.common.policies.data.BacklogQuota;
import org.apache.pulsar.common.policies.data.PartitionedTopicStats;
import org.apache.pulsar.common.policies.data.PersistentTopicInternalStats;
import org.apache.pulsar.common.policies.data.RetentionPolicies;
import org.apache.pulsar.common.policies.data.TenantInfo;
import org.apache.pulsar.common.policies.data.TopicStats;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The Java admin client (PulsarAdmin, org.apache.pulsar:pulsar-client-admin) against the broker: tenants,
 * namespaces, partitioned topics, policies, permissions, stats, peek and reset cursor. Each test makes its
 * own tenant and namespace and deletes them at the end.
 */
class AdminClientTest {
    private static PulsarAdmin admin;

    @BeforeAll
    static void connect() throws Exception {
        admin = PulsarAdmin.builder().serviceHttpUrl(Interop.httpUrl()).build();
    }

    @AfterAll
    static void close() {
        admin.close();
    }

    /** A new tenant on every cluster of the broker, with a namespace; returns "tenant/ns". */
    private static String newNamespace() throws PulsarAdminException {
        String tenant = "java-adm-" + UUID.randomUUID().toString().substring(0, 8);
        Set<String> clusters = new HashSet<>(admin.clusters().getClusters());
        admin.tenants().createTenant(tenant, TenantInfo.builder().allowedClusters(clusters).adminRoles(Set.of("r1")).build());
        String ns = tenant + "/ns";
        admin.namespaces().createNamespace(ns);
        return ns;
    }

    /** Its topics, then the namespace and its tenant (Pulsar refuses a forced namespace deletion by default). */
    private static void deleteNamespace(String ns) throws PulsarAdminException {
        for (String topic : admin.topics().getPartitionedTopicList(ns)) {
            admin.topics().deletePartitionedTopic(topic, true);
        }
        for (String topic : admin.topics().getList(ns)) {
            admin.topics().delete(topic, true);
        }
        admin.namespaces().deleteNamespace(ns);
        admin.tenants().deleteTenant(ns.split("/")[0]);
    }

    private static List<MessageId> produce(String topic, int count) throws Exception {
        List<MessageId> ids = new ArrayList<>();
        try (Producer<String> producer = Interop.sharedClient().newProducer(Schema.STRING).topic(topic)
                .enableBatching(false).create()) {
            for (int i = 0; i < count; i++) {
                ids.add(producer.newMessage().key("k" + i).value("m" + i).send());
            }
        }
        return ids;
    }

    @Test
    void tenantsAndNamespacesAreCreatedListedAndDeleted() throws Exception {
        String ns = newNamespace();
        String tenant = ns.split("/")[0];
        assertTrue(admin.tenants().getTenants().contains(tenant), "tenant listed");
        TenantInfo info = admin.tenants().getTenantInfo(tenant);
        assertEquals(Set.of("r1"), info.getAdminRoles());
        assertEquals(new HashSet<>(admin.clusters().getClusters()), info.getAllowedClusters());
        admin.tenants().updateTenant(tenant, TenantInfo.builder().allowedClusters(info.getAllowedClusters())
                .adminRoles(Set.of("r1", "r2")).build());
        assertEquals(Set.of("r1", "r2"), admin.tenants().getTenantInfo(tenant).getAdminRoles());
        assertEquals(List.of(ns), admin.namespaces().getNamespaces(tenant));
        // created without clusters: the namespace replicates to the local cluster only
        String local = admin.brokers().getRuntimeConfigurations().get("clusterName");
        assertEquals(Set.of(local), admin.namespaces().getPolicies(ns).replication_clusters);
        deleteNamespace(ns);
        assertFalse(admin.tenants().getTenants().contains(tenant), "tenant deleted");
    }

    @Test
    void namespacePoliciesRoundTrip() throws Exception {
        String ns = newNamespace();
        try {
            admin.namespaces().setRetention(ns, new RetentionPolicies(60, 100));
            assertEquals(new RetentionPolicies(60, 100), admin.namespaces().getRetention(ns));
            admin.namespaces().setNamespaceMessageTTL(ns, 3600);
            assertEquals(3600, admin.namespaces().getNamespaceMessageTTL(ns));
            admin.namespaces().setBacklogQuota(ns, BacklogQuota.builder().limitSize(10L << 20)
                    .retentionPolicy(BacklogQuota.RetentionPolicy.producer_request_hold).build());
            BacklogQuota quota = admin.namespaces().getBacklogQuotaMap(ns).get(BacklogQuota.BacklogQuotaType.destination_storage);
            assertEquals(10L << 20, quota.getLimitSize());
            assertEquals(BacklogQuota.RetentionPolicy.producer_request_hold, quota.getPolicy());
            admin.namespaces().setDeduplicationStatus(ns, true);
            assertEquals(true, admin.namespaces().getDeduplicationStatus(ns));
            admin.namespaces().setMaxProducersPerTopic(ns, 5);
            assertEquals(5, admin.namespaces().getMaxProducersPerTopic(ns));
            admin.namespaces().removeNamespaceMessageTTL(ns);
            assertEquals(null, admin.namespaces().getNamespaceMessageTTL(ns));
            admin.namespaces().removeRetention(ns);
            assertEquals(null, admin.namespaces().getRetention(ns));
        } finally {
            deleteNamespace(ns);
        }
    }

    @Test
    void permissionsAreGrantedAndRevoked() throws Exception {
        String ns = newNamespace();
        try {
            admin.namespaces().grantPermissionOnNamespace(ns, "role-a", EnumSet.of(AuthAction.produce, AuthAction.consume));
            assertEquals(Map.of("role-a", Set.of(AuthAction.produce, AuthAction.consume)), admin.namespaces().getPermissions(ns));
            String topic = "persistent://" + ns + "/perm";
            admin.topics().createNonPartitionedTopic(topic);
            admin.topics().grantPermission(topic, "role-b", Set.of(AuthAction.consume));
            Map<String, Set<AuthAction>> onTopic = admin.topics().getPermissions(topic);
            assertEquals(Set.of(AuthAction.consume), onTopic.get("role-b"));
            assertEquals(Set.of(AuthAction.produce, AuthAction.consume), onTopic.get("role-a"));
            admin.topics().revokePermissions(topic, "role-b");
            assertFalse(admin.topics().getPermissions(topic).containsKey("role-b"), "topic grant revoked");
            admin.namespaces().revokePermissionsOnNamespace(ns, "role-a");
            assertEquals(Map.of(), admin.namespaces().getPermissions(ns));
        } finally {
            deleteNamespace(ns);
        }
    }

    @Test
    void partitionedTopicsAreCreatedListedAndGrow() throws Exception {
        String ns = newNamespace();
        try {
            String topic = "persistent://" + ns + "/parts";
            admin.topics().createPartitionedTopic(topic, 3);
            assertEquals(3, admin.topics().getPartitionedTopicMetadata(topic).partitions);
            assertEquals(List.of(topic), admin.topics().getPartitionedTopicList(ns));
            admin.topics().updatePartitionedTopic(topic, 4);
            assertEquals(4, admin.topics().getPartitionedTopicMetadata(topic).partitions);
            produce(topic, 8);
            PartitionedTopicStats stats = admin.topics().getPartitionedStats(topic, true);
            assertEquals(4, stats.getMetadata().partitions);
            assertEquals(4, stats.getPartitions().size());
            assertEquals(8, stats.getMsgInCounter());
            admin.topics().deletePartitionedTopic(topic);
            assertEquals(List.of(), admin.topics().getPartitionedTopicList(ns));
        } finally {
            deleteNamespace(ns);
        }
    }

    @Test
    void statsCountWhatWasPublishedAndTheBacklog() throws Exception {
        String ns = newNamespace();
        try {
            String topic = "persistent://" + ns + "/stats";
            admin.topics().createNonPartitionedTopic(topic);
            admin.topics().createSubscription(topic, "sub", MessageId.earliest);
            assertEquals(List.of("sub"), admin.topics().getSubscriptions(topic));
            produce(topic, 10);
            TopicStats stats = admin.topics().getStats(topic);
            assertEquals(10, stats.getMsgInCounter());
            assertEquals(10, stats.getSubscriptions().get("sub").getMsgBacklog());
            PersistentTopicInternalStats internal = admin.topics().getInternalStats(topic);
            assertEquals(10, internal.entriesAddedCounter);
            assertTrue(internal.cursors.containsKey("sub"), "cursor of sub in internal stats");
            admin.topics().skipMessages(topic, "sub", 3);
            assertEquals(7, admin.topics().getStats(topic).getSubscriptions().get("sub").getMsgBacklog());
            admin.topics().skipAllMessages(topic, "sub");
            assertEquals(0, admin.topics().getStats(topic).getSubscriptions().get("sub").getMsgBacklog());
            admin.topics().deleteSubscription(topic, "sub");
            assertEquals(List.of(), admin.topics().getSubscriptions(topic));
        } finally {
            deleteNamespace(ns);
        }
    }

    @Test
    void peekShowsMessagesWithoutConsumingThem() throws Exception {
        String ns = newNamespace();
        try {
            String topic = "persistent://" + ns + "/peek";
            admin.topics().createNonPartitionedTopic(topic);
            admin.topics().createSubscription(topic, "sub", MessageId.earliest);
            produce(topic, 5);
            List<Message<byte[]>> peeked = admin.topics().peekMessages(topic, "sub", 3);
            List<String> values = new ArrayList<>();
            List<String> keys = new ArrayList<>();
            for (Message<byte[]> message : peeked) {
                values.add(new String(message.getData(), StandardCharsets.UTF_8));
                keys.add(message.getKey());
            }
            assertEquals(List.of("m0", "m1", "m2"), values);
            assertEquals(List.of("k0", "k1", "k2"), keys);
            assertEquals(5, admin.topics().getStats(topic).getSubscriptions().get("sub").getMsgBacklog());
        } finally {
            deleteNamespace(ns);
        }
    }

    @Test
    void resetCursorRewindsTheSubscription() throws Exception {
        String ns = newNamespace();
        try {
            String topic = "persistent://" + ns + "/reset";
            admin.topics().createNonPartitionedTopic(topic);
            admin.topics().createSubscription(topic, "sub", MessageId.earliest);
            List<MessageId> ids = produce(topic, 10);
            admin.topics().skipAllMessages(topic, "sub");
            assertEquals(0, admin.topics().getStats(topic).getSubscriptions().get("sub").getMsgBacklog());
            admin.topics().resetCursor(topic, "sub", ids.get(4));
            assertEquals(6, admin.topics().getStats(topic).getSubscriptions().get("sub").getMsgBacklog());
            try (Consumer<String> consumer = Interop.sharedClient().newConsumer(Schema.STRING).topic(topic)
                    .subscriptionName("sub").subscribe()) {
                assertEquals(List.of("m4", "m5"), Interop.receiveAndAck(consumer, 2));
            }
            admin.topics().resetCursor(topic, "sub", MessageId.earliest);
            assertEquals(10, admin.topics().getStats(topic).getSubscriptions().get("sub").getMsgBacklog());
        } finally {
            deleteNamespace(ns);
        }
    }
}
