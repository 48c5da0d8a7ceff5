"""Pulsar's dynamic configuration: the broker settings an admin changes at run time
(``pulsar-admin brokers update-dynamic-config`` / ``delete-dynamic-config``).

The overrides are kept in the metadata store under :data:`KEY` (Pulsar keeps them in ZooKeeper under
``/admin/configuration``) and applied at start-up, over what the configuration file says. A key is
dynamic here when magnetar reads its setting where it is used (or re-resolves the topics' policies
from it), so a change takes effect at once; the others are refused with Pulsar's 412. A change is
checked on the loop, stored by a job of the metadata thread and applied on the loop once stored
(a failed commit changes nothing); changes are made one at a time, in the order they came.
"""

from __future__ import annotations

import asyncio
import json
import weakref
from functools import partial
from typing import TYPE_CHECKING, Any

from magnetar.broker.errors import PreconditionFailedError
from magnetar.broker.pulsar_conf import PULSAR_BROKER_KEYS, PulsarConfError

if TYPE_CHECKING:
    from magnetar.broker.service import BrokerService
    from magnetar.storage import MetadataStore

KEY = "dynamic-configuration"
#: the rate limits' broker defaults (policies/rate_values.py): defaults of the topics' policies, so
#: dynamic as soon as the broker knows their keys
_RATE_KEYS = (
    "dispatchThrottlingRatePerTopicInMsg", "dispatchThrottlingRatePerTopicInByte",
    "dispatchThrottlingRatePerSubscriptionInMsg", "dispatchThrottlingRatePerSubscriptionInByte",
    "dispatchThrottlingRatePerReplicatorInMsg", "dispatchThrottlingRatePerReplicatorInByte",
    "maxPublishRatePerTopicInMessages", "maxPublishRatePerTopicInBytes",
)
#: the dynamic keys: each read where it is used, or a default of the topics' policies (re-resolved)
DYNAMIC_KEYS: tuple[str, ...] = (
    "allowAutoTopicCreation",
    "dispatcherMaxReadBatchSize",
    "isAllowAutoUpdateSchemaEnabled",
    "maxConsumersPerSubscription",
    "maxConsumersPerTopic",
    "maxProducersPerTopic",
    "maxTopicsPerNamespace",
    "subscriptionExpirationTimeMinutes",
    *(key for key in _RATE_KEYS if key in PULSAR_BROKER_KEYS),
)


def stored_overrides(metadata: MetadataStore) -> dict[str, str]:
    """The overrides kept in the metadata store (blocking: a store read)."""
    raw = metadata.get_kv(KEY)
    return json.loads(raw) if raw else {}


class DynamicConfiguration:
    """The dynamic settings of one broker: which keys, their overrides, applying them."""

    def __init__(self, service: BrokerService) -> None:
        self.service = service
        #: the value each dynamic setting had before any override (what a delete goes back to)
        self._initial: dict[str, Any] = {k: getattr(service.config, PULSAR_BROKER_KEYS[k][0]) for k in DYNAMIC_KEYS}
        self.overrides: dict[str, str] = {}
        #: one change at a time: each stores the overrides as the one before left them
        self._changing = asyncio.Lock()

    @staticmethod
    def names() -> list[str]:
        """The keys that may be changed at run time."""
        return list(DYNAMIC_KEYS)

    def apply_stored(self, overrides: dict[str, str]) -> None:
        """Apply the overrides read from the store at start-up (one no longer valid is skipped)."""
        for key, value in overrides.items():
            if key in DYNAMIC_KEYS:
                try:
                    self._apply(key, value)
                except PreconditionFailedError:
                    continue
                self.overrides[key] = value
        if self.overrides:
            self.service.policies_changed(None)

    async def update(self, key: str, value: str) -> None:
        """Set and store one override; PreconditionFailedError for a key that is not dynamic or a bad
        value (nothing stored then). Applied once stored."""
        if key not in DYNAMIC_KEYS:
            raise PreconditionFailedError("Can't update non-dynamic configuration")
        converted = self._convert(key, value)
        async with self._changing:
            await self._store({**self.overrides, key: value})
            setattr(self.service.config, PULSAR_BROKER_KEYS[key][0], converted)
            self.overrides[key] = value
        self.service.policies_changed(None)

    async def delete(self, key: str) -> None:
        """Forget one override: the setting goes back to what the broker started with (once stored)."""
        if key not in DYNAMIC_KEYS:
            raise PreconditionFailedError("Can't delete non-dynamic configuration")
        async with self._changing:
            if key not in self.overrides:
                return
            await self._store({k: v for k, v in self.overrides.items() if k != key})
            del self.overrides[key]
            setattr(self.service.config, PULSAR_BROKER_KEYS[key][0], self._initial[key])
        self.service.policies_changed(None)

    def _apply(self, key: str, value: str) -> None:
        setattr(self.service.config, PULSAR_BROKER_KEYS[key][0], self._convert(key, value))

    @staticmethod
    def _convert(key: str, value: str) -> Any:  # noqa: ANN401 - the setting's own type
        try:
            return PULSAR_BROKER_KEYS[key][1](key, value)
        except PulsarConfError:
            raise PreconditionFailedError(" Invalid dynamic-config value") from None

    async def _store(self, overrides: dict[str, str]) -> None:
        """Store ``overrides`` (a job of the metadata thread; what its commit raises propagates)."""
        metadata = self.service.metadata
        assert metadata is not None
        raw = json.dumps(dict(sorted(overrides.items()))).encode()
        await self.service.metadata_job(partial(metadata.put_kv, KEY, raw))


_CONFIGS: weakref.WeakKeyDictionary[BrokerService, DynamicConfiguration] = weakref.WeakKeyDictionary()


def dynamic_config_for(service: BrokerService) -> DynamicConfiguration:
    """The one DynamicConfiguration of a service (made on first use, before any override is applied)."""
    found = _CONFIGS.get(service)
    if found is None:
        found = _CONFIGS[service] = DynamicConfiguration(service)
    return found


async def apply_stored_overrides(service: BrokerService) -> None:
    """At start-up, once the metadata store is open: apply the stored overrides (read off the loop)."""
    metadata = service.metadata
    if metadata is not None:
        overrides = await asyncio.to_thread(stored_overrides, metadata)
        dynamic_config_for(service).apply_stored(overrides)
