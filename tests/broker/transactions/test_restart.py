"""After a restart the topic's transactions are what they were: committed messages readable, aborted
ones never, an open one aborted by the coordinator (its messages never readable, later ones again)."""

from __future__ import annotations

import json
import time
import uuid
from pathlib import Path

import pulsar

from magnetar.protocol.enums import CommandType
from magnetar.storage.metadata import MetadataStore
from magnetar.testing import BrokerProcess

from ..session.test_wire_errors import WireClient
from . import wire_txn


def _read_all(service_url: str, topic: str) -> list[bytes]:
    client = pulsar.Client(service_url)
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        out = []
        while reader.has_message_available():
            out.append(reader.read_next(timeout_millis=5000).data())
        return out
    finally:
        client.close()


def test_restart_keeps_every_outcome(tmp_path: Path) -> None:
    topic = f"persistent://public/default/txn-restart-{uuid.uuid4().hex[:8]}"
    broker = BrokerProcess(tmp_path / "data").start()
    c = WireClient(broker.port)
    try:
        c.connect()
        wire_txn.tc_connect(c)
        wire_txn.producer(c, topic, 1)
        outcomes = [("c", True), ("a", False)]
        for sequence, (name, commit) in enumerate(outcomes):
            txn = wire_txn.new_txn(c)
            wire_txn.add_partition(c, txn, topic)
            assert wire_txn.send(c, 1, sequence, name.encode(), txn).type == CommandType.SEND_RECEIPT
            assert not wire_txn.end_txn(c, txn, commit).HasField("error")
        time.sleep(2.5)  # the buffer's snapshot is stored; what follows is replayed from the ledger
        committed_late = wire_txn.new_txn(c)
        wire_txn.add_partition(c, committed_late, topic)
        wire_txn.send(c, 1, 10, b"c2", committed_late)
        assert not wire_txn.end_txn(c, committed_late, True).HasField("error")
        left_open = wire_txn.new_txn(c)
        wire_txn.add_partition(c, left_open, topic)
        wire_txn.send(c, 1, 11, b"open", left_open)
        assert wire_txn.send(c, 1, 12, b"plain", None).type == CommandType.SEND_RECEIPT
    finally:
        c.close()
    broker.stop()
    with MetadataStore(tmp_path / "data" / "metadata.db") as metadata:
        snapshot = json.loads(metadata.get_kv(f"txn-buffer/{topic}") or b"{}")
    assert snapshot["position"] >= 3 and len(snapshot["ended"]) >= 2  # what a load need not replay
    broker = BrokerProcess(tmp_path / "data", port=broker.port, http_port=broker.http_port).start()
    try:
        deadline = time.monotonic() + 10
        seen = _read_all(broker.service_url, topic)
        while seen != [b"c", b"c2", b"plain"] and time.monotonic() < deadline:
            time.sleep(0.3)  # the coordinator aborts the open transaction just after the start
            seen = _read_all(broker.service_url, topic)
        assert seen == [b"c", b"c2", b"plain"]
    finally:
        broker.stop()
