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

sys.modules.update({
    "pulsar": _client,
    "pulsar.schema": _client.schema,
    "pulsar.schema.schema": _client.schema,
    "pulsar.asyncio": _client.asyncio,
    "pulsar.exceptions": _client.exceptions,
    "pulsar.tableview": _client.tableview,
})
