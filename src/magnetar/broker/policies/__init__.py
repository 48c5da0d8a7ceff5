"""Namespace and topic policies: one registry (:mod:`.registry`), value checks (:mod:`.validation`)
and the resolution of the policies in force for a topic (:mod:`.resolution`).
"""

from __future__ import annotations

from magnetar.broker.policies.resolution import (
    TOPIC_POLICIES_PREFIX,
    BacklogQuota,
    MiB,
    TopicPolicies,
    effective,
    resolve,
    stored_topic_policies,
    topic_policies,
)

__all__ = [
    "TOPIC_POLICIES_PREFIX",
    "BacklogQuota",
    "MiB",
    "TopicPolicies",
    "effective",
    "resolve",
    "stored_topic_policies",
    "topic_policies",
]
