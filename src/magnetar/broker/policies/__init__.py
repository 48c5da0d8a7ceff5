"""Namespace and topic policies: one registry (:mod:`.registry`), value checks (:mod:`.validation`)
and the resolution of the policies in force for a topic (:mod:`.resolution`).

Names load on first use (PEP 562): importing one submodule does not load its siblings.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

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


def __getattr__(name: str) -> Any:
    """Import the module defining ``name`` on first use, and keep the name here."""
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The package's names, loaded or not."""
    return sorted({*globals(), *_MODULES})
