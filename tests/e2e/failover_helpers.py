"""Topic names for Failover tests on non-partitioned topics.

On a non-partitioned topic Pulsar makes active the consumer the topic's name hash lands on in
the consumers' hash ring (see ``dispatchers/single_active.py``); a test that needs a given
consumer active picks a topic name for which it is.
"""

from __future__ import annotations

import uuid

from magnetar.broker.subscriptions.dispatchers.single_active import ring_index


def failover_topic(consumer_names: list[str], active: str, prefix: str = "persistent://public/default/e2e") -> str:
    """A new topic name on which ``active`` is the active one of ``consumer_names`` (equal priority)."""
    ordered = sorted(consumer_names)
    while True:
        topic = f"{prefix}-{uuid.uuid4().hex}"
        if ordered[ring_index(topic, ordered)] == active:
            return topic
