"""Code written for the official client runs with ``import magnetar.client as pulsar``.

The API surface is computed from the installed official ``pulsar`` package at test time: every
public name, class method, enum member, exception and keyword option it has must exist here,
with the same awaitability in ``pulsar.asyncio``, minus the names docs/CLIENT.md lists under
"Not implemented". Then official-style code, sync and asyncio, runs against a magnetar broker.
"""

from __future__ import annotations

import inspect
import re
import types
from pathlib import Path
from typing import Any

import pytest

import magnetar.client as pulsar
from magnetar.client import asyncio as magnetar_asyncio
from magnetar.client import sync as magnetar_sync

from .conftest import RECEIVE_MS, create_partitioned_topic, run

official = pytest.importorskip("pulsar")
official_asyncio = pytest.importorskip("pulsar.asyncio")

DOC = Path(__file__).resolve().parents[2] / "docs" / "CLIENT.md"


def _not_implemented() -> set[str]:
    """The names listed under "### Not implemented" in docs/CLIENT.md."""
    text = DOC.read_text()
    section = text.split("### Not implemented", 1)[1].split("\n#", 1)[0]
    return set(re.findall(r"`([A-Za-z_][\w.]*)`", section))


NOT_IMPLEMENTED = _not_implemented()


def _official_names() -> dict[str, Any]:
    """The official package's public API: what it defines (not what it imports from typing etc.)."""
    names = {}
    for name in dir(official):
        if name.startswith("_"):
            continue
        obj = getattr(official, name)
        if isinstance(obj, types.ModuleType):
            if obj.__name__.startswith("pulsar."):
                names[name] = obj
        elif getattr(obj, "__module__", "").split(".")[0] in ("pulsar", "_pulsar"):
            names[name] = obj
    return names


def _public_methods(cls: type) -> dict[str, Any]:
    return {n: getattr(cls, n) for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))}


def test_the_not_implemented_list_is_read_and_real() -> None:
    assert {"AuthenticationAthenz", "Function"} <= NOT_IMPLEMENTED
    official_api = set(_official_names())
    for name in NOT_IMPLEMENTED:
        owner, _, attr = name.partition(".")
        if name != "Transactions":
            assert owner in official_api or owner in ("Client", "MessageId"), f"{name} is not an official name"
        if attr:
            assert hasattr(getattr(official, owner), attr), f"{name} is not an official name"


def test_every_official_top_level_name_exists() -> None:
    missing = sorted(n for n in _official_names() if n not in NOT_IMPLEMENTED and not hasattr(pulsar, n))
    assert missing == [], f"official names missing from magnetar.client: {missing}"
    assert issubclass(pulsar.Timeout, pulsar.PulsarException)
    assert pulsar.exceptions.ProducerFenced is pulsar.ProducerFenced


def test_every_official_schema_name_exists() -> None:
    names = [n for n in dir(official.schema) if not n.startswith("_") and isinstance(getattr(official.schema, n), type)]
    missing = sorted(n for n in names if f"schema.{n}" not in NOT_IMPLEMENTED and not hasattr(pulsar.schema, n))
    assert missing == [], f"pulsar.schema names missing from magnetar.client.schema: {missing}"
    assert pulsar.schema.Record is pulsar.schema.records.Record


def test_a_star_import_of_the_schema_module_brings_the_official_names() -> None:
    namespace: dict[str, Any] = {}
    exec("from magnetar.client.schema import *", namespace)  # noqa: S102 - what `import *` brings is the test
    names = [n for n in dir(official.schema) if not n.startswith("_") and isinstance(getattr(official.schema, n), type)]
    missing = sorted(n for n in names if f"schema.{n}" not in NOT_IMPLEMENTED and n not in namespace)
    assert missing == [], f"`from magnetar.client.schema import *` lacks {missing}"
    assert namespace["Record"] is pulsar.schema.records.Record


def _official_asyncio_names() -> list[str]:
    """The classes ``pulsar.asyncio`` exports (its own and the enums it imports from ``_pulsar``)."""
    return sorted(
        n for n in dir(official_asyncio)
        if not n.startswith("_") and isinstance(getattr(official_asyncio, n), type)
        and getattr(official_asyncio, n).__module__.split(".")[0] in ("pulsar", "_pulsar")
    )


def test_every_official_asyncio_name_exists() -> None:
    """Code taking its enums from ``pulsar.asyncio`` runs on ``magnetar.client.asyncio`` (issue 28, defect 1)."""
    names = _official_asyncio_names()
    assert {"Client", "Producer", "Consumer", "Reader", "PulsarException", "InitialPosition", "CompressionType",
            "PartitionsRoutingMode", "ProducerAccessMode", "RegexSubscriptionMode", "BatchingType",
            "ConsumerCryptoFailureAction"} <= set(names)
    missing = sorted(n for n in names if f"asyncio.{n}" not in NOT_IMPLEMENTED and not hasattr(magnetar_asyncio, n))
    assert missing == [], f"pulsar.asyncio names missing from magnetar.client.asyncio: {missing}"
    namespace: dict[str, Any] = {}
    exec("from magnetar.client.asyncio import *", namespace)  # noqa: S102 - what `import *` brings is the test
    assert sorted(n for n in names if n not in namespace) == []
    for name in names:
        theirs, ours = getattr(official_asyncio, name), getattr(magnetar_asyncio, name)
        if name not in ("Client", "Producer", "Consumer", "Reader", "PulsarException"):
            assert ours is getattr(pulsar, name), f"magnetar.client.asyncio.{name} is not magnetar.client.{name}"
        for member, value in getattr(theirs, "__members__", {}).items():
            assert int(getattr(ours, member)) == int(value), f"{name}.{member}"
    assert magnetar_asyncio.PulsarException is pulsar.PulsarException
    assert magnetar_asyncio.InitialPosition.Earliest == pulsar.InitialPosition.Earliest


def test_enum_members_and_exceptions_match() -> None:
    for name, obj in _official_names().items():
        if name in NOT_IMPLEMENTED:
            continue
        ours = getattr(pulsar, name)
        members = getattr(obj, "__members__", None)
        if isinstance(members, dict) and members and name != "Result":
            missing = [m for m in members if not hasattr(ours, m)]
            assert missing == [], f"{name} lacks {missing}"
            for m, value in members.items():
                assert int(getattr(ours, m)) == int(value), f"{name}.{m}"
        if isinstance(obj, type) and issubclass(obj, Exception):
            assert isinstance(ours, type) and issubclass(ours, pulsar.PulsarException), name
            assert ours.result.name in official.Result.__members__, name
    for m, value in official.Result.__members__.items():
        assert int(getattr(pulsar.Result, m)) == int(value)
    assert pulsar.ConsumerBusy("x").error() == pulsar.Result.ConsumerBusy
    # what send_async callbacks get (None on success, the exception otherwise) compares as the official codes
    success, timeout = None, pulsar.Timeout("x")
    assert success == pulsar.Result.Ok and not success != pulsar.Result.Ok
    assert timeout == pulsar.Result.Timeout and timeout != pulsar.Result.Ok
    assert pulsar.BrokerMetadataError("x").error() == pulsar.Result.BrokerMetadataError


SYNC_CLASSES = [
    ("Client", official.Client, magnetar_sync.Client),
    ("Producer", official.Producer, magnetar_sync.Producer),
    ("Consumer", official.Consumer, magnetar_sync.Consumer),
    ("Reader", official.Reader, magnetar_sync.Reader),
    ("Message", official.Message, pulsar.Message),
    ("MessageId", official.MessageId, pulsar.MessageId),
    ("TableView", official.TableView, pulsar.TableView),
]
ASYNC_CLASSES = [
    ("Client", official_asyncio.Client, magnetar_asyncio.Client),
    ("Producer", official_asyncio.Producer, magnetar_asyncio.Producer),
    ("Consumer", official_asyncio.Consumer, magnetar_asyncio.Consumer),
    ("Reader", official_asyncio.Reader, magnetar_asyncio.Reader),
]


@pytest.mark.parametrize(("name", "theirs", "ours"), SYNC_CLASSES + ASYNC_CLASSES, ids=lambda v: v if isinstance(v, str) else "")
def test_methods_and_awaitability_match(name: str, theirs: type, ours: type) -> None:
    for method, fn in _public_methods(theirs).items():
        if f"{name}.{method}" in NOT_IMPLEMENTED:
            continue
        assert hasattr(ours, method), f"{ours.__module__}.{name}.{method} is missing"
        if theirs.__module__ == "pulsar.asyncio":
            expected = inspect.iscoroutinefunction(fn)
            assert inspect.iscoroutinefunction(getattr(ours, method)) == expected, f"{name}.{method} awaitable: {expected}"


def _accepts(fn: Any, option: str, fields: set[str]) -> bool:
    params = inspect.signature(fn).parameters
    return option in params or option in fields


@pytest.mark.parametrize("method", ["__init__", "create_producer", "subscribe", "create_reader"])
def test_keyword_options_are_accepted(method: str) -> None:
    from dataclasses import fields

    from magnetar.client.api.config import ConsumerConfig, ProducerConfig

    accepted = {f.name for f in fields(ProducerConfig)} | {f.name for f in fields(ConsumerConfig)}
    accepted |= set(inspect.signature(pulsar.AsyncClient.__init__).parameters)
    accepted |= set(inspect.signature(pulsar.AsyncClient.create_producer).parameters)
    accepted |= set(inspect.signature(pulsar.AsyncClient.subscribe).parameters)
    accepted |= set(inspect.signature(pulsar.AsyncClient.create_reader).parameters)
    for theirs, ours in ((official.Client, magnetar_sync.Client), (official_asyncio.Client, magnetar_asyncio.Client)):
        official_params = [p for p in inspect.signature(getattr(theirs, method)).parameters if p not in ("self", "kwargs")]
        missing = [p for p in official_params if not _accepts(getattr(ours, method), p, accepted)]
        assert missing == [], f"{theirs.__module__}.Client.{method}: {missing} not accepted"


def test_official_sync_code_runs(url: str, topic: str) -> None:
    client = pulsar.Client(url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        consumer = client.subscribe(
            topic, "port", consumer_type=pulsar.ConsumerType.Shared, initial_position=pulsar.InitialPosition.Earliest,
            negative_ack_redelivery_delay_ms=100, crypto_failure_action=pulsar.ConsumerCryptoFailureAction.FAIL,
        )
        producer = client.create_producer(
            topic, compression_type=pulsar.CompressionType.ZLib, batching_enabled=False, properties={"app": "port"},
        )
        msg_id = producer.send(b"hello", properties={"k": "v"}, partition_key="key-1", event_timestamp=1234)
        assert isinstance(msg_id, pulsar.MessageId)
        assert msg_id.ledger_id() >= 0 and msg_id.entry_id() >= 0 and msg_id.partition() == -1
        assert pulsar.MessageId.deserialize(msg_id.serialize()) == msg_id
        callbacks: list[Any] = []

        def send_callback(res: Any, mid: Any) -> None:
            if res == pulsar.Result.Ok:  # the official callback's test (magnetar passes None)
                callbacks.append(mid)

        for i in range(5):
            producer.send_async(b"async-%d" % i, send_callback)
        producer.flush()
        assert len(callbacks) == 5 and all(isinstance(m, pulsar.MessageId) for m in callbacks)

        msg = consumer.receive(timeout_millis=RECEIVE_MS)
        assert (msg.data(), msg.properties(), msg.partition_key()) == (b"hello", {"k": "v"}, "key-1")
        assert (msg.event_timestamp(), msg.topic_name(), msg.redelivery_count()) == (1234, topic, 0)
        assert msg.message_id() == msg_id and msg.encryption_context() is None
        consumer.acknowledge(msg)
        first = consumer.receive(timeout_millis=RECEIVE_MS)
        consumer.negative_acknowledge(first)
        rest = [consumer.receive(timeout_millis=RECEIVE_MS) for _ in range(5)]
        again = [m for m in rest if m.data() == first.data()]
        assert len(again) == 1 and again[0].redelivery_count() == 1
        for m in rest:
            consumer.acknowledge(m)
        with pytest.raises(pulsar.Timeout):
            consumer.receive(timeout_millis=200)
        with pytest.raises(pulsar.ConsumerBusy):
            client.subscribe(topic, "exclusive-port")
            client.subscribe(topic, "exclusive-port")

        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        read = []
        while reader.has_message_available():
            read.append(reader.read_next(timeout_millis=RECEIVE_MS).data())
        assert read == [b"hello"] + [b"async-%d" % i for i in range(5)]
        assert client.get_topic_partitions(topic) == [topic]
        consumer.close()
        producer.close()
        reader.close()
    finally:
        client.close()


def test_one_class_per_name(url: str, topic: str) -> None:
    """``pulsar.Producer`` (and Consumer, Reader, TableView) is what the sync client returns; the
    asyncio core's classes are ``Async*``; each name is one class (issue 22)."""
    for name in ("Producer", "Consumer", "Reader", "TableView"):
        sync_cls, core_cls = getattr(pulsar, name), getattr(pulsar, "Async" + name)
        assert sync_cls is getattr(magnetar_sync, name) and sync_cls.__name__ == name
        assert core_cls.__name__ == "Async" + name and core_cls is not sync_cls
    for name in ("Producer", "Consumer", "Reader"):
        assert getattr(magnetar_asyncio, name) not in (getattr(pulsar, name), getattr(pulsar, "Async" + name))
    client = pulsar.Client(url, operation_timeout_seconds=10)
    try:
        producer = client.create_producer(topic)
        consumer = client.subscribe(topic, "one-class")
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        assert isinstance(producer, pulsar.Producer) and isinstance(producer.core, pulsar.AsyncProducer)
        assert isinstance(consumer, pulsar.Consumer) and isinstance(consumer.core, pulsar.AsyncConsumer)
        assert isinstance(reader, pulsar.Reader)
        multi = client.subscribe([topic, topic + "-2"], "one-class-multi")
        assert isinstance(multi, pulsar.Consumer) and isinstance(multi.core, pulsar.AsyncMultiTopicsConsumer)
    finally:
        client.close()

    async def core() -> None:
        async with pulsar.AsyncClient(url) as aclient:
            producer = await aclient.create_producer(topic)
            reader = await aclient.create_reader(topic, pulsar.MessageId.earliest)
            assert type(producer) is pulsar.AsyncProducer and type(reader) is pulsar.AsyncReader

    run(core())


def test_official_asyncio_code_runs(url: str, topic: str, broker: Any) -> None:
    partitioned = topic + "-p"
    create_partitioned_topic(broker, partitioned, 2)

    async def main() -> None:
        client = pulsar.asyncio.Client(url, operation_timeout_seconds=10)
        try:
            producer = await client.create_producer(topic, compression_type=pulsar.CompressionType.ZLib)
            consumer = await client.subscribe(
                topic, "port", consumer_type=pulsar.ConsumerType.KeyShared, initial_position=pulsar.InitialPosition.Earliest,
            )
            ids = [await producer.send(b"m%d" % i, partition_key=f"k{i % 3}") for i in range(5)]
            assert producer.topic() == topic and producer.producer_name() and producer.last_sequence_id() == 4
            assert (consumer.topic(), consumer.subscription_name()) == (topic, "port") and consumer.consumer_name()
            got = []
            for _ in range(5):
                msg = await consumer.receive()
                got.append(msg.data())
                await consumer.acknowledge(msg)
            assert sorted(got) == [b"m%d" % i for i in range(5)]
            try:
                await consumer.acknowledge_cumulative(msg)
            except pulsar.asyncio.PulsarException as exc:
                assert exc.error() == pulsar.Result.CumulativeAcknowledgementNotAllowedError
            else:
                raise AssertionError("cumulative acknowledgement on Key_Shared was accepted")
            last = await consumer.get_last_message_id()
            assert (last.ledger_id(), last.entry_id()) == (ids[-1].ledger_id(), ids[-1].entry_id())
            consumer.redeliver_unacknowledged_messages()
            await consumer.negative_acknowledge(ids[0])
            await consumer.seek(pulsar.MessageId.earliest)
            assert (await consumer.receive()).data() == b"m0"

            reader = await client.create_reader(topic, ids[2])
            read = []
            while await reader.has_message_available():
                read.append((await reader.read_next()).data())
            assert read == [b"m3", b"m4"] and reader.topic() == topic
            await reader.seek(ids[3])
            assert (await reader.read_next()).data() == b"m4"

            pattern = await client.subscribe(
                re.escape(partitioned) + ".*", "pattern", is_pattern_topic=True, initial_position=pulsar.InitialPosition.Earliest,
            )
            p_producer = await client.create_producer(partitioned)
            await p_producer.send(b"to-a-partition")
            assert (await pattern.receive()).data() == b"to-a-partition"
            assert await client.get_topic_partitions(partitioned) == [f"{partitioned}-partition-{i}" for i in range(2)]
            for handle in (producer, consumer, reader, pattern, p_producer):
                await handle.close()
        finally:
            await client.close()

    run(main())


def test_core_acknowledgements_are_awaitable_or_not(url: str, topic: str) -> None:
    async def main() -> None:
        async with pulsar.AsyncClient(url) as client:
            consumer = await client.subscribe(topic, "either", initial_position=pulsar.InitialPosition.Earliest)
            producer = await client.create_producer(topic)
            for i in range(3):
                await producer.send(b"%d" % i)
            first, second, third = [await consumer.receive(RECEIVE_MS) for _ in range(3)]
            consumer.acknowledge(first)  # magnetar's spelling: nothing to await
            await consumer.acknowledge(second)  # the official asyncio spelling
            await consumer.negative_acknowledge(third)
            await consumer.acknowledge_cumulative(third)

    run(main())


#: bad arguments (for the client, with a service URL where nothing listens) both clients refuse
#: before connecting: (what is made, positional arguments, keyword arguments)
_REFUSED_BOTH: list[tuple[str, tuple, dict[str, Any]]] = [
    ("Client", (None,), {}),
    ("Client", ("fakeServiceUrl",), {}),
    ("Client", ("pulsar://127.0.0.1:1",), {"authentication": "test"}),
    ("Client", ("pulsar://127.0.0.1:1",), {"io_threads": "test"}),
    ("Client", ("pulsar://127.0.0.1:1",), {"use_tls": "test"}),
    ("Client", ("pulsar://127.0.0.1:1",), {"tls_trust_certs_file_path": 5}),
    ("ConsumerDeadLetterPolicy", (-1,), {}),
    ("ConsumerKeySharedPolicy", (), {"key_shared_mode": "Sticky"}),
    ("ConsumerKeySharedPolicy", (), {"key_shared_mode": "Sticky", "sticky_ranges": [(0, 65536)]}),
    ("ConsumerKeySharedPolicy", (), {"key_shared_mode": "Sticky", "sticky_ranges": [(0, 100), (50, 150)]}),
]


@pytest.mark.parametrize(("name", "args", "options"), _REFUSED_BOTH)
def test_bad_arguments_are_value_errors_in_both_clients(name: str, args: tuple, options: dict[str, Any]) -> None:
    for module in (official, pulsar):
        given = dict(options)
        if given.get("key_shared_mode") == "Sticky":
            given["key_shared_mode"] = module.KeySharedMode.Sticky
        with pytest.raises(ValueError):
            made = getattr(module, name)(*args, **given)
            if hasattr(made, "close"):
                made.close()
