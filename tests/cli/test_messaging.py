"""`magnetar produce` and `consume` through the real console entry point (`perf`: tests/cli/perf/)."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from magnetar.testing import BrokerProcess


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("cli-messaging") / "data") as b:
        yield b


def magnetar(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "magnetar.cli.main", *args], capture_output=True, text=True, timeout=timeout
    )


def test_produce_then_consume_shows_ids_keys_properties_and_payloads(broker: BrokerProcess) -> None:
    topic = f"cli-{uuid.uuid4().hex[:8]}"
    out = magnetar("produce", topic, "-m", "hello", "-m", "world", "-n", "2", "-k", "k1", "-p", "a=b", "-u", broker.service_url)
    assert out.returncode == 0, out.stderr
    ids = out.stdout.split()
    assert len(ids) == 4 and len(set(ids)) == 4
    assert "4 messages produced" in out.stderr
    out = magnetar("consume", topic, "-s", "sub", "--earliest", "-n", "4", "--timeout", "10", "-u", broker.service_url)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.strip().splitlines()
    assert [line.rsplit("content=", 1)[1] for line in lines] == ["hello", "world", "hello", "world"]
    assert all("key=k1" in line and "properties=a=b" in line for line in lines)
    assert [line.split()[0][3:] for line in lines] == ids


def test_consume_json_and_file_payload(broker: BrokerProcess, tmp_path: Path) -> None:
    topic = f"cli-{uuid.uuid4().hex[:8]}"
    payload = tmp_path / "msg.txt"
    payload.write_text("from a file")
    assert magnetar("produce", topic, "-f", str(payload), "-u", broker.service_url).returncode == 0
    out = magnetar("consume", topic, "-s", "s", "--earliest", "--json", "--timeout", "10", "-u", broker.service_url)
    assert out.returncode == 0, out.stderr
    import json

    record = json.loads(out.stdout)
    assert record["data"] == "from a file" and record["key"] is None and record["properties"] == {}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("produce", "t"), "nothing to send"),
        (("produce", "t", "-m", "x", "-p", "novalue"), "is not key=value"),
        (("produce", "t", "-m", "x", "-n", "0"), "--num-produce must be at least 1"),
        (("produce", "t", "-f", "/nonexistent/file"), "cannot read /nonexistent/file"),
        (("consume", "t", "-s", "s", "-t", "bogus"), "unknown subscription type 'bogus'"),
        (("produce", "bad://name/x", "-m", "x"), "error:"),
    ],
)
def test_bad_input_prints_one_error_line_and_fails(broker: BrokerProcess, args: tuple[str, ...], message: str) -> None:
    out = magnetar(*args, "-u", broker.service_url)
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], out.stderr


def test_unreachable_broker_is_one_line(broker: BrokerProcess) -> None:
    out = magnetar("produce", "t", "-m", "x", "-u", "pulsar://127.0.0.1:1")
    assert out.returncode == 1
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ConnectError:")
    assert "could not connect to 127.0.0.1:1: Connection refused" in lines[0]


def test_consume_times_out_with_a_count(broker: BrokerProcess) -> None:
    out = magnetar("consume", f"empty-{uuid.uuid4().hex[:8]}", "-s", "s", "--timeout", "0.5", "-u", broker.service_url)
    assert out.returncode == 1
    assert "no message within 0.5 s (0 received)" in out.stderr

