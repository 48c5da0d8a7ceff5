"""The names geo-replication reserves, as Pulsar spells them (``replicatorPrefix`` = ``pulsar.repl``)."""

from __future__ import annotations

#: Pulsar's replicatorPrefix: subscriptions may not start with it; producers that do are replicators
REPLICATOR_PREFIX = "pulsar.repl"
#: the reason Pulsar gives a SUBSCRIBE of a reserved name (a NamingException: ServerError.ProducerBusy)
RESERVED_SUBSCRIPTION = "Subscription with reserved subscription name attempted"
#: replicate_to holding only this keeps a message in its cluster (the clients' disableReplication())
LOCAL_ONLY = "__local__"


def is_replicator(name: str) -> bool:
    """Whether a producer or cursor name is a replicator's."""
    return name.startswith(REPLICATOR_PREFIX)


def cursor_name(remote: str) -> str:
    """The durable cursor of the replicator to ``remote`` on a source topic."""
    return f"{REPLICATOR_PREFIX}.{remote}"


def producer_name(local: str, remote: str) -> str:
    """The name of the producer a replicator from ``local`` opens on ``remote``."""
    return f"{REPLICATOR_PREFIX}.{local}-->{remote}"


def source_cluster(name: str) -> str | None:
    """The cluster a replicator producer comes from (``pulsar.repl.<source>--><dest>``); None for
    any other producer name (as Pulsar's Producer.parseRemoteClusterName)."""
    if not is_replicator(name):
        return None
    rest = name[len(REPLICATOR_PREFIX):].lstrip(".")
    return rest.split("-->", 1)[0] or None
