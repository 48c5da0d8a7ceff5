"""``import pulsar`` answered by magnetar's client: the official suite runs against it unchanged.

The official names magnetar's client does not implement (docs/CLIENT.md, "Not implemented")
exist here as classes that raise NotImplementedError when made, so that the suite's modules
import and only the tests that use them fail.
"""

import sys

import magnetar.client as _client


class _NotImplementedName:
    def __init__(self, *args: object, **kwargs: object) -> None:
        raise NotImplementedError(f"{type(self).__name__} is not implemented by magnetar.client")


for _name in (
    "AuthenticationAthenz", "AuthenticationOauth2", "AutoClusterFailover", "BatchReceivePolicy", "CryptoKeyReader",
    "EncryptionContext", "EncryptionKey", "KeySharedPolicy", "MessageBatch", "ServiceInfo", "ServiceInfoProvider",
):
    if not hasattr(_client, _name):
        setattr(_client, _name, type(_name, (_NotImplementedName,), {}))
if not hasattr(_client.asyncio, "_set_future"):  # the official asyncio module's private helper

    def _set_future(*args: object, **kwargs: object) -> None:
        raise NotImplementedError("_set_future is a private helper of the official client")

    _client.asyncio._set_future = _set_future

sys.modules.update({
    "pulsar": _client,
    "pulsar.schema": _client.schema,
    "pulsar.schema.schema": _client.schema,
    "pulsar.asyncio": _client.asyncio,
    "pulsar.exceptions": _client.exceptions,
    "pulsar.tableview": _client.tableview,
})
