"""The ``replication`` part of topic stats, by cluster: the inbound replicator producers of other
clusters and this topic's outbound replicators (Pulsar's ReplicatorStats fields)."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from magnetar.broker.replication.link import RemoteLink
    from magnetar.broker.topics.base import Topic
    from magnetar.broker.topics.producer import Producer


class ProducerRates(Protocol):
    """The rates of producers (the stats tracker)."""

    def producer_numbers(self, topic: Topic, producer: Producer) -> dict[str, float]:
        """Counters and rates of one producer."""
        ...


class HasReplicators(Protocol):
    """What the stats read of the service: the replicators of a topic."""

    def replicators_of(self, topic_name: str) -> dict[str, RemoteLink]:
        """A topic's replicators by remote cluster."""
        ...


def _empty() -> dict[str, Any]:
    return {
        "msgRateIn": 0.0, "msgThroughputIn": 0.0, "msgRateOut": 0.0, "msgThroughputOut": 0.0,
        "msgRateExpired": 0.0, "msgInCount": 0, "bytesInCount": 0, "msgOutCount": 0, "bytesOutCount": 0,
        "msgOutCounter": 0, "bytesOutCounter": 0, "replicationBacklog": 0, "connected": False,
        "replicationDelayInSeconds": 0, "inboundConnection": None, "inboundConnectedSince": None,
        "outboundConnection": None, "outboundConnectedSince": None,
    }


def outbound_stats(replicator: RemoteLink) -> dict[str, Any]:
    """The outbound fields of one replicator."""
    rate, throughput = replicator.rates()
    producer = replicator.producer
    since = replicator.connected_since
    return {
        "msgRateOut": rate, "msgThroughputOut": throughput,
        "msgOutCount": replicator.msg_out_counter, "bytesOutCount": replicator.bytes_out_counter,
        "msgOutCounter": replicator.msg_out_counter, "bytesOutCounter": replicator.bytes_out_counter,
        "replicationBacklog": replicator.backlog(), "connected": replicator.connected,
        "replicationDelayInSeconds": int(replicator.delay_seconds()),
        "outboundConnection": producer.name if producer is not None and replicator.connected else None,
        "outboundConnectedSince": _iso(since) if since is not None else None,
        **replicator.extra_stats(),
    }


def replication_stats(topic: Topic, service: HasReplicators, rates: ProducerRates) -> dict[str, dict[str, Any]]:
    """Topic stats' ``replication``: cluster -> its ReplicatorStats."""
    out: dict[str, dict[str, Any]] = {}
    for producer in topic.producers.values():
        cluster = producer.remote_cluster
        if cluster is None:
            continue
        numbers = rates.producer_numbers(topic, producer)
        entry = out.setdefault(cluster, _empty())
        entry["msgRateIn"] += numbers["msgRateIn"]
        entry["msgThroughputIn"] += numbers["msgThroughputIn"]
        entry["msgInCount"] += int(numbers["msgInCounter"])
        entry["bytesInCount"] += int(numbers["bytesInCounter"])
        entry["inboundConnection"] = producer.connection.peer
        entry["inboundConnectedSince"] = _iso(producer.connected_since)
    for cluster, replicator in service.replicators_of(topic.name).items():
        out.setdefault(cluster, _empty()).update(outbound_stats(replicator))
    return out


def _iso(seconds: float) -> str:
    ms = int(round(seconds * 1000))
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(ms // 1000)) + f".{ms % 1000:03d}Z"
