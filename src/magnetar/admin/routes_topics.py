"""/admin/v2/persistent/... and /admin/v2/non-persistent/...: topics, partitions, subscriptions,
statistics, messages and topic policies. One router per domain, the same routes in each."""

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Body, Response
from pydantic import StrictInt

from magnetar.admin.access import AccessGuard
from magnetar.admin.errors import HttpError
from magnetar.admin.messages import entry_response
from magnetar.admin.models import MessageIdData, PartitionedTopicMetadata
from magnetar.admin.routes_permissions import add_topic_permission_routes
from magnetar.admin.routes_policies import add_topic_policy_routes
from magnetar.admin.routes_topic_storage import add_topic_storage_routes
from magnetar.broker.resources.admin import BrokerAdmin
from magnetar.broker.resources.base import LATEST_LEDGER
from magnetar.broker.security import NamespaceOperation, TopicOperation
from magnetar.protocol.topic_name import TopicName

T = "/{tenant}/{namespace}/{topic}"
S = T + "/subscription/{subName}"

TopicNamer = Callable[[str, str, str], TopicName]


def _no_content() -> Response:
    return Response(status_code=204)


def _position(text: str) -> tuple[int, int]:
    """A message id given as text: earliest, latest or ledger:entry."""
    value = text.strip().lower()
    if value == "earliest":
        return -1, -1
    if value == "latest":
        return LATEST_LEDGER, LATEST_LEDGER
    try:
        ledger, entry = value.split(":")[:2]
        return int(ledger), int(entry)
    except ValueError:
        raise HttpError(412, f"Invalid message id {text!r}: expected earliest, latest or ledgerId:entryId") from None


class TopicAccess:
    """The access requirements of one domain's topic routes (Pulsar's TopicOperation of each)."""

    def __init__(self, access: AccessGuard, domain: str) -> None:
        self.access = access
        self.domain = domain

    def topic(self, operation: TopicOperation) -> list:
        """Dependencies requiring ``operation`` on the path's topic."""
        return [self.access.topic(operation, self.domain)]

    def namespace(self, operation: NamespaceOperation) -> list:
        """Dependencies requiring ``operation`` on the path's namespace."""
        return [self.access.namespace(operation)]


def router(admin: BrokerAdmin, access: AccessGuard, domain: str) -> APIRouter:
    """Topic routes of one domain (``persistent`` or ``non-persistent``) over ``admin``."""
    r = APIRouter(prefix=f"/admin/v2/{domain}", tags=[f"{domain} topics"])
    need = TopicAccess(access, domain)

    def name(tenant: str, namespace: str, topic: str) -> TopicName:
        return admin.ctx.topic_name(domain, tenant, namespace, topic)

    _add_topic_routes(r, admin, domain, name, need)
    _add_partition_routes(r, admin, name, need)
    _add_stats_routes(r, admin, name, need)
    _add_subscription_routes(r, admin, name, need)
    _add_cursor_routes(r, admin, name, need)
    _add_message_routes(r, admin, name, need)
    _add_lifecycle_routes(r, admin, name, need)
    _add_property_routes(r, admin, name, need)
    _add_missed_partition_route(r, admin, name, need)
    add_topic_policy_routes(r, admin, access, domain)
    add_topic_permission_routes(r, admin, access, domain)
    add_topic_storage_routes(r, admin, access, domain, name)
    return r


def _add_topic_routes(r: APIRouter, admin: BrokerAdmin, domain: str, name: TopicNamer, need: TopicAccess) -> None:
    topics = admin.topics
    ns_name = admin.ctx.namespace_name

    @r.get("/{tenant}/{namespace}", dependencies=need.namespace(NamespaceOperation.GET_TOPICS), summary="List the topics of a namespace (partitions individually)")
    async def list_topics(tenant: str, namespace: str) -> list[str]:
        return await topics.list_topics(domain, ns_name(tenant, namespace))

    @r.get("/{tenant}/{namespace}/partitioned", dependencies=need.namespace(NamespaceOperation.GET_TOPICS),
           summary="List the partitioned topics of a namespace")
    async def list_partitioned(tenant: str, namespace: str) -> list[str]:
        return await admin.ctx.read(topics.list_partitioned_topics, domain, ns_name(tenant, namespace))

    @r.put(T, status_code=204, dependencies=need.namespace(NamespaceOperation.CREATE_TOPIC), summary="Create a non-partitioned topic")
    async def create_topic(
        tenant: str, namespace: str, topic: str, properties: Annotated[dict[str, str] | None, Body()] = None
    ) -> Response:
        await topics.create_topic(name(tenant, namespace, topic), properties)
        return _no_content()

    @r.delete(T, status_code=204, dependencies=need.namespace(NamespaceOperation.DELETE_TOPIC),
              summary="Delete a topic (force: disconnect its clients first)")
    async def delete_topic(tenant: str, namespace: str, topic: str, force: bool = False) -> Response:
        await topics.delete_topic(name(tenant, namespace, topic), force)
        return _no_content()


def _add_partition_routes(r: APIRouter, admin: BrokerAdmin, name: TopicNamer, need: TopicAccess) -> None:
    topics = admin.topics

    @r.put(T + "/partitions", status_code=204, dependencies=need.namespace(NamespaceOperation.CREATE_TOPIC),
           summary="Create a partitioned topic")
    async def create_partitioned(
        tenant: str, namespace: str, topic: str, partitions: Annotated[StrictInt | PartitionedTopicMetadata, Body()]
    ) -> Response:
        count = partitions if isinstance(partitions, int) else partitions.partitions
        await admin.ctx.write(topics.create_partitioned_topic, name(tenant, namespace, topic), count)
        return _no_content()

    @r.post(T + "/partitions", status_code=204, dependencies=[need.access.topic_policy(True, need.domain)],
            summary="Increase the partitions of a partitioned topic")
    async def update_partitioned(
        tenant: str, namespace: str, topic: str, partitions: Annotated[StrictInt, Body()], force: bool = False
    ) -> Response:
        await topics.update_partitioned_topic(name(tenant, namespace, topic), partitions)
        return _no_content()

    @r.get(T + "/partitions", dependencies=need.topic(TopicOperation.LOOKUP),
           summary="Partitioned topic metadata ({\"partitions\": N}, 0 when not partitioned)")
    async def get_partitions(
        tenant: str, namespace: str, topic: str, checkAllowAutoCreation: bool = False  # noqa: N803
    ) -> dict:
        tn = name(tenant, namespace, topic)
        if checkAllowAutoCreation:  # may create the partitioned topic: a write job
            return await admin.ctx.write(topics.get_partitioned_metadata, tn, True)
        return await topics.partitioned_metadata(tn)

    @r.delete(T + "/partitions", status_code=204, dependencies=need.namespace(NamespaceOperation.DELETE_TOPIC),
              summary="Delete a partitioned topic and its partitions")
    async def delete_partitioned(tenant: str, namespace: str, topic: str, force: bool = False) -> Response:
        await topics.delete_partitioned_topic(name(tenant, namespace, topic), force)
        return _no_content()


def _add_stats_routes(r: APIRouter, admin: BrokerAdmin, name: TopicNamer, need: TopicAccess) -> None:
    stats_of = admin.stats
    stats_access = need.topic(TopicOperation.GET_STATS)

    @r.get(T + "/stats", dependencies=stats_access, summary="Topic statistics")
    async def stats(tenant: str, namespace: str, topic: str, getEarliestTimeInBacklog: bool = False) -> dict:  # noqa: N803
        return await stats_of.topic_stats(name(tenant, namespace, topic), getEarliestTimeInBacklog)

    @r.get(T + "/partitioned-stats", dependencies=stats_access, summary="Statistics of a partitioned topic, summed over its partitions")
    async def partitioned_stats(
        tenant: str, namespace: str, topic: str, perPartition: bool = True, getEarliestTimeInBacklog: bool = False  # noqa: N803
    ) -> dict:
        return await stats_of.partitioned_stats(name(tenant, namespace, topic), perPartition, getEarliestTimeInBacklog)

    @r.get(T + "/internalStats", dependencies=stats_access, summary="Storage-level statistics: ledger and cursors")
    async def internal_stats(tenant: str, namespace: str, topic: str) -> dict:
        return await stats_of.internal_stats(name(tenant, namespace, topic))

    @r.get(T + "/lastMessageId", dependencies=need.topic(TopicOperation.PEEK_MESSAGES), summary="Id of the last message")
    async def last_message_id(tenant: str, namespace: str, topic: str) -> dict:
        return await stats_of.last_message_id(name(tenant, namespace, topic))


def _add_subscription_routes(r: APIRouter, admin: BrokerAdmin, name: TopicNamer, need: TopicAccess) -> None:
    subscriptions_of = admin.subscriptions

    @r.get(T + "/subscriptions", dependencies=need.topic(TopicOperation.GET_SUBSCRIPTIONS), summary="List subscriptions")
    async def subscriptions(tenant: str, namespace: str, topic: str) -> list[str]:
        return await subscriptions_of.list_subscriptions(name(tenant, namespace, topic))

    @r.put(S, status_code=204, dependencies=need.topic(TopicOperation.SUBSCRIBE),
           summary="Create a subscription at a message id (latest by default)")
    async def create_subscription(
        tenant: str,
        namespace: str,
        topic: str,
        subName: str,  # noqa: N803
        position: Annotated[MessageIdData | str | None, Body()] = None,
        messageId: str | None = None,  # noqa: N803
        replicated: bool = False,
    ) -> Response:
        if messageId is not None:
            where = _position(messageId)
        elif isinstance(position, str):
            if position.strip().lower() not in ("earliest", "latest"):
                raise HttpError(400, f"Invalid request body: {position!r} is not a message id")
            where = _position(position)
        elif position is not None:
            where = (position.ledgerId, position.entryId)
        else:
            where = None
        await subscriptions_of.create_subscription(name(tenant, namespace, topic), subName, where)
        return _no_content()

    @r.delete(S, status_code=204, dependencies=need.topic(TopicOperation.UNSUBSCRIBE),
              summary="Delete a subscription (force: disconnect its consumers first)")
    async def delete_subscription(
        tenant: str, namespace: str, topic: str, subName: str, force: bool = False  # noqa: N803
    ) -> Response:
        tn = name(tenant, namespace, topic)
        await subscriptions_of.delete_subscription(tn, subName, force)
        await admin.ctx.write(admin.subscription_state.forget_properties,
                              [str(t) for t in admin.ctx.partitions(tn)] or [str(tn)], subName)
        return _no_content()


def _add_cursor_routes(r: APIRouter, admin: BrokerAdmin, name: TopicNamer, need: TopicAccess) -> None:
    subs = admin.subscriptions
    skip_access, expire_access = need.topic(TopicOperation.SKIP), need.topic(TopicOperation.EXPIRE_MESSAGES)
    reset_access = need.topic(TopicOperation.RESET_CURSOR)

    @r.post(S + "/skip/{numMessages}", status_code=204, dependencies=skip_access, summary="Skip messages of a subscription")
    async def skip(tenant: str, namespace: str, topic: str, subName: str, numMessages: int) -> Response:  # noqa: N803
        await subs.skip_messages(name(tenant, namespace, topic), subName, numMessages)
        return _no_content()

    @r.post(S + "/skip_all", status_code=204, dependencies=skip_access, summary="Clear a subscription's backlog")
    async def skip_all(tenant: str, namespace: str, topic: str, subName: str) -> Response:  # noqa: N803
        await subs.skip_all(name(tenant, namespace, topic), subName)
        return _no_content()

    @r.post(S + "/expireMessages/{expireTimeInSeconds}", status_code=204, dependencies=expire_access,
            summary="Expire messages older than N seconds")
    async def expire(
        tenant: str, namespace: str, topic: str, subName: str, expireTimeInSeconds: int  # noqa: N803
    ) -> Response:
        await subs.expire_messages(name(tenant, namespace, topic), subName, expireTimeInSeconds)
        return _no_content()

    @r.post(T + "/all_subscription/expireMessages/{expireTimeInSeconds}", status_code=204, dependencies=expire_access,
            summary="Expire messages older than N seconds on every subscription")
    async def expire_all(tenant: str, namespace: str, topic: str, expireTimeInSeconds: int) -> Response:  # noqa: N803
        await subs.expire_all_subscriptions(name(tenant, namespace, topic), expireTimeInSeconds)
        return _no_content()

    @r.post(S + "/resetcursor/{timestamp}", status_code=204, dependencies=reset_access, summary="Reset a subscription to a publish time (ms)")
    async def reset_to_time(
        tenant: str, namespace: str, topic: str, subName: str, timestamp: int  # noqa: N803
    ) -> Response:
        await subs.reset_cursor_to_time(name(tenant, namespace, topic), subName, timestamp)
        return _no_content()

    @r.post(S + "/resetcursor", status_code=204, dependencies=reset_access, summary="Reset a subscription to a message id")
    async def reset_to_position(
        tenant: str, namespace: str, topic: str, subName: str, messageId: Annotated[MessageIdData, Body()]  # noqa: N803
    ) -> Response:
        await subs.reset_cursor_to_position(
            name(tenant, namespace, topic), subName, messageId.ledgerId, messageId.entryId,
            messageId.isExcluded, messageId.partitionIndex,
        )
        return _no_content()


def _add_message_routes(r: APIRouter, admin: BrokerAdmin, name: TopicNamer, need: TopicAccess) -> None:
    messages = admin.messages
    peek_access = need.topic(TopicOperation.PEEK_MESSAGES)

    @r.get(S + "/position/{messagePosition}", dependencies=peek_access,
           summary="Peek the n-th unacknowledged message of a subscription",
           response_class=Response)
    async def peek(
        tenant: str, namespace: str, topic: str, subName: str, messagePosition: int  # noqa: N803
    ) -> Response:
        return entry_response(await messages.peek(name(tenant, namespace, topic), subName, messagePosition))

    @r.get(T + "/examinemessage", dependencies=peek_access, summary="Examine the n-th message from the earliest or the latest",
           response_class=Response)
    async def examine(
        tenant: str,
        namespace: str,
        topic: str,
        initialPosition: str = "latest",  # noqa: N803
        messagePosition: int = 1,  # noqa: N803
    ) -> Response:
        return entry_response(await messages.examine(name(tenant, namespace, topic), initialPosition, messagePosition))

    @r.get(T + "/ledger/{ledgerId}/entry/{entryId}", dependencies=peek_access,
           summary="Get a stored message by its id (ledger and entry)", response_class=Response)
    async def by_id(
        tenant: str, namespace: str, topic: str, ledgerId: int, entryId: int  # noqa: N803
    ) -> Response:
        return entry_response(await messages.by_id(name(tenant, namespace, topic), ledgerId, entryId))


def _add_lifecycle_routes(r: APIRouter, admin: BrokerAdmin, name: TopicNamer, need: TopicAccess) -> None:
    topics = admin.topics
    compact_access = need.topic(TopicOperation.COMPACT)

    @r.post(T + "/terminate", dependencies=need.topic(TopicOperation.TERMINATE), summary="Terminate a topic: no more messages are accepted")
    async def terminate(tenant: str, namespace: str, topic: str) -> dict:
        return await topics.terminate(name(tenant, namespace, topic))

    @r.post(T + "/terminate/partitions", dependencies=need.topic(TopicOperation.TERMINATE),
            summary="Terminate every partition of a partitioned topic: their last message ids by partition")
    async def terminate_partitions(tenant: str, namespace: str, topic: str) -> dict:
        tn = name(tenant, namespace, topic)
        await admin.ctx.existing_read(tn)
        partitions = admin.ctx.partitions(tn) if admin.ctx.partitions_of(tn) else []
        return {str(index): await topics.terminate(p) for index, p in enumerate(partitions)}

    @r.put(T + "/unload", status_code=204, dependencies=need.topic(TopicOperation.UNLOAD),
           summary="Unload a topic (every partition of a partitioned one): its clients reconnect")
    async def unload(tenant: str, namespace: str, topic: str) -> Response:
        await topics.unload(name(tenant, namespace, topic))
        return _no_content()

    @r.put(T + "/compaction", status_code=204, dependencies=compact_access,
           summary="Start compacting the topic (409 while a compaction runs)")
    async def compact(tenant: str, namespace: str, topic: str) -> Response:
        await topics.trigger_compaction(name(tenant, namespace, topic))
        return _no_content()

    @r.get(T + "/compaction", dependencies=compact_access, summary="Compaction status")
    async def compaction_status(tenant: str, namespace: str, topic: str) -> dict:
        return await admin.ctx.read(topics.compaction_status, name(tenant, namespace, topic))


def _add_property_routes(r: APIRouter, admin: BrokerAdmin, name: TopicNamer, need: TopicAccess) -> None:
    """GET / PUT / DELETE a non-partitioned persistent topic's properties (pulsar-admin's get-, update-,
    remove-properties)."""

    async def stored_name(tenant: str, namespace: str, topic: str) -> str:
        tn = name(tenant, namespace, topic)
        admin.ctx.persistent_only(tn, "Topic properties")
        if admin.ctx.partitions_of(tn):
            raise HttpError(412, "Properties of a partitioned topic are not supported by magnetar: set them on a partition")
        await admin.ctx.existing_read(tn)
        return str(tn)

    @r.get(T + "/properties", dependencies=need.topic(TopicOperation.GET_METADATA), summary="The topic's properties")
    async def get_properties(tenant: str, namespace: str, topic: str) -> dict:
        stored = await stored_name(tenant, namespace, topic)
        info = await admin.ctx.read(admin.ctx.metadata.get_topic_info, stored)
        return {} if info is None else info["properties"]

    async def change_properties(stored: str, change: Callable[[dict], dict]) -> None:
        def write() -> None:  # a write job: read, change and commit with no other write in between
            info = admin.ctx.metadata.get_topic_info(stored) or {"properties": {}}
            admin.ctx.metadata.set_topic_properties(stored, change(dict(info["properties"])))

        await admin.ctx.write(write)

    @r.put(T + "/properties", status_code=204, dependencies=need.topic(TopicOperation.UPDATE_METADATA),
           summary="Add or replace some of the topic's properties")
    async def update_properties(tenant: str, namespace: str, topic: str, body: Annotated[dict[str, str], Body()]) -> Response:
        await change_properties(await stored_name(tenant, namespace, topic), lambda props: {**props, **body})
        return _no_content()

    @r.delete(T + "/properties", status_code=204, dependencies=need.topic(TopicOperation.DELETE_METADATA),
              summary="Remove one of the topic's properties")
    async def remove_property(tenant: str, namespace: str, topic: str, key: str) -> Response:
        await change_properties(await stored_name(tenant, namespace, topic), lambda props: {k: v for k, v in props.items() if k != key})
        return _no_content()


def _add_missed_partition_route(r: APIRouter, admin: BrokerAdmin, name: TopicNamer, need: TopicAccess) -> None:
    """POST .../createMissedPartitions (pulsar-admin's create-missed-partitions): every partition of a
    partitioned topic that has no topic yet is created."""

    @r.post(T + "/createMissedPartitions", status_code=204, dependencies=need.namespace(NamespaceOperation.CREATE_TOPIC),
            summary="Create the partitions of a partitioned topic that are missing")
    async def create_missed_partitions(tenant: str, namespace: str, topic: str) -> Response:
        tn = name(tenant, namespace, topic)
        if not admin.ctx.partitions_of(tn):
            raise HttpError(404, "Partitioned Topic not found")
        for partition in admin.ctx.partitions(tn):
            if not await admin.ctx.topic_exists_read(partition):
                await admin.topics.create_topic(partition)
        return _no_content()
