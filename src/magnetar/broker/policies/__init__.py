"""Namespace and topic policies: one registry (:mod:`.registry`), value checks (:mod:`.validation`)
and the resolution of the policies in force for a topic (:mod:`.resolution`).

Names load on first use (PEP 562): importing one submodule does not load its siblings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magnetar.lazy_names import lazy_names

if TYPE_CHECKING:
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

#: public name -> the module of this package that defines it
_MODULES = {
    "TOPIC_POLICIES_PREFIX": "resolution",
    "BacklogQuota": "resolution",
    "MiB": "resolution",
    "TopicPolicies": "resolution",
    "effective": "resolution",
    "resolve": "resolution",
    "stored_topic_policies": "resolution",
    "topic_policies": "resolution",
}

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


__getattr__, __dir__ = lazy_names(__name__, _MODULES)
