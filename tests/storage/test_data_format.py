"""The data directory's format version: stamped at creation, checked at start; an unversioned
directory (as released before the version existed, kept in ``fixtures/data-dir-v1``) opens with
everything in it and is stamped; a newer one is refused in one line, untouched."""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from pathlib import Path

import pulsar
import pytest
from pulsar.schema import Integer, JsonSchema, Record, String
from typer.testing import CliRunner

from magnetar.broker.config import BrokerConfig
from magnetar.cli.main import build_app
from magnetar.storage.data_format import FORMAT_FILE_NAME, FORMAT_VERSION, DataFormatError, check_format
from magnetar.testing import BrokerProcess, BrokerThread, free_port

FIXTURE = Path(__file__).parent / "fixtures" / "data-dir-v1"


class User(Record):
    """The schema the fixture's topic ``users`` was written with."""

    name = String()
    age = Integer()


def snapshot(data_dir: Path) -> dict[str, str]:
    return {
        str(Path(root, name).relative_to(data_dir)): hashlib.sha256(Path(root, name).read_bytes()).hexdigest()
        for root, _dirs, names in os.walk(data_dir)
        for name in names
    }


def new_client(url: str) -> pulsar.Client:
    return pulsar.Client(url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))


def test_a_new_directory_is_stamped_with_the_current_format(tmp_path: Path) -> None:
    with BrokerThread(BrokerConfig(data_dir=tmp_path / "data", port=0, http_port=0, fsync="never")):
        assert (tmp_path / "data" / FORMAT_FILE_NAME).read_text() == f"magnetar-data {FORMAT_VERSION}\n"
    assert check_format(tmp_path / "data") == FORMAT_VERSION


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (f"magnetar-data {FORMAT_VERSION + 1}\n",
         f"has format version {FORMAT_VERSION + 1}, newer than this magnetar reads (up to {FORMAT_VERSION}): use a newer magnetar"),
        ("not a format\n", "is not a magnetar format file"),
    ],
)
def test_a_newer_or_unknown_format_is_refused_untouched(tmp_path: Path, content: str, reason: str) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(FIXTURE, data_dir)
    (data_dir / FORMAT_FILE_NAME).write_text(content)
    before = snapshot(data_dir)
    command = BrokerProcess(data_dir, port=free_port(), http_port=free_port()).command()
    started = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert started.returncode == 1
    assert started.stderr.startswith("error: cannot start broker: ") and started.stderr.count("\n") == 1
    assert reason in started.stderr
    with pytest.raises(DataFormatError):
        check_format(data_dir)
    repaired = CliRunner().invoke(build_app(["repair"]), ["repair", str(data_dir)])
    assert repaired.exit_code == 2 and reason in repaired.output
    # nothing written but the (pre-existing or new, empty) lock files
    after = snapshot(data_dir)
    assert {k: v for k, v in after.items() if k != "LOCK"} == before


def test_the_unversioned_fixture_of_the_previous_release_opens_with_every_message(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    shutil.copytree(FIXTURE, data_dir)
    assert check_format(data_dir) is None
    for restart in range(2):  # unversioned, then as stamped
        with BrokerProcess(data_dir, args=("--fsync", "always")) as broker:
            assert check_format(data_dir) == FORMAT_VERSION
            client = new_client(broker.service_url)
            try:
                billing = client.subscribe("persistent://public/default/orders", "billing")
                got = [billing.receive(10_000) for _ in range(5)]
                assert [m.data() for m in got] == [f"order-{i}".encode() for i in (4, 5, 7, 8, 9)]
                with pytest.raises(pulsar.Timeout):
                    billing.receive(300)
                reader = client.create_reader("persistent://public/default/orders", pulsar.MessageId.earliest)
                orders = [reader.read_next(10_000) for _ in range(10)]
                assert [(m.data(), m.partition_key(), m.properties()) for m in orders] == [
                    (f"order-{i}".encode(), f"customer-{i % 3}", {"n": str(i)}) for i in range(10)
                ]
                users = client.subscribe("persistent://public/default/users", f"u{restart}", schema=JsonSchema(User),
                                         initial_position=pulsar.InitialPosition.Earliest)
                assert [(u.value().name, u.value().age) for u in (users.receive(10_000) for _ in range(3))] == [
                    ("ada", 36), ("alan", 41), ("grace", 85)
                ]
                events: list[bytes] = []
                for partition in range(2):
                    topic = f"persistent://public/default/events-partition-{partition}"
                    part = client.create_reader(topic, pulsar.MessageId.earliest)
                    while True:
                        try:
                            events.append(part.read_next(1_000).data())
                        except pulsar.Timeout:
                            break
                assert sorted(events) == [f"event-{i}".encode() for i in range(4)]
                assert client.get_topic_partitions("persistent://public/default/events") == [
                    f"persistent://public/default/events-partition-{p}" for p in range(2)
                ]
            finally:
                client.close()
