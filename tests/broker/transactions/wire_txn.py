"""Driving transactions with raw protocol frames (magnetar.protocol only), for the broker's tests."""

from __future__ import annotations

import time

from magnetar.protocol.enums import CommandType, TxnAction
from magnetar.protocol.framing import encode_entry, encode_payload_command
from magnetar.protocol.schema import BaseCommand, MessageMetadata

from ..session.test_wire_errors import WireClient


def tc_connect(c: WireClient, tc_id: int = 0):  # noqa: ANN201 - the response
    cmd = BaseCommand(type=CommandType.TC_CLIENT_CONNECT_REQUEST)
    cmd.tc_client_connect_request.request_id = c.next_request_id()
    cmd.tc_client_connect_request.tc_id = tc_id
    c.send(cmd)
    return c.expect(CommandType.TC_CLIENT_CONNECT_RESPONSE).command.tc_client_connect_response


def new_txn(c: WireClient, timeout_ms: int = 60_000, tc_id: int = 0) -> tuple[int, int]:
    """NEW_TXN; the transaction id (asserts success)."""
    cmd = BaseCommand(type=CommandType.NEW_TXN)
    cmd.new_txn.request_id = c.next_request_id()
    cmd.new_txn.txn_ttl_seconds = timeout_ms
    cmd.new_txn.tc_id = tc_id
    c.send(cmd)
    resp = c.expect(CommandType.NEW_TXN_RESPONSE).command.new_txn_response
    assert not resp.HasField("error"), resp
    return resp.txnid_most_bits, resp.txnid_least_bits


def add_partition(c: WireClient, txn: tuple[int, int], *topics: str):  # noqa: ANN201
    cmd = BaseCommand(type=CommandType.ADD_PARTITION_TO_TXN)
    req = cmd.add_partition_to_txn
    req.request_id = c.next_request_id()
    req.txnid_most_bits, req.txnid_least_bits = txn
    req.partitions.extend(topics)
    c.send(cmd)
    return c.expect(CommandType.ADD_PARTITION_TO_TXN_RESPONSE).command.add_partition_to_txn_response


def add_subscription(c: WireClient, txn: tuple[int, int], topic: str, sub: str):  # noqa: ANN201
    cmd = BaseCommand(type=CommandType.ADD_SUBSCRIPTION_TO_TXN)
    req = cmd.add_subscription_to_txn
    req.request_id = c.next_request_id()
    req.txnid_most_bits, req.txnid_least_bits = txn
    s = req.subscription.add()
    s.topic, s.subscription = topic, sub
    c.send(cmd)
    return c.expect(CommandType.ADD_SUBSCRIPTION_TO_TXN_RESPONSE).command.add_subscription_to_txn_response


def end_txn(c: WireClient, txn: tuple[int, int], commit: bool, timeout: float = 10.0):  # noqa: ANN201
    cmd = BaseCommand(type=CommandType.END_TXN)
    req = cmd.end_txn
    req.request_id = c.next_request_id()
    req.txnid_most_bits, req.txnid_least_bits = txn
    req.txn_action = TxnAction.COMMIT if commit else TxnAction.ABORT
    c.send(cmd)
    return c.expect(CommandType.END_TXN_RESPONSE, timeout).command.end_txn_response


def send(c: WireClient, producer_id: int, sequence_id: int, payload: bytes, txn: tuple[int, int] | None,
         key: str | None = None):  # noqa: ANN201
    """SEND one message (in ``txn`` when given, the id in the command only, as the Go client); the
    SEND_RECEIPT or SEND_ERROR."""
    meta = MessageMetadata(producer_name=f"wire-{producer_id}", sequence_id=sequence_id, publish_time=int(time.time() * 1000))
    if key is not None:
        meta.partition_key = key
    cmd = BaseCommand(type=CommandType.SEND)
    cmd.send.producer_id = producer_id
    cmd.send.sequence_id = sequence_id
    cmd.send.num_messages = 1
    if txn is not None:
        cmd.send.txnid_most_bits, cmd.send.txnid_least_bits = txn
    c.send_raw(encode_payload_command(cmd, encode_entry(meta, payload)))
    return c.recv()


def producer(c: WireClient, topic: str, producer_id: int) -> None:
    cmd = BaseCommand(type=CommandType.PRODUCER)
    cmd.producer.topic = topic
    cmd.producer.producer_id = producer_id
    cmd.producer.request_id = c.next_request_id()
    cmd.producer.producer_name = f"wire-{producer_id}"
    cmd.producer.txn_enabled = True
    c.send(cmd)
    c.expect(CommandType.PRODUCER_SUCCESS)
