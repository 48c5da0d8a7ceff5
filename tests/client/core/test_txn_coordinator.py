"""The transaction coordinator client without a broker: discovery through the assign topic's
partitions, TC_CLIENT_CONNECT per coordinator, NEW_TXN in turn, commands routed by the id's most
significant bits, a lost connection connected again."""

from __future__ import annotations

from typing import Any

import pytest

from magnetar.client.core.txn_coordinator import TC_ASSIGN_TOPIC, TransactionCoordinatorClient
from magnetar.client.exceptions import ConnectError, TransactionCoordinatorNotFound
from magnetar.protocol.enums import CommandType
from magnetar.protocol.framing import sub_command
from magnetar.protocol.schema import BaseCommand

from ..conftest import run


class FakeConnection:
    def __init__(self, name: str) -> None:
        self.name = name
        self.closed = False
        self.sent: list[BaseCommand] = []
        self._ids = iter(range(1000))
        self.fail_next: Exception | None = None

    def new_request_id(self) -> int:
        return next(self._ids)

    async def request(self, cmd: BaseCommand, rid: int, timeout: float) -> BaseCommand:
        if self.fail_next is not None:
            exc, self.fail_next = self.fail_next, None
            self.closed = True
            raise exc
        self.sent.append(cmd)
        answer = BaseCommand(type=CommandType.NEW_TXN_RESPONSE)
        if cmd.type == CommandType.NEW_TXN:
            answer.new_txn_response.txnid_most_bits = cmd.new_txn.tc_id
            answer.new_txn_response.txnid_least_bits = len(self.sent)
        return answer


class FakeLookup:
    def __init__(self, partitions: int) -> None:
        self.n = partitions
        self.looked_up: list[str] = []
        self.conns: dict[str, FakeConnection] = {}

    async def partitions(self, topic: str) -> int:
        assert topic == TC_ASSIGN_TOPIC
        return self.n

    async def connection_for(self, topic: str) -> Any:
        self.looked_up.append(topic)
        conn = self.conns.get(topic)
        if conn is None or conn.closed:
            conn = self.conns[topic] = FakeConnection(topic)
        return conn


def _types(conn: FakeConnection) -> list[tuple[str, int]]:
    return [(CommandType(c.type).name, getattr(sub_command(c), "tc_id", -1)) for c in conn.sent]


def test_discovery_connects_every_coordinator_and_new_txn_goes_round_robin() -> None:
    async def scenario() -> None:
        lookup = FakeLookup(2)
        tc = TransactionCoordinatorClient(lookup, 5)  # type: ignore[arg-type]
        ids = [await tc.new_txn(1000) for _ in range(3)]
        assert [i[0] for i in ids] == [0, 1, 0]
        first = lookup.conns[f"{TC_ASSIGN_TOPIC}-partition-0"]
        assert _types(first)[:1] == [("TC_CLIENT_CONNECT_REQUEST", 0)]
        assert [c.new_txn.txn_ttl_seconds for c in first.sent if c.type == CommandType.NEW_TXN] == [1000, 1000]
        await tc.end_txn((1, 5), commit=True)
        second = lookup.conns[f"{TC_ASSIGN_TOPIC}-partition-1"]
        assert second.sent[-1].type == CommandType.END_TXN and second.sent[-1].end_txn.txnid_least_bits == 5
        # a lost connection: looked up, connected again, the command sent once more
        second.fail_next = ConnectError("lost")
        await tc.add_partition((1, 5), "persistent://public/default/x")
        again = lookup.conns[f"{TC_ASSIGN_TOPIC}-partition-1"]
        assert again is not second
        assert [CommandType(c.type).name for c in again.sent] == ["TC_CLIENT_CONNECT_REQUEST", "ADD_PARTITION_TO_TXN"]
        assert list(again.sent[1].add_partition_to_txn.partitions) == ["persistent://public/default/x"]

    run(scenario())


def test_no_coordinator_partitions_and_unknown_coordinators() -> None:
    async def scenario() -> None:
        with pytest.raises(TransactionCoordinatorNotFound):
            await TransactionCoordinatorClient(FakeLookup(0), 5).new_txn(1000)  # type: ignore[arg-type]
        tc = TransactionCoordinatorClient(FakeLookup(1), 5)  # type: ignore[arg-type]
        await tc.start()
        with pytest.raises(TransactionCoordinatorNotFound):
            await tc.end_txn((3, 1), commit=False)

    run(scenario())
