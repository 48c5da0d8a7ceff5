"""kill -9 of the broker in the middle of consume-transform-produce transactions.

A raw-frame driver moves messages from an input topic to an output topic, one input message per
transaction, two output messages each (so "never half" can be seen). The broker is killed at random
points (between any two steps of a transaction, including right after END_TXN was sent and before
it was answered) and restarted on the same data. Afterwards, read with the official client:

- every transaction whose commit was answered has both its output messages, exactly once;
- no transaction that was still open (never asked to commit) has any;
- a transaction whose commit was sent but not answered has both or none;
- every input message is either acknowledged by a committed transaction or delivered again.

The driver goes on after each restart with what the subscription delivers (inputs of transactions
the crash aborted come again) until every input was committed: the output then holds each input's
two messages exactly once, and nothing is left to deliver.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable
from pathlib import Path

import pulsar

from magnetar.protocol.enums import AckType, CommandType, InitialPosition, ServerError, SubType
from magnetar.protocol.framing import split_entry
from magnetar.protocol.schema import BaseCommand
from magnetar.testing import BrokerProcess

from ..session.test_wire_errors import ConnectionClosed, WireClient
from . import wire_txn

TRANSACTIONS = 30
KILLS = 3
SUB = "ctp"


class Driver:
    """One connection doing consume-transform-produce transactions until the broker dies."""

    def __init__(self, broker: BrokerProcess, input_topic: str, output_topic: str) -> None:
        self.c = WireClient(broker.port)
        self.c.connect()
        wire_txn.tc_connect(self.c)
        self.input, self.output = input_topic, output_topic
        wire_txn.producer(self.c, output_topic, 1)
        sub = BaseCommand(type=CommandType.SUBSCRIBE)
        s = sub.subscribe
        s.topic, s.subscription, s.sub_type, s.consumer_id = input_topic, SUB, SubType.Exclusive, 1
        s.request_id = self.c.next_request_id()
        s.initial_position = InitialPosition.Earliest
        self.c.send(sub)
        self.c.expect(CommandType.SUCCESS)
        self.sequence = int(time.time() * 1000)

    def next_message(self) -> tuple[int, int, str]:
        """One permit at a time, so that no MESSAGE comes between a request and its answer."""
        flow = BaseCommand(type=CommandType.FLOW)
        flow.flow.consumer_id, flow.flow.message_permits = 1, 1
        self.c.send(flow)
        while True:
            frame = self.c.recv()
            if frame.type == CommandType.MESSAGE:
                mid = frame.command.message.message_id
                return mid.ledger_id, mid.entry_id, bytes(split_entry(frame.entry)[1]).decode()

    def ack(self, txn: tuple[int, int], ledger_id: int, entry_id: int) -> None:
        cmd = BaseCommand(type=CommandType.ACK)
        ack = cmd.ack
        ack.consumer_id, ack.ack_type = 1, AckType.Individual
        mid = ack.message_id.add()
        mid.ledger_id, mid.entry_id = ledger_id, entry_id
        ack.txnid_most_bits, ack.txnid_least_bits = txn
        ack.request_id = self.c.next_request_id()
        self.c.send(cmd)
        resp = self.c.expect(CommandType.ACK_RESPONSE).command.ack_response
        assert not resp.HasField("error"), resp

    def transaction(self, kill_at: str | None, kill: Callable[[], None], outcome: dict[str, str]) -> str:
        """One transaction; ``kill_at`` names the step before which the broker is killed."""
        ledger_id, entry_id, value = self.next_message()
        steps = ["new", "partition", "subscription", "send", "ack", "end", "answer"]
        txn = None
        for step in steps:
            if step == kill_at:
                outcome[value] = "unanswered" if step == "answer" else "open"
                kill()
                raise ConnectionClosed()
            if step == "new":
                txn = wire_txn.new_txn(self.c)
            elif step == "partition":
                assert not wire_txn.add_partition(self.c, txn, self.output).HasField("error")
            elif step == "subscription":
                assert not wire_txn.add_subscription(self.c, txn, self.input, SUB).HasField("error")
            elif step == "send":
                for part in ("a", "b"):
                    self.sequence += 1
                    receipt = wire_txn.send(self.c, 1, self.sequence, f"{value}-{part}".encode(), txn)
                    assert receipt.type == CommandType.SEND_RECEIPT, receipt.command
            elif step == "ack":
                self.ack(txn, ledger_id, entry_id)
            elif step == "end":
                cmd = BaseCommand(type=CommandType.END_TXN)
                end = cmd.end_txn
                end.request_id = self.c.next_request_id()
                end.txnid_most_bits, end.txnid_least_bits = txn
                end.txn_action = 0
                self.c.send(cmd)
            elif step == "answer":
                resp = self.c.expect(CommandType.END_TXN_RESPONSE).command.end_txn_response
                assert not resp.HasField("error") or resp.error == ServerError.UnknownError, resp
                outcome[value] = "committed"
        return value


def test_kill_minus_nine_during_consume_transform_produce(tmp_path: Path) -> None:
    rng = random.Random(23)
    data = tmp_path / "data"
    input_topic = f"persistent://public/default/crash-in-{uuid.uuid4().hex[:8]}"
    output_topic = f"persistent://public/default/crash-out-{uuid.uuid4().hex[:8]}"
    broker = BrokerProcess(data).start()
    client = pulsar.Client(broker.service_url)
    producer = client.create_producer(input_topic)
    inputs = [f"in-{i}" for i in range(TRANSACTIONS)]
    for value in inputs:
        producer.send(value.encode())
    client.close()
    kill_points = sorted(rng.sample(range(1, TRANSACTIONS - 2), KILLS))
    outcome: dict[str, str] = {}
    started = kills = 0
    while sum(1 for v in outcome.values() if v == "committed") < TRANSACTIONS:
        assert started < TRANSACTIONS + 4 * KILLS, f"no progress: {outcome}"
        driver = Driver(broker, input_topic, output_topic)
        try:
            while sum(1 for v in outcome.values() if v == "committed") < TRANSACTIONS:
                kill_at = None
                if kills < KILLS and started >= kill_points[kills]:
                    kill_at = rng.choice(["new", "partition", "subscription", "send", "ack", "end", "answer"])
                started += 1
                driver.transaction(kill_at, broker.kill, outcome)
        except ConnectionClosed:
            assert broker.proc is None, "the connection closed without a kill"
            kills += 1
            broker = BrokerProcess(data, port=broker.port, http_port=broker.http_port).start()
            time.sleep(2.5)  # the coordinator ends what the crash left unfinished
        finally:
            driver.c.close()
    assert kills == KILLS

    client = pulsar.Client(broker.service_url)
    try:
        reader = client.create_reader(output_topic, pulsar.MessageId.earliest)
        outputs = []
        while reader.has_message_available():
            outputs.append(reader.read_next(timeout_millis=5000).data().decode())
        consumer = client.subscribe(input_topic, SUB, consumer_type=pulsar.ConsumerType.Exclusive)
        redelivered = []
        while True:
            try:
                redelivered.append(consumer.receive(timeout_millis=1500).data().decode())
            except pulsar.Timeout:
                break
    finally:
        client.close()
        broker.stop()
    # every input was committed exactly once: both its outputs visible once, never half, never twice
    expected = sorted(f"{v}-{part}" for v in inputs for part in ("a", "b"))
    assert sorted(outputs) == expected
    assert redelivered == []
