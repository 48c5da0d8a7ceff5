"""Pulsar's schema compatibility strategies by name: what the broker's configuration, the namespace
and topic policies and the schema registry all read (the checks behind them are in
:mod:`magnetar.broker.schemas.compatibility`)."""

from __future__ import annotations

import enum
from typing import Any


class Strategy(enum.StrEnum):
    """Pulsar's SchemaCompatibilityStrategy (UNDEFINED means: use the next level's setting)."""

    UNDEFINED = "UNDEFINED"
    ALWAYS_INCOMPATIBLE = "ALWAYS_INCOMPATIBLE"
    ALWAYS_COMPATIBLE = "ALWAYS_COMPATIBLE"
    BACKWARD = "BACKWARD"
    FORWARD = "FORWARD"
    FULL = "FULL"
    BACKWARD_TRANSITIVE = "BACKWARD_TRANSITIVE"
    FORWARD_TRANSITIVE = "FORWARD_TRANSITIVE"
    FULL_TRANSITIVE = "FULL_TRANSITIVE"


#: Pulsar's older namespace policy ``schema_auto_update_compatibility_strategy``
_AUTO_UPDATE_NAMES = {
    "AUTOUPDATEDISABLED": Strategy.ALWAYS_INCOMPATIBLE,
    "ALWAYSCOMPATIBLE": Strategy.ALWAYS_COMPATIBLE,
    "BACKWARDTRANSITIVE": Strategy.BACKWARD_TRANSITIVE,
    "FORWARDTRANSITIVE": Strategy.FORWARD_TRANSITIVE,
    "FULLTRANSITIVE": Strategy.FULL_TRANSITIVE,
}


def parse_strategy(value: Any) -> Strategy | None:
    """A strategy from its name (any case; Pulsar's AutoUpdate names too); None for UNDEFINED,
    missing or unknown values."""
    if not isinstance(value, str) or not value.strip():
        return None
    name = value.strip().upper()
    try:
        strategy: Strategy | None = Strategy(name)
    except ValueError:
        strategy = _AUTO_UPDATE_NAMES.get(name.replace("_", ""))
    return None if strategy == Strategy.UNDEFINED else strategy
