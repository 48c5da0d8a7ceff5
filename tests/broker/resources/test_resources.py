"""The admin core by resource, without HTTP: each refusal is a broker error of the right kind."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.broker.resources.admin import BrokerAdmin, admin_for
from magnetar.broker.resources.errors import (
    ConflictError,
    InvalidChangeError,
    NotAllowedError,
    NotFoundError,
    NotReadyError,
    OutOfRangeError,
    PreconditionFailedError,
)
from magnetar.broker.service import BrokerService
from tests.broker.service_runner import run_service


def run_with_admin(tmp_path: Path, body: Callable[[BrokerAdmin], Awaitable[None]], **settings: object) -> None:
    """Start a service on a data dir in ``tmp_path``, run ``body`` with its admin, stop it."""
    run_service(tmp_path / "data", lambda service: body(admin_for(service)), **settings)


def test_admin_is_one_per_service(tmp_path: Path) -> None:
    service = BrokerService(BrokerConfig(data_dir=tmp_path))
    assert admin_for(service) is admin_for(service)
    with pytest.raises(NotReadyError, match="Broker is not ready"):
        admin_for(service).tenants.list_tenants()


def test_tenants_and_namespaces(tmp_path: Path) -> None:
    async def body(admin: BrokerAdmin) -> None:
        admin.tenants.create_tenant("acme", {"allowedClusters": ["standalone"]})
        with pytest.raises(ConflictError, match="Tenant already exists"):
            admin.tenants.create_tenant("acme", {"allowedClusters": ["standalone"]})
        with pytest.raises(PreconditionFailedError, match="Clusters do not exist"):
            admin.tenants.create_tenant("other", {"allowedClusters": ["nowhere"]})
        admin.namespaces.create_namespace("acme/ns", {"message_ttl_in_seconds": 30, "unknown": 1})
        assert await admin.policies.get_namespace_policy("acme/ns", "message_ttl_in_seconds") == 30
        with pytest.raises(NotFoundError, match="Namespace does not exist"):
            await admin.policies.get_namespace_policy("acme/none", "message_ttl_in_seconds")
        with pytest.raises(PreconditionFailedError, match="Namespace name is not valid"):
            admin.ctx.namespace_name("acme", "bad/name")
        await admin.topics.create_topic(admin.ctx.parse_topic("persistent://acme/ns/t"))
        with pytest.raises(ConflictError, match="Cannot delete non empty namespace"):
            await admin.namespaces.delete_namespace("acme/ns")
        with pytest.raises(ConflictError, match="The tenant still has active namespaces"):
            await admin.tenants.delete_tenant("acme")
        await admin.tenants.delete_tenant("acme", force=True)
        assert "acme" not in admin.tenants.list_tenants()

    run_with_admin(tmp_path, body)


def test_partitioned_topics(tmp_path: Path) -> None:
    async def body(admin: BrokerAdmin) -> None:
        tn = admin.ctx.parse_topic("persistent://public/default/p")
        with pytest.raises(OutOfRangeError, match="more than 0"):
            admin.topics.create_partitioned_topic(tn, 0)
        admin.topics.create_partitioned_topic(tn, 3)
        assert admin.topics.get_partitioned_metadata(tn) == {"partitions": 3}
        with pytest.raises(InvalidChangeError, match="can't less than current partitions 3"):
            await admin.topics.update_partitioned_topic(tn, 2)
        with pytest.raises(NotAllowedError, match="partitioned topic is not allowed"):
            await admin.messages.examine(tn, "latest", 1)
        with pytest.raises(ConflictError, match="is a partitioned topic"):
            await admin.topics.delete_topic(tn)
        await admin.topics.delete_partitioned_topic(tn)
        with pytest.raises(NotFoundError, match="Partitioned Topic"):
            await admin.stats.partitioned_stats(tn)

    run_with_admin(tmp_path, body)


def test_topic_policy_falls_back_to_namespace_then_broker_setting(tmp_path: Path) -> None:
    async def body(admin: BrokerAdmin) -> None:
        tn = admin.ctx.parse_topic("persistent://public/default/pol")
        await admin.topics.create_topic(tn)
        policies = admin.policies
        assert await policies.get_topic_policy(tn, "message_ttl_in_seconds", applied=True) == 17
        policies.set_namespace_policy("public/default", "message_ttl_in_seconds", 20)
        assert await policies.get_topic_policy(tn, "message_ttl_in_seconds", applied=True) == 20
        policies.set_topic_policy(tn, "message_ttl_in_seconds", 5)
        assert await policies.get_topic_policy(tn, "message_ttl_in_seconds") == 5
        with pytest.raises(PreconditionFailedError, match="must >= 0"):
            policies.set_topic_policy(tn, "message_ttl_in_seconds", -3)
        policies.remove_topic_policy(tn, "message_ttl_in_seconds")
        assert await policies.get_topic_policy(tn, "message_ttl_in_seconds") is None
        with pytest.raises(NotFoundError, match="not found"):
            await policies.get_topic_policy(admin.ctx.parse_topic("persistent://public/default/none"), "retention_policies")

    run_with_admin(tmp_path, body, default_message_ttl_seconds=17)


def test_subscriptions_and_stats(tmp_path: Path) -> None:
    async def body(admin: BrokerAdmin) -> None:
        tn = admin.ctx.parse_topic("persistent://public/default/s")
        await admin.topics.create_topic(tn)
        await admin.subscriptions.create_subscription(tn, "sub", None)
        with pytest.raises(ConflictError, match="Subscription already exists"):
            await admin.subscriptions.create_subscription(tn, "sub", None)
        assert await admin.subscriptions.list_subscriptions(tn) == ["sub"]
        stats = await admin.stats.topic_stats(tn)
        assert stats["subscriptions"]["sub"]["msgBacklog"] == 0
        assert stats["deduplicationStatus"] == "Disabled"
        with pytest.raises(NotFoundError, match="Subscription nope not found"):
            await admin.subscriptions.skip_all(tn, "nope")
        non_persistent = admin.ctx.parse_topic("non-persistent://public/default/np")
        with pytest.raises(NotAllowedError, match="non-persistent"):
            await admin.stats.internal_stats(non_persistent)
        await admin.subscriptions.delete_subscription(tn, "sub")
        assert await admin.subscriptions.list_subscriptions(tn) == []

    run_with_admin(tmp_path, body)


def test_existence_checks_read_the_store_off_the_loop(tmp_path: Path) -> None:
    """What the store's memory does not hold is read in a worker thread: the row of a topic not loaded,
    the tenant of a namespace that does not exist (which tells the two 404s apart); the answers are the
    checks' own (before, these reads ran on the loop)."""
    import threading

    async def body(admin: BrokerAdmin) -> None:
        ctx = admin.ctx
        await ctx.write(ctx.metadata.get_or_create_topic, "persistent://public/default/stored")
        store, loop_thread, readers = ctx.metadata, threading.get_ident(), []
        reader = store._reader
        store._reader = lambda: (readers.append(threading.get_ident()), reader())[1]  # type: ignore[method-assign]
        try:
            assert await ctx.namespace_read("public/default") == {}  # from memory: no read
            assert readers == []
            with pytest.raises(NotFoundError, match="^Namespace does not exist$"):
                await ctx.namespace_read("public/nowhere")
            with pytest.raises(NotFoundError, match="^Tenant does not exist$"):
                await ctx.existing_read(ctx.parse_topic("persistent://nobody/nowhere/t"))
            stored = ctx.parse_topic("persistent://public/default/stored")
            assert await ctx.topic_exists_read(stored) and "persistent://public/default/stored" not in ctx.service.topics
            with pytest.raises(NotFoundError, match="^Topic persistent://public/default/missing not found$"):
                await ctx.load_topic(ctx.parse_topic("persistent://public/default/missing"))
            assert (await ctx.load_topic(stored)).name == str(stored)
            with pytest.raises(NotFoundError, match="^Namespace does not exist$"):
                await admin.policies.get_namespace_policy("public/nowhere", "message_ttl_in_seconds")
        finally:
            del store._reader
        assert len(readers) >= 6 and loop_thread not in readers

    run_with_admin(tmp_path, body)
