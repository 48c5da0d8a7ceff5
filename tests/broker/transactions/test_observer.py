"""Transactions driven with raw frames, observed with the official Python client (it has no
transaction API): nothing of an open transaction is received, everything after its commit, nothing
after its abort; readers and has_message_available agree."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Iterator

import pulsar
import pytest

from magnetar.protocol.enums import CommandType, ServerError, TxnAction
from magnetar.protocol.schema import BaseCommand
from magnetar.testing import BrokerProcess

from ..session.test_wire_errors import WireClient
from . import wire_txn


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("txn-broker") / "data") as proc:
        yield proc


@pytest.fixture
def wire(broker: BrokerProcess) -> Iterator[WireClient]:
    c = WireClient(broker.port)
    c.connect()
    assert not wire_txn.tc_connect(c).HasField("error")
    yield c
    c.close()


def _drain(consumer: pulsar.Consumer, timeout_ms: int = 1000) -> list[bytes]:
    out = []
    while True:
        try:
            msg = consumer.receive(timeout_millis=timeout_ms)
        except pulsar.Timeout:
            return out
        out.append(msg.data())
        consumer.acknowledge(msg)


def test_open_commit_abort_as_an_observer_sees_them(broker: BrokerProcess, wire: WireClient) -> None:
    topic = f"persistent://public/default/txn-observed-{uuid.uuid4().hex[:8]}"
    client = pulsar.Client(broker.service_url)
    try:
        consumer = client.subscribe(topic, "observer", initial_position=pulsar.InitialPosition.Earliest)
        wire_txn.producer(wire, topic, 1)
        txn = wire_txn.new_txn(wire)
        assert not wire_txn.add_partition(wire, txn, topic).HasField("error")
        for i in range(3):
            assert wire_txn.send(wire, 1, i, f"a{i}".encode(), txn).type == CommandType.SEND_RECEIPT
        # a plain message after the open transaction's first one waits for it (max-read position)
        assert wire_txn.send(wire, 1, 3, b"p1", None).type == CommandType.SEND_RECEIPT
        assert _drain(consumer) == []
        assert not wire_txn.end_txn(wire, txn, commit=True).HasField("error")
        assert _drain(consumer) == [b"a0", b"a1", b"a2", b"p1"]

        aborted = wire_txn.new_txn(wire)
        wire_txn.add_partition(wire, aborted, topic)
        for i in range(2):
            assert wire_txn.send(wire, 1, 10 + i, f"b{i}".encode(), aborted).type == CommandType.SEND_RECEIPT
        assert not wire_txn.end_txn(wire, aborted, commit=False).HasField("error")
        assert wire_txn.send(wire, 1, 20, b"p2", None).type == CommandType.SEND_RECEIPT
        assert _drain(consumer) == [b"p2"]
        _, stats = _get_json(broker, f"/admin/v2/persistent/{topic.replace('persistent://', '')}/stats")
        assert (stats["ongoingTxnCount"], stats["committedTxnCount"], stats["abortedTxnCount"]) == (0, 1, 1)

        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        seen = []
        while reader.has_message_available():
            seen.append(reader.read_next(timeout_millis=5000).data())
        assert seen == [b"a0", b"a1", b"a2", b"p1", b"p2"]
    finally:
        client.close()


def test_end_twice_and_send_after_end_are_refused(wire: WireClient) -> None:
    topic = f"persistent://public/default/txn-refused-{uuid.uuid4().hex[:8]}"
    wire_txn.producer(wire, topic, 2)
    txn = wire_txn.new_txn(wire)
    wire_txn.add_partition(wire, txn, topic)
    assert wire_txn.send(wire, 2, 0, b"x", txn).type == CommandType.SEND_RECEIPT
    assert not wire_txn.end_txn(wire, txn, commit=True).HasField("error")
    again = wire_txn.end_txn(wire, txn, commit=False)
    assert again.error == ServerError.TransactionNotFound
    assert again.message == f"The transaction with this txdID `({txn[0]},{txn[1]})`not found "
    late = wire_txn.send(wire, 2, 1, b"late", txn)
    assert late.type == CommandType.SEND_ERROR
    # as Pulsar's transaction buffer: NotAllowed, naming the highest sequence id of the send
    assert (late.command.send_error.error, late.command.send_error.sequence_id) == (ServerError.NotAllowedError, 1)
    assert late.command.send_error.message == (
        f"Transaction [({txn[0]},{txn[1]})] has been ended. Please use a new transaction to send message.")
    never = wire_txn.send(wire, 2, 2, b"never", (0, 999_999))
    assert never.command.send_error.error == ServerError.NotAllowedError
    unknown = wire_txn.add_partition(wire, (0, 999_999), topic)
    assert unknown.error == ServerError.TransactionNotFound
    other_tc = wire_txn.add_partition(wire, (5, 1), topic)
    assert other_tc.error == ServerError.TransactionCoordinatorNotFound


def test_a_timed_out_transaction_is_aborted(broker: BrokerProcess, wire: WireClient) -> None:
    topic = f"persistent://public/default/txn-timeout-{uuid.uuid4().hex[:8]}"
    client = pulsar.Client(broker.service_url)
    try:
        consumer = client.subscribe(topic, "observer", initial_position=pulsar.InitialPosition.Earliest)
        wire_txn.producer(wire, topic, 3)
        txn = wire_txn.new_txn(wire, timeout_ms=500)
        wire_txn.add_partition(wire, txn, topic)
        assert wire_txn.send(wire, 3, 0, b"never", txn).type == CommandType.SEND_RECEIPT
        assert wire_txn.send(wire, 3, 1, b"after", None).type == CommandType.SEND_RECEIPT
        # the coordinator aborts it (checked every second): the plain message goes out, the other never
        assert _drain(consumer, 4000) == [b"after"]
        assert wire_txn.end_txn(wire, txn, commit=True).error == ServerError.TransactionNotFound
    finally:
        client.close()


def _metric(broker: BrokerProcess, name: str) -> float:
    with urllib.request.urlopen(f"{broker.http_url}/metrics", timeout=10) as response:
        text = response.read().decode()
    for line in text.splitlines():
        if line.startswith(name + "{") and 'coordinator_id="0"' in line:
            return float(line.rsplit(" ", 1)[1])
    raise AssertionError(f"{name} not in /metrics")


def _get_json(broker: BrokerProcess, path: str) -> tuple[int, dict]:
    try:
        with urllib.request.urlopen(f"{broker.http_url}{path}", timeout=10) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read() or b"{}")


def test_admin_metadata_and_metrics(broker: BrokerProcess, wire: WireClient) -> None:
    topic = f"persistent://public/default/txn-admin-{uuid.uuid4().hex[:8]}"
    before = {n: _metric(broker, n) for n in ("pulsar_txn_created_total", "pulsar_txn_committed_total", "pulsar_txn_aborted_total")}
    wire_txn.producer(wire, topic, 4)
    txn = wire_txn.new_txn(wire)
    wire_txn.add_partition(wire, txn, topic)
    wire_txn.add_subscription(wire, txn, topic, "sub-a")
    assert wire_txn.send(wire, 4, 0, b"m", txn).type == CommandType.SEND_RECEIPT
    status, meta = _get_json(broker, f"/admin/v3/transactions/transactionMetadata/{txn[0]}/{txn[1]}")
    assert status == 200
    assert (meta["status"], list(meta["producedPartitions"]), meta["ackedPartitions"]) == (
        "OPEN", [topic], {topic: {"sub-a": {"cumulativeAckPosition": None}}}
    )
    assert _metric(broker, "pulsar_txn_active_count") >= 1
    path = topic.replace("persistent://", "")
    status, in_buffer = _get_json(broker, f"/admin/v3/transactions/transactionInBufferStats/{path}/{txn[0]}/{txn[1]}")
    assert status == 200 and in_buffer["aborted"] is False and in_buffer["startPosition"] is not None
    status, slow = _get_json(broker, "/admin/v3/transactions/slowTransactions/0")
    assert status == 200 and f"({txn[0]},{txn[1]})" in slow
    assert not wire_txn.end_txn(wire, txn, commit=True).HasField("error")
    other = wire_txn.new_txn(wire)
    assert not wire_txn.end_txn(wire, other, commit=False).HasField("error")
    status, _ = _get_json(broker, f"/admin/v3/transactions/transactionMetadata/{txn[0]}/{txn[1]}")
    assert status == 404  # an ended transaction is forgotten, as in Pulsar
    status, stats = _get_json(broker, "/admin/v3/transactions/coordinatorStats")
    assert status == 200 and stats["0"]["state"] == "Ready"
    assert _metric(broker, "pulsar_txn_created_total") - before["pulsar_txn_created_total"] == 2
    assert _metric(broker, "pulsar_txn_committed_total") - before["pulsar_txn_committed_total"] == 1
    assert _metric(broker, "pulsar_txn_aborted_total") - before["pulsar_txn_aborted_total"] == 1


def test_peek_and_compaction_never_see_markers_or_aborted_messages(broker: BrokerProcess, wire: WireClient) -> None:
    topic = f"persistent://public/default/txn-compact-{uuid.uuid4().hex[:8]}"
    path = topic.replace("persistent://", "")
    client = pulsar.Client(broker.service_url)
    try:
        client.subscribe(topic, "peeker", initial_position=pulsar.InitialPosition.Earliest).close()
        wire_txn.producer(wire, topic, 5)
        committed = wire_txn.new_txn(wire)
        wire_txn.add_partition(wire, committed, topic)
        wire_txn.send(wire, 5, 0, b"v1", committed, key="k1")
        assert not wire_txn.end_txn(wire, committed, commit=True).HasField("error")
        aborted = wire_txn.new_txn(wire)
        wire_txn.add_partition(wire, aborted, topic)
        wire_txn.send(wire, 5, 1, b"bad", aborted, key="k1")
        wire_txn.send(wire, 5, 2, b"bad", aborted, key="k2")
        assert not wire_txn.end_txn(wire, aborted, commit=False).HasField("error")
        with urllib.request.urlopen(f"{broker.http_url}/admin/v2/persistent/{path}/subscription/peeker/position/1") as r:
            assert r.read() == b"v1"
        status, _ = _get_json(broker, f"/admin/v2/persistent/{path}/subscription/peeker/position/2")
        assert status == 404
        request = urllib.request.Request(f"{broker.http_url}/admin/v2/persistent/{path}/compaction", method="PUT")
        urllib.request.urlopen(request, timeout=10).close()
        for _ in range(100):
            _, status_body = _get_json(broker, f"/admin/v2/persistent/{path}/compaction")
            if status_body.get("status") != "RUNNING":
                break
            time.sleep(0.1)
        assert status_body.get("status") == "SUCCESS", status_body
        reader = client.create_reader(topic, pulsar.MessageId.earliest, is_read_compacted=True)
        seen = []
        while reader.has_message_available():
            msg = reader.read_next(timeout_millis=5000)
            seen.append((msg.partition_key(), msg.data()))
        assert seen == [("k1", b"v1")]
    finally:
        client.close()


def test_http_lookup_of_a_coordinator_partition(broker: BrokerProcess) -> None:
    # the Go client looks the coordinators up over HTTP when its URL is http(s)://
    path = "/lookup/v2/topic/persistent/pulsar/system/transaction_coordinator_assign-partition-0"
    status, body = _get_json(broker, path)
    assert (status, body["brokerUrl"]) == (200, broker.service_url)


def test_a_retried_end_txn_waits_for_the_same_end(broker: BrokerProcess, wire: WireClient) -> None:
    topic = f"persistent://public/default/txn-retried-{uuid.uuid4().hex[:8]}"
    wire_txn.producer(wire, topic, 6)
    txn = wire_txn.new_txn(wire)
    wire_txn.add_partition(wire, txn, topic)
    wire_txn.send(wire, 6, 0, b"once", txn)
    before = _metric(broker, "pulsar_txn_committed_total")
    request_ids = []
    for _ in range(2):  # both sent before either is answered
        cmd = BaseCommand(type=CommandType.END_TXN)
        cmd.end_txn.request_id = wire.next_request_id()
        cmd.end_txn.txnid_most_bits, cmd.end_txn.txnid_least_bits = txn
        cmd.end_txn.txn_action = TxnAction.COMMIT
        request_ids.append(cmd.end_txn.request_id)
        wire.send(cmd)
    answers = [wire.expect(CommandType.END_TXN_RESPONSE).command.end_txn_response for _ in range(2)]
    assert sorted(a.request_id for a in answers) == sorted(request_ids)
    # the first is answered with success; the retry too if it came while the end was under way, else
    # TransactionNotFound (the transaction is forgotten once ended, as in Pulsar): never a second end
    first = next(a for a in answers if a.request_id == request_ids[0])
    retry = next(a for a in answers if a.request_id == request_ids[1])
    assert not first.HasField("error")
    assert not retry.HasField("error") or retry.error == ServerError.TransactionNotFound
    assert _metric(broker, "pulsar_txn_committed_total") - before == 1
    client = pulsar.Client(broker.service_url)
    try:
        reader = client.create_reader(topic, pulsar.MessageId.earliest)
        seen = []
        while reader.has_message_available():
            seen.append(reader.read_next(timeout_millis=5000).data())
        assert seen == [b"once"]
    finally:
        client.close()
