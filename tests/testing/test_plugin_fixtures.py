"""The plugin's fixtures, run by pytester as a user's test files use them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.timeout(240)


def test_fixtures_give_a_broker_a_fresh_namespace_a_topic_and_a_client(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import time

        seen = {}

        def test_produce_and_consume(pulsar_broker, pulsar_namespace, pulsar_topic, pulsar_client):
            assert pulsar_broker.service_url.startswith("pulsar://127.0.0.1:")
            assert pulsar_broker.http_url.startswith("http://127.0.0.1:")
            assert pulsar_namespace in pulsar_broker.admin.namespaces("public")
            assert pulsar_topic == f"persistent://{pulsar_namespace}/test_produce_and_consume"
            consumer = pulsar_client.subscribe(pulsar_topic, "sub")
            producer = pulsar_client.create_producer(pulsar_topic)
            for i in range(3):
                producer.send(f"m{i}".encode())
            got = [consumer.receive(5000).data() for _ in range(3)]
            assert got == [b"m0", b"m1", b"m2"]
            assert pulsar_broker.admin.topics(pulsar_namespace) == [pulsar_topic]
            seen["namespace"] = pulsar_namespace
            seen["client"] = pulsar_client

        def test_namespace_and_client_are_gone_after_the_test(pulsar_broker):
            assert seen["client"]._thread.stopped
            deadline = time.monotonic() + 10
            while seen["namespace"] in pulsar_broker.admin.namespaces("public"):
                assert time.monotonic() < deadline, "namespace not deleted"
                time.sleep(0.02)
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=2)


def test_two_tests_with_the_same_topic_name_do_not_see_each_other(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from magnetar.client import InitialPosition, Timeout

        @pytest.mark.parametrize("who", ["first", "second"])
        def test_orders(pulsar_client, pulsar_namespace, who):
            topic = f"persistent://{pulsar_namespace}/orders"
            consumer = pulsar_client.subscribe(topic, "billing", initial_position=InitialPosition.Earliest)
            pulsar_client.create_producer(topic).send(f"from-{who}".encode())
            assert consumer.receive(5000).data() == f"from-{who}".encode()
            with pytest.raises(Timeout):
                consumer.receive(300)  # nothing left over from the other test
            # left unacknowledged: without isolation the other test would receive it
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=2)


def test_kill_and_restart_keep_ports_and_data_and_clients_reconnect(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        from magnetar.client import MessageId

        def test_crash_and_restart(pulsar_broker, pulsar_client, pulsar_topic):
            url = pulsar_broker.service_url
            producer = pulsar_client.create_producer(pulsar_topic)
            producer.send(b"before-kill")
            pulsar_broker.kill()
            assert not pulsar_broker.running
            pulsar_broker.restart()
            assert pulsar_broker.running and pulsar_broker.service_url == url
            producer.send(b"after-restart")  # the same producer, reconnected
            reader = pulsar_client.create_reader(pulsar_topic, MessageId.earliest)
            assert [reader.read_next(5000).data() for _ in range(2)] == [b"before-kill", b"after-restart"]
            assert not reader.has_message_available()
            namespace = pulsar_topic.split("://")[1].rsplit("/", 1)[0]
            assert pulsar_broker.admin.topics(namespace) == [pulsar_topic]
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)


def test_async_client_under_anyio_and_pytest_asyncio_strict_and_auto(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_async="""
        import pytest

        async def roundtrip(client, topic):
            consumer = await client.subscribe(topic, "sub")
            producer = await client.create_producer(topic)
            await producer.send(b"hello")
            message = await consumer.receive()
            assert message.data() == b"hello"

        @pytest.mark.anyio
        async def test_anyio(async_pulsar_client, pulsar_topic):
            await roundtrip(async_pulsar_client, pulsar_topic)

        @pytest.mark.asyncio
        async def test_asyncio(async_pulsar_client, pulsar_topic):
            await roundtrip(async_pulsar_client, pulsar_topic)
        """
    )
    strict = pytester.runpytest("-W", "error::pytest.PytestDeprecationWarning")
    strict.assert_outcomes(passed=2)
    # auto mode takes every async fixture, anyio tests' included: an asyncio-only suite's mode
    auto = pytester.runpytest("--asyncio-mode=auto", "test_async.py::test_asyncio")
    auto.assert_outcomes(passed=1)


def test_a_conftest_fixture_of_the_same_name_wins_and_no_broker_starts(pytester: pytest.Pytester) -> None:
    record = pytester.path / "record.json"
    pytester.makeconftest(
        f"""
        import json, pytest

        @pytest.fixture
        def pulsar_client():
            return "the project's own"

        def pytest_sessionfinish(session):
            from magnetar.pytest_plugin import _KIT
            kit = session.config.stash.get(_KIT, None)
            json.dump({{"kit": kit is not None}}, open({str(record)!r}, "w"))
        """
    )
    pytester.makepyfile(
        """
        def test_own(pulsar_client):
            assert pulsar_client == "the project's own"
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert json.loads(Path(record).read_text()) == {"kit": False}


def test_the_admin_api_is_built_after_the_first_client_test_or_when_a_fixture_needs_it(pytester: pytest.Pytester) -> None:
    # whether the broker's process has loaded the HTTP stack (pydantic_core, an extension module: in its maps)
    pytester.makepyfile(
        """
        import time

        def http_stack_loaded(broker):
            return "pydantic_core" in open(f"/proc/{broker.proc.pid}/maps").read()

        def test_first_client_alone(pulsar_broker, pulsar_client):
            pulsar_client.get_topic_partitions("persistent://public/default/probe")
            time.sleep(0.3)
            assert not http_stack_loaded(pulsar_broker)

        def test_after_the_first_test_it_is_built(pulsar_broker):
            deadline = time.monotonic() + 30
            while not http_stack_loaded(pulsar_broker):
                assert time.monotonic() < deadline, "the admin API was never built"
                time.sleep(0.05)

        def test_a_namespace_fixture_has_it(pulsar_namespace, pulsar_broker):
            assert pulsar_namespace in pulsar_broker.admin.namespaces("public")
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=3)


def test_a_first_test_with_a_namespace_gets_the_admin_api_at_once(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_namespace_first(pulsar_namespace, pulsar_broker, pulsar_client):
            assert pulsar_namespace in pulsar_broker.admin.namespaces("public")
            pulsar_client.create_producer(f"persistent://{pulsar_namespace}/t").send(b"x")
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1)
