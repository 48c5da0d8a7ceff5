"""Request bodies of the admin API, with Pulsar's JSON field names (for validation and OpenAPI)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, StrictBool, StrictInt


class _Body(BaseModel):
    model_config = ConfigDict(extra="allow")


def _java_long(value: Any) -> Any:
    """A JSON number or, as Pulsar's JSON mapper accepts for its long fields, a string of digits."""
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError("expected an integer")
    return value


#: an integer field that also takes its decimal string (``"limit": "10240"``)
JavaLong = Annotated[int, BeforeValidator(_java_long)]


class PartitionedTopicMetadata(_Body):
    """The body of a partitioned topic's creation as pulsar-admin clients may send it."""

    partitions: StrictInt
    properties: dict[str, str] | None = None


class TenantInfo(_Body):
    """Who administers a tenant and where its namespaces may live."""

    adminRoles: list[str] = []  # noqa: N815 - Pulsar's field names
    allowedClusters: list[str] = []  # noqa: N815


class ClusterData(_Body):
    """A cluster's URLs and how brokers connect to it (Pulsar's ClusterData; other fields are kept as given)."""

    serviceUrl: str | None = None  # noqa: N815
    serviceUrlTls: str | None = None  # noqa: N815
    brokerServiceUrl: str | None = None  # noqa: N815
    brokerServiceUrlTls: str | None = None  # noqa: N815
    proxyServiceUrl: str | None = None  # noqa: N815
    authenticationPlugin: str | None = None  # noqa: N815
    authenticationParameters: str | None = None  # noqa: N815
    brokerClientTlsEnabled: StrictBool | None = None  # noqa: N815
    tlsAllowInsecureConnection: StrictBool | None = None  # noqa: N815
    brokerClientTrustCertsFilePath: str | None = None  # noqa: N815


class RetentionPolicies(_Body):
    """How long / how much acknowledged data is kept (-1: without limit)."""

    retentionTimeInMinutes: StrictInt = 0  # noqa: N815
    retentionSizeInMB: StrictInt = 0  # noqa: N815


class BacklogQuota(_Body):
    """A backlog limit by size (bytes) or age (seconds) and what happens beyond it."""

    limit: JavaLong | None = None
    limitSize: JavaLong | None = None  # noqa: N815
    limitTime: JavaLong | None = None  # noqa: N815
    policy: str | None = None


class DelayedDeliveryPolicies(_Body):
    """Whether delayed delivery is on, its tick and its longest delay."""

    active: StrictBool = True
    tickTime: StrictInt = 1000  # noqa: N815
    maxDeliveryDelayInMillis: StrictInt = 0  # noqa: N815


class AutoTopicCreationOverride(_Body):
    """Whether topics are created on first use, and as partitioned topics of how many partitions."""

    allowAutoTopicCreation: StrictBool  # noqa: N815
    topicType: str | None = None  # noqa: N815
    defaultNumPartitions: StrictInt | None = None  # noqa: N815


class MessageIdData(_Body):
    """A message id (ResetCursorData): (-1, -1) is earliest, (2^63-1, 2^63-1) latest."""

    ledgerId: StrictInt  # noqa: N815
    entryId: StrictInt  # noqa: N815
    partitionIndex: StrictInt = -1  # noqa: N815
    isExcluded: StrictBool = False  # noqa: N815
    batchIndex: StrictInt = -1  # noqa: N815


def dump(model: BaseModel | None) -> dict | None:
    """A model as a plain dict without unset optional fields."""
    if model is None:
        return None
    return model.model_dump(exclude_none=True)
