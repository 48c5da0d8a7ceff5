"""The plugin's options: an external broker, broker settings, kept data, pytest-xdist, the factory."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from magnetar.client import Client, MessageId
from magnetar.testing import Broker

pytestmark = pytest.mark.timeout(240)


@pytest.fixture
def other_broker() -> Iterator[Broker]:
    """A second magnetar, started by this test, for the inner run to use as an external broker."""
    with Broker() as broker:
        yield broker


EXTERNAL_TEST = """
import pytest
from magnetar.testing import BrokerStartError

def test_uses_the_external_broker(pulsar_broker, pulsar_namespace, pulsar_client):
    assert pulsar_broker.service_url == {service_url!r}
    assert pulsar_broker.directory is None
    assert pulsar_namespace in pulsar_broker.admin.namespaces("public")
    pulsar_client.create_producer("persistent://public/default/from-inner").send(b"{tag}")
    with pytest.raises(BrokerStartError, match="external"):
        pulsar_broker.restart()
"""


def test_external_broker_options_run_the_fixtures_against_a_running_broker(
    pytester: pytest.Pytester, other_broker: Broker
) -> None:
    pytester.makepyfile(test_cli=EXTERNAL_TEST.format(service_url=other_broker.service_url, tag="cli"))
    result = pytester.runpytest("--pulsar-service-url", other_broker.service_url,
                                "--pulsar-http-url", other_broker.http_url)
    result.assert_outcomes(passed=1)
    pytester.makeini(f"[pytest]\nasyncio_default_fixture_loop_scope = function\npulsar_service_url = {other_broker.service_url}\n"
                     f"pulsar_http_url = {other_broker.http_url}\n")
    pytester.makepyfile(test_cli=EXTERNAL_TEST.format(service_url=other_broker.service_url, tag="ini"))
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    with Client(other_broker.service_url) as client:
        reader = client.create_reader("persistent://public/default/from-inner", MessageId.earliest)
        assert [reader.read_next(5000).data() for _ in range(2)] == [b"cli", b"ini"]
        assert not reader.has_message_available()
    assert other_broker.admin.namespaces("public") == ["public/default"]  # every test's namespace deleted


def test_an_external_broker_with_authentication_takes_a_token(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_secured(pulsar_client, pulsar_topic):
            consumer = pulsar_client.subscribe(pulsar_topic, "s")
            pulsar_client.create_producer(pulsar_topic).send(b"signed")
            assert consumer.receive(5000).data() == b"signed"
        """
    )
    with Broker(token_auth=True) as secured:
        urls = ("--pulsar-service-url", secured.service_url, "--pulsar-http-url", secured.http_url)
        token_file = pytester.path / "admin.token"
        token_file.write_text(secured.admin_token + "\n")
        result = pytester.runpytest(*urls, "--pulsar-token", f"file://{token_file}")
        result.assert_outcomes(passed=1)
        result = pytester.runpytest(*urls)
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(["*AdminError: PUT /admin/v2/namespaces/public/*: HTTP 401*"])
        assert secured.admin.namespaces("public") == ["public/default"]


def test_half_of_the_external_broker_options_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_nothing(): pass")
    result = pytester.runpytest("--pulsar-service-url", "pulsar://127.0.0.1:6650")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--pulsar-service-url and --pulsar-http-url go together*"])
    result = pytester.runpytest("--pulsar-broker-arg", "fsync")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--pulsar-broker-arg takes NAME=VALUE*"])


def test_broker_args_reach_the_session_broker(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from magnetar.client import MessageTooBig

        def test_small_messages_only(pulsar_client, pulsar_topic):
            producer = pulsar_client.create_producer(pulsar_topic, batching_enabled=False)
            producer.send(b"x" * 1000)
            with pytest.raises(MessageTooBig):
                producer.send(b"x" * 5000)
        """
    )
    result = pytester.runpytest("--pulsar-broker-arg", "max_message_size=2048")
    result.assert_outcomes(passed=1)


KEEP_TEST = """
import json

def test_fails(pulsar_broker, pulsar_client, pulsar_topic, pulsar_namespace):
    pulsar_client.create_producer(pulsar_topic).send(b"evidence")
    record = {{"directory": str(pulsar_broker.directory), "failed": pulsar_namespace}}
    json.dump(record, open({record!r}, "w"))
    assert {passes}

def test_passes(pulsar_namespace):
    record = json.load(open({record!r}))
    json.dump({{**record, "passed": pulsar_namespace}}, open({record!r}, "w"))
"""


def _run_recording(pytester: pytest.Pytester, passes: bool, *args: str) -> tuple[pytest.RunResult, Path, dict]:
    record = pytester.path / "record.json"
    pytester.makepyfile(test_keep=KEEP_TEST.format(record=str(record), passes=passes))
    result = pytester.runpytest(*args)
    recorded = json.loads(record.read_text())
    return result, Path(recorded["directory"]), recorded


def test_keep_data_keeps_a_failed_runs_broker_directory_and_says_where(pytester: pytest.Pytester) -> None:
    result, directory, recorded = _run_recording(pytester, False, "--pulsar-keep-data")
    try:
        result.assert_outcomes(failed=1, passed=1)
        result.stdout.fnmatch_lines(["*- magnetar -*", f"broker data kept in {directory}",
                                     f"magnetar: broker data kept in {directory}"])
        assert (directory / "broker.log").read_text().count("magnetar standalone ready") == 1
        segments = list((directory / "data").rglob("*.log"))
        assert sum(b"evidence" in segment.read_bytes() for segment in segments) == 1
        # the kept data opens in a broker: the failed test's namespace is there, the passed test's was deleted
        with Broker(directory=directory, keep_data=True) as inspector:
            assert inspector.admin.namespaces("public") == sorted(["public/default", recorded["failed"]])
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def test_without_keep_data_or_without_a_failure_the_directory_is_removed(pytester: pytest.Pytester) -> None:
    result, directory, _ = _run_recording(pytester, False)
    result.assert_outcomes(failed=1, passed=1)
    assert "broker data kept" not in result.stdout.str()
    assert not directory.exists()
    result, directory, _ = _run_recording(pytester, True, "--pulsar-keep-data")
    result.assert_outcomes(passed=2)
    assert not directory.exists()


def test_each_xdist_worker_has_its_own_broker_and_a_failed_ones_data_is_named(pytester: pytest.Pytester) -> None:
    records = pytester.path / "records"
    records.mkdir()
    pytester.makepyfile(
        f"""
        import os, pytest

        @pytest.mark.parametrize("n", range(6))
        def test_send(pulsar_broker, pulsar_client, pulsar_topic, n):
            pulsar_client.create_producer(pulsar_topic).send(b"x")
            worker = os.environ["PYTEST_XDIST_WORKER"]
            with open(os.path.join({str(records)!r}, f"{{worker}}-{{n}}"), "w") as f:
                f.write(f"{{pulsar_broker.service_url}} {{pulsar_topic}} {{pulsar_broker.directory}}")
            assert n != 5
        """
    )
    result = pytester.runpytest("-n", "2", "-p", "xdist", "--pulsar-keep-data")
    result.assert_outcomes(passed=5, failed=1)
    brokers: dict[str, set[tuple[str, str]]] = {}
    topics = []
    for path in records.iterdir():
        url, topic, directory = path.read_text().split()
        brokers.setdefault(path.name.split("-")[0], set()).add((url, directory))
        topics.append(topic)
    assert sorted(brokers) == ["gw0", "gw1"]
    assert all(len(broker) == 1 for broker in brokers.values())
    assert brokers["gw0"] != brokers["gw1"]
    assert len(set(topics)) == 6
    in_report = re.findall(r"^broker data kept in (\S+)$", result.stdout.str(), re.MULTILINE)
    in_summary = re.findall(r"^magnetar: broker data kept in (\S+)$", result.stdout.str(), re.MULTILINE)
    failed_worker = next(path.name.split("-")[0] for path in records.iterdir() if path.name.endswith("-5"))
    [(_url, failed_directory)] = brokers[failed_worker]
    [(_url, passed_directory)] = brokers["gw1" if failed_worker == "gw0" else "gw0"]
    assert in_summary == in_report == [failed_directory]
    assert Path(failed_directory, "broker.log").is_file() and not Path(passed_directory).exists()
    shutil.rmtree(failed_directory)


def test_factory_brokers_with_token_authentication(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        import pytest
        from magnetar.client import AuthenticationError, AuthenticationToken, AuthorizationError, Client
        from magnetar.testing import Admin, AdminError

        def test_token_auth(pulsar_broker_factory):
            broker = pulsar_broker_factory(token_auth=True)
            with pytest.raises(AdminError) as refused:
                Admin(broker.http_url).namespaces("public")
            assert refused.value.status == 401
            with Client(broker.service_url, operation_timeout_seconds=5) as anonymous:
                with pytest.raises(AuthenticationError):
                    anonymous.create_producer("public/default/orders")
            app = AuthenticationToken(broker.token("app"))
            with Client(broker.service_url, authentication=app, operation_timeout_seconds=5) as client:
                with pytest.raises(AuthorizationError):
                    client.create_producer("public/default/orders")
                broker.admin.grant_permission("public/default", "app", ["produce", "consume"])
                consumer = client.subscribe("public/default/orders", "billing")
                client.create_producer("public/default/orders").send(b"paid")
                assert consumer.receive(5000).data() == b"paid"

        def test_settings_of_their_own(pulsar_broker_factory):
            strict = pulsar_broker_factory({"deduplication_enabled": True, "cluster_name": "ci-east"})
            assert strict.admin.clusters() == ["ci-east"]
            with Client(strict.service_url) as client:
                producer = client.create_producer("public/default/d", producer_name="p1")
                producer.send(b"a", sequence_id=5)
                producer.send(b"a-again", sequence_id=5)
            stats = strict.admin.topic_stats("public/default/d")
            assert stats["msgInCounter"] == 1
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=2)


def test_the_report_of_a_failed_factory_test_names_the_kept_directory(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        """
        def test_fails(pulsar_broker_factory):
            pulsar_broker_factory({"fsync": "always"})
            assert False
        """
    )
    result = pytester.runpytest("--pulsar-keep-data")
    result.assert_outcomes(failed=1)
    kept = re.findall(r"magnetar: broker data kept in (\S+)", result.stdout.str())
    assert len(kept) == 1 and Path(kept[0], "data").is_dir()
    shutil.rmtree(kept[0])

