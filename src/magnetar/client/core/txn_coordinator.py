"""The transaction coordinator client: the client side of Pulsar's transaction coordinators (PIP-31).

As the Java client's ``TransactionCoordinatorClientImpl`` and the Go client's
``transactionCoordinatorClient``: the coordinators are the partitions of
``persistent://pulsar/system/transaction_coordinator_assign``; the client looks each partition up and
sends TC_CLIENT_CONNECT (``tc_id`` = the partition) on the connection to its broker. NEW_TXN goes to
the coordinators in turn; every later command of a transaction goes to the coordinator its id names
(the most significant bits). A coordinator whose connection was lost is looked up and connected
again on its next command.
"""

from __future__ import annotations

import asyncio
import itertools
from typing import Any

from magnetar.client.core.connection import ClientConnection
from magnetar.client.core.lookup import LookupService
from magnetar.client.exceptions import ConnectError, TransactionCoordinatorNotFound
from magnetar.protocol.enums import CommandType, TxnAction
from magnetar.protocol.schema import BaseCommand

#: the partitioned topic whose partitions are the transaction coordinators
TC_ASSIGN_TOPIC = "persistent://pulsar/system/transaction_coordinator_assign"

TxnId = tuple[int, int]


class TransactionCoordinatorClient:
    """Connections to every transaction coordinator and the requests made to them."""

    def __init__(self, lookup: LookupService, operation_timeout: float) -> None:
        self.lookup = lookup
        self.timeout = operation_timeout
        self._coordinators = 0
        self._conns: dict[int, ClientConnection] = {}
        self._started: asyncio.Future[None] | None = None
        self._turn = itertools.count()

    @property
    def coordinators(self) -> int:
        """How many coordinators there are (0 before :meth:`start`)."""
        return self._coordinators

    async def start(self) -> None:
        """Find the coordinators and connect to each (once; concurrent callers wait for the first)."""
        if self._started is None:
            self._started = asyncio.get_running_loop().create_future()
            try:
                await self._start()
                self._started.set_result(None)
            except BaseException as exc:
                self._started.set_exception(exc)
                self._started.exception()
                self._started = None
                raise
            return
        await asyncio.shield(self._started)

    async def _start(self) -> None:
        n = await self.lookup.partitions(TC_ASSIGN_TOPIC)
        if n <= 0:
            raise TransactionCoordinatorNotFound(
                f"the broker has no transaction coordinator ({TC_ASSIGN_TOPIC} has no partitions)"
            )
        self._coordinators = n
        await asyncio.gather(*(self._connection(i) for i in range(n)))

    async def _connection(self, tc_id: int) -> ClientConnection:
        """The live connection to coordinator ``tc_id`` (looked up and connected when needed)."""
        conn = self._conns.get(tc_id)
        if conn is not None and not conn.closed:
            return conn
        if not 0 <= tc_id < self._coordinators:
            raise TransactionCoordinatorNotFound(f"there is no transaction coordinator {tc_id}")
        conn = await self.lookup.connection_for(f"{TC_ASSIGN_TOPIC}-partition-{tc_id}")
        rid = conn.new_request_id()
        cmd = BaseCommand(type=CommandType.TC_CLIENT_CONNECT_REQUEST)
        cmd.tc_client_connect_request.request_id = rid
        cmd.tc_client_connect_request.tc_id = tc_id
        await conn.request(cmd, rid, self.timeout)
        self._conns[tc_id] = conn
        return conn

    async def _request(self, tc_id: int, ctype: CommandType, field: str, fill: dict[str, Any]) -> Any:
        """Send one coordinator command (filled from ``fill``) and return its response; a lost
        connection is connected again and the command sent once more."""
        await self.start()
        for attempt in range(2):
            conn = await self._connection(tc_id)
            rid = conn.new_request_id()
            cmd = BaseCommand(type=ctype)
            sub = getattr(cmd, field)
            sub.request_id = rid
            for name, value in fill.items():
                if name == "partitions":
                    sub.partitions.extend(value)
                elif name == "subscription":
                    s = sub.subscription.add()
                    s.topic, s.subscription = value
                else:
                    setattr(sub, name, value)
            try:
                return await conn.request(cmd, rid, self.timeout)
            except ConnectError:
                if attempt:
                    raise
        raise AssertionError("unreachable")

    async def new_txn(self, timeout_ms: int) -> TxnId:
        """NEW_TXN on the next coordinator in turn; the new transaction's id."""
        await self.start()  # (the number of coordinators is known from here on)
        tc_id = next(self._turn) % self._coordinators
        # the field is named in seconds, but Pulsar's clients and brokers use milliseconds
        resp = await self._request(tc_id, CommandType.NEW_TXN, "new_txn", {"tc_id": tc_id, "txn_ttl_seconds": timeout_ms})
        r = resp.new_txn_response
        return r.txnid_most_bits, r.txnid_least_bits

    async def add_partition(self, txn: TxnId, topic: str) -> None:
        """ADD_PARTITION_TO_TXN: ``topic`` (a partition) will receive messages of ``txn``."""
        await self._request(txn[0], CommandType.ADD_PARTITION_TO_TXN, "add_partition_to_txn", {
            "txnid_most_bits": txn[0], "txnid_least_bits": txn[1], "partitions": [topic],
        })

    async def add_subscription(self, txn: TxnId, topic: str, subscription: str) -> None:
        """ADD_SUBSCRIPTION_TO_TXN: ``txn`` will acknowledge on ``subscription`` of ``topic``."""
        await self._request(txn[0], CommandType.ADD_SUBSCRIPTION_TO_TXN, "add_subscription_to_txn", {
            "txnid_most_bits": txn[0], "txnid_least_bits": txn[1], "subscription": (topic, subscription),
        })

    async def end_txn(self, txn: TxnId, commit: bool) -> None:
        """END_TXN: commit or abort ``txn``."""
        await self._request(txn[0], CommandType.END_TXN, "end_txn", {
            "txnid_most_bits": txn[0], "txnid_least_bits": txn[1],
            "txn_action": TxnAction.COMMIT if commit else TxnAction.ABORT,
        })


__all__ = ["TC_ASSIGN_TOPIC", "TransactionCoordinatorClient", "TxnId"]
