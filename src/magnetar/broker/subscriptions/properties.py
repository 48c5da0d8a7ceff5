"""A subscription's properties: the ``subscription_properties`` a consumer gives when its SUBSCRIBE
creates the subscription, and what an admin sets later (pulsar-admin's update-subscription-properties).

Pulsar keeps them with the cursor; magnetar keeps them in the metadata store under
``subscription-properties/<topic>/<subscription>``, so they outlive restarts. The functions block
(store reads and writes): callers run them off the loop, or within an admin request's store
transaction.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from magnetar.storage import MetadataStore

PREFIX = "subscription-properties/"


def properties_key(topic: str, subscription: str) -> str:
    """The metadata key of a subscription's properties."""
    return f"{PREFIX}{topic}/{subscription}"


def load_properties(metadata: MetadataStore, topic: str, subscription: str) -> dict[str, str]:
    """The subscription's properties ({} when none were set)."""
    stored = metadata.get_kv(properties_key(topic, subscription))
    return json.loads(stored) if stored else {}


def store_properties(metadata: MetadataStore, topic: str, subscription: str, properties: dict[str, str]) -> None:
    """Replace the subscription's properties (none: forget them)."""
    key = properties_key(topic, subscription)
    if properties:
        metadata.put_kv(key, json.dumps(dict(sorted(properties.items()))).encode())
    else:
        metadata.delete_kv(key)
