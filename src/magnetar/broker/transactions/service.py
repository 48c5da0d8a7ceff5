"""The transaction component of the broker service (Pulsar's ``TransactionMetadataStoreService``
together with the broker side of END_TXN_ON_PARTITION / END_TXN_ON_SUBSCRIPTION).

It owns the coordinators (one per partition of ``pulsar/system/transaction_coordinator_assign``),
opens and replays their logs at start-up, ends every transaction a crash left unfinished (COMMITTING
ones are committed, OPEN and ABORTING ones aborted), aborts transactions past their timeout, and
ends a transaction on each partition (a marker through the topic's :class:`TransactionBuffer`) and
subscription (its :class:`PendingAcks`) it touched before END_TXN is answered. The session calls the
narrow interface: :meth:`new_txn`, :meth:`add_partitions`, :meth:`add_subscriptions`,
:meth:`end_txn`, :meth:`publish_check`, :meth:`acknowledge`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
from collections.abc import Callable
from typing import Any, Protocol

from magnetar.broker.errors import BrokerError
from magnetar.broker.transactions import TxnId
from magnetar.broker.transactions.buffer import (
    BufferState,
    TransactionBuffer,
    scan_ledger,
    state_from_snapshot,
)
from magnetar.broker.transactions.coordinator import (
    ABORTED,
    COMMITTED,
    COMMITTING,
    OPEN,
    TransactionCoordinator,
    TxnMeta,
    txn_text,
)
from magnetar.broker.transactions.log import TransactionLog, log_name, read_records, replay
from magnetar.broker.transactions.pending_ack import PendingAcks, TxnAcks, apply_acks
from magnetar.protocol.enums import ServerError
from magnetar.protocol.topic_name import InvalidTopicNameError, TopicName
from magnetar.storage import ManagedLedger
from magnetar.storage.metadata import MetadataStore

log = logging.getLogger("magnetar.broker.transactions")

#: how often timeouts are checked
_TIMEOUT_TICK_SECONDS = 1.0
#: kv key marking a topic that has had transaction messages (its ledger is replayed on load)
_TOPIC_FLAG = "txn-topic/"
#: kv keys of pending acknowledgements: prefix, topic, "|", subscription, "|", most:least
_ACKS = "txn-acks/"
#: segment size of a coordinator's log
_LOG_SEGMENT_BYTES = 4 * 1024 * 1024
#: kv key of a topic's transaction buffer snapshot (what a load need not replay)
_SNAPSHOT = "txn-buffer/"
#: a topic's snapshot is stored at most this often, some time after a transaction ended there
_SNAPSHOT_DELAY_SECONDS = 2.0


class Broker(Protocol):
    """What the transaction component uses of the broker service."""

    config: Any
    metadata: MetadataStore | None
    committer: Any
    topics: dict[str, Any]
    cache_budget: Any
    #: the cursors' persistence (its ``longest_delay`` before a changed cursor is written)
    persistence: Any

    async def load_topic(self, topic_name: TopicName, create: bool = True) -> Any:
        """The loaded topic."""
        ...

    def reap(self, job: Callable[[], None]) -> None:
        """Run a ledger's file clean-up job off the loop."""
        ...


def acks_prefix(topic: str) -> str:
    """The kv prefix of a topic's stored pending acknowledgements."""
    return f"{_ACKS}{topic}|"


class TransactionService:
    """The coordinators of this broker and the end of transactions on topics and subscriptions."""

    def __init__(self, broker: Broker) -> None:
        self.broker = broker
        self.count = broker.config.transaction_coordinator_count
        self.coordinators: dict[int, TransactionCoordinator] = {}
        self._tasks: set[asyncio.Task] = set()
        self._ticker: asyncio.Task | None = None
        #: set when a transaction opens: the timeout checks sleep on it while none is open
        self._opened = asyncio.Event()
        #: topics known to have had transaction messages (flag stored)
        self._flagged: set[str] = set()
        #: transactions being ended (by END_TXN, recovery or a timeout), each once
        self._ending: dict[TxnId, asyncio.Future[None]] = {}
        #: topics whose buffer snapshot is to be stored soon
        self._snapshots_due: set[str] = set()

    # -- lifecycle ----------------------------------------------------------------------------
    async def start(self) -> None:
        """Open and replay every coordinator's log (in a worker thread), then end in the background
        what a previous run left unfinished, and start the timeout checks."""
        loop = asyncio.get_running_loop()
        for tc_id in range(self.count):
            ledger, replayed, highest = await loop.run_in_executor(None, self._open_log, tc_id)
            coordinator = TransactionCoordinator(tc_id, TransactionLog(tc_id, ledger, self.broker.committer), highest + 1)
            coordinator.restore(replayed)
            self.coordinators[tc_id] = coordinator
            for meta in list(coordinator.txns.values()):
                self._spawn(self._finish(coordinator, meta, meta.state == COMMITTING))
        self._ticker = asyncio.create_task(self._timeouts(), name="txn-timeouts")

    def _open_log(self, tc_id: int) -> tuple[ManagedLedger, dict, int]:
        broker = self.broker
        assert broker.metadata is not None
        name = log_name(tc_id)
        ledger_id = broker.metadata.get_or_create_topic(name)
        config = broker.config
        ledger = ManagedLedger.open(
            config.data_dir / "ledgers" / str(ledger_id),
            ledger_id,
            # small segments: the checkpoints trim it (coordinator.py)
            segment_max_bytes=min(config.segment_max_bytes, _LOG_SEGMENT_BYTES),
            cache_max_bytes=config.entry_cache_max_bytes,
            cache_budget=broker.cache_budget,
            label=name,
            reaper=broker.reap,
            reads=getattr(broker, "read_thread", None),  # a fenced log's recovery waits there, not on the loop
        )
        replayed, highest = replay(read_records(ledger))
        return ledger, replayed, highest

    async def stop(self) -> None:
        """Stop the background work (the committer drains the logs afterwards)."""
        tasks = [*self._tasks, *([self._ticker] if self._ticker else [])]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def close(self) -> None:
        """Close the logs (after the committer drained)."""
        for coordinator in self.coordinators.values():
            coordinator.log.close()

    def _spawn(self, coro: Any) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    # -- the coordinator commands -------------------------------------------------------------
    def coordinator(self, tc_id: int) -> TransactionCoordinator:
        """Coordinator ``tc_id`` (TransactionCoordinatorNotFound when this broker has none)."""
        coordinator = self.coordinators.get(tc_id)
        if coordinator is None:
            raise BrokerError(
                ServerError.TransactionCoordinatorNotFound, f"Transaction coordinator with id {tc_id} not found!"
            )
        return coordinator

    def _of(self, txn: TxnId) -> TransactionCoordinator:
        return self.coordinator(txn[0])

    async def new_txn(self, tc_id: int, timeout_ms: int) -> TxnId:
        """NEW_TXN: a new transaction of coordinator ``tc_id`` timing out after ``timeout_ms``."""
        coordinator = self.coordinator(tc_id)
        txn = await coordinator.new_txn(timeout_ms)
        self._opened.set()
        return txn

    async def add_partitions(self, txn: TxnId, partitions: list[str]) -> None:
        """ADD_PARTITION_TO_TXN (the topics are flagged as transactional first)."""
        names = [str(_parse(p)) for p in partitions]
        new = [n for n in names if n not in self._flagged]
        if new:
            await asyncio.get_running_loop().run_in_executor(None, self._flag_topics, new)
        # kept as the client named them (Pulsar's transaction metadata shows them so)
        await self._of(txn).add_partitions(txn, list(partitions))

    def _flag_topics(self, names: list[str]) -> None:
        metadata = self.broker.metadata
        assert metadata is not None
        for name in names:
            metadata.put_kv(_TOPIC_FLAG + name, b"1")
            self._flagged.add(name)

    async def add_subscriptions(self, txn: TxnId, subscriptions: list[tuple[str, str]]) -> None:
        """ADD_SUBSCRIPTION_TO_TXN."""
        for topic, _ in subscriptions:
            _parse(topic)
        await self._of(txn).add_subscriptions(txn, list(subscriptions))

    async def end_txn(self, txn: TxnId, commit: bool) -> None:
        """END_TXN: answers once the COMMITTING / ABORTING record is durable and every partition and
        subscription of the transaction has ended it (a retried END_TXN waits for the same end)."""
        coordinator = self._of(txn)
        meta = await coordinator.begin_end(txn, commit)
        await self._end_once(coordinator, meta, commit)

    async def _end_once(self, coordinator: TransactionCoordinator, meta: TxnMeta, commit: bool) -> None:
        """Markers, acknowledgements and the final record, once per transaction however many ask."""
        running = self._ending.get(meta.txn)
        if running is None:
            running = asyncio.ensure_future(self._end(coordinator, meta, commit))
            self._ending[meta.txn] = running
            running.add_done_callback(lambda _: self._ending.pop(meta.txn, None))
        await asyncio.shield(running)

    async def _end(self, coordinator: TransactionCoordinator, meta: TxnMeta, commit: bool) -> None:
        await self._end_everywhere(meta, commit)
        if meta.txn in coordinator.txns:
            coordinator.finish_end(meta)

    async def _finish(self, coordinator: TransactionCoordinator, meta: TxnMeta, commit: bool) -> None:
        """End a transaction a previous run left unfinished, or one that timed out."""
        if meta.txn in self._ending:
            return
        try:
            if not commit:
                meta = await coordinator.begin_end(meta.txn, False, timed_out=meta.state == "OPEN" and _expired(meta))
            await self._end_once(coordinator, meta, commit)
        except BrokerError as exc:
            log.info("transaction %s: not ended now (%s)", txn_text(meta.txn), exc.message)
        except Exception:
            log.exception("transaction %s: ending it failed", txn_text(meta.txn))

    async def _end_everywhere(self, meta: TxnMeta, commit: bool) -> None:
        jobs = [self._end_on_partition(p, meta.txn, commit) for p in meta.partitions]
        jobs += [self._end_on_subscription(t, s, meta.txn, commit) for t, s in meta.subscriptions]
        await asyncio.gather(*jobs)

    async def _end_on_partition(self, partition: str, txn: TxnId, commit: bool) -> None:
        topic = await self._topic(partition)
        if topic is None:
            return
        done: asyncio.Future[str | None] = asyncio.get_running_loop().create_future()
        self.buffer_of(topic).end(txn, commit, lambda why: done.done() or done.set_result(why))
        why = await done
        if why is not None:
            raise BrokerError(ServerError.PersistenceError, f"the {txn_text(txn)} marker on {partition}: {why}")
        if topic.name not in self._snapshots_due:
            self._snapshots_due.add(topic.name)
            asyncio.get_running_loop().call_later(_SNAPSHOT_DELAY_SECONDS, self._store_snapshot, topic)

    def _store_snapshot(self, topic: Any) -> None:
        """Store the buffer's snapshot (in a worker thread), unless the topic went away meanwhile."""
        self._snapshots_due.discard(topic.name)
        metadata = self.broker.metadata
        if topic.closed or topic.txn_buffer is None or metadata is None:
            return
        value = json.dumps(topic.txn_buffer.snapshot(topic.ledger_id, topic.durable_id)).encode()
        asyncio.get_running_loop().run_in_executor(None, metadata.put_kv, _SNAPSHOT + topic.name, value)

    async def _end_on_subscription(self, topic_name: str, sub_name: str, txn: TxnId, commit: bool) -> None:
        topic = await self._topic(topic_name)
        if topic is None:
            return
        sub = topic.subscriptions.get(sub_name)
        if sub is not None and sub.pending_acks is not None:
            sub.pending_acks.end(txn, commit)
        key = f"{acks_prefix(topic.name)}{sub_name}|{txn[0]}:{txn[1]}"
        # kept until the cursor holding the acknowledgements is persisted (a restart applies them again)
        delay = self.broker.persistence.longest_delay + 5.0
        asyncio.get_running_loop().call_later(delay, self._delete_key_later, key)

    def _delete_key_later(self, key: str) -> None:
        metadata = self.broker.metadata
        if metadata is not None:
            asyncio.get_running_loop().run_in_executor(None, metadata.delete_kv, key)

    async def _topic(self, name: str) -> Any:
        try:
            return await self.broker.load_topic(TopicName.parse(name), create=False)
        except BrokerError as exc:
            if exc.code == ServerError.TopicNotFound:
                return None  # deleted meanwhile: nothing to end there (as Pulsar)
            raise

    async def _timeouts(self) -> None:
        while True:
            if not any(coordinator.txns for coordinator in self.coordinators.values()):
                # nothing can time out: no wake-up a second on an idle broker until one opens
                self._opened.clear()
                await self._opened.wait()
            await asyncio.sleep(_TIMEOUT_TICK_SECONDS)
            now = int(time.time() * 1000)
            for coordinator in self.coordinators.values():
                for txn in coordinator.expired(now):
                    log.info("transaction %s timed out: aborting it", txn_text(txn))
                    meta = coordinator.txns[txn]
                    self._spawn(self._finish(coordinator, meta, False))

    # -- the topic side -----------------------------------------------------------------------
    def buffer_of(self, topic: Any) -> TransactionBuffer:
        """The topic's transaction buffer (made on first use)."""
        if topic.txn_buffer is None:
            topic.txn_buffer = TransactionBuffer(topic)
        return topic.txn_buffer

    def read_topic_state(self, name: str, ledger: ManagedLedger) -> tuple[BufferState | None, dict[str, bytes]]:
        """In a topic-load thread: the topic's transactions replayed from its ledger (None when it never
        had any) and its stored pending acknowledgements."""
        metadata = self.broker.metadata
        assert metadata is not None
        state = None
        if metadata.get_kv(_TOPIC_FLAG + name) is not None:
            self._flagged.add(name)
            stored = metadata.get_kv(_SNAPSHOT + name)
            data = json.loads(stored) if stored is not None else {}
            if data.get("ledger_id") == ledger.ledger_id:  # not a deleted topic's of the same name
                snapshot, position = state_from_snapshot(data)
                state = scan_ledger(ledger, position + 1, snapshot)
            else:
                state = scan_ledger(ledger)
        return state, metadata.list_kv(acks_prefix(name))

    def attach(self, topic: Any, state: tuple[BufferState | None, dict[str, bytes]]) -> None:
        """On the loop, as a loaded topic is registered: its buffer and pending acknowledgements."""
        buffer_state, acks = state
        if buffer_state is not None:
            topic.txn_buffer = TransactionBuffer(topic, buffer_state)
            topic.last_readable_id = topic.txn_buffer.max_read(topic.durable_id)
        prefix = acks_prefix(topic.name)
        for key, raw in acks.items():
            sub_name, _, txn_part = key[len(prefix) :].rpartition("|")
            most, _, least = txn_part.partition(":")
            sub = topic.subscriptions.get(sub_name)
            if sub is None or not most.isdigit() or not least.isdigit():
                continue
            txn = (int(most), int(least))
            data = json.loads(raw)
            coordinator = self.coordinators.get(txn[0])
            state_now = coordinator.final_state(txn) if coordinator is not None else None
            if state_now == COMMITTED:
                apply_acks(sub, TxnAcks.from_json(data))
            elif state_now not in (ABORTED, None):
                self.pending_acks_of(sub, topic.name).restore(txn, data)

    def pending_acks_of(self, sub: Any, topic_name: str) -> PendingAcks:
        """The subscription's pending acknowledgements (made on first use)."""
        if sub.pending_acks is None:
            sub.pending_acks = PendingAcks(sub, topic_name)
        return sub.pending_acks

    def publish_check(self, topic: Any, txn: TxnId) -> None:
        """Before a message of ``txn`` is appended to ``topic``: the transaction must be open (at its
        coordinator and on the topic), else NotAllowed as Pulsar's transaction buffer answers a
        message of an ended transaction (the Java client fails that send, without a reconnection)."""
        coordinator = self.coordinators.get(txn[0])
        meta = coordinator.txns.get(txn) if coordinator is not None else None
        if meta is None or meta.state != OPEN or (topic.txn_buffer is not None and topic.txn_buffer.check_open(txn)):
            raise BrokerError(
                ServerError.NotAllowedError,
                f"Transaction [{txn_text(txn)}] has been ended. Please use a new transaction to send message.",
            )

    async def acknowledge(
        self, topic: Any, sub: Any, txn: TxnId, cumulative: bool, acks: list[tuple[int, list[int] | None, int]]
    ) -> list[int]:
        """An ACK inside a transaction: held, stored, then answered; returns the whole entries held."""
        self._of(txn)
        pending = self.pending_acks_of(sub, topic.name)
        held = pending.add(txn, cumulative, acks)
        record = pending.record(txn)
        metadata = self.broker.metadata
        if record is not None and metadata is not None:
            key = f"{acks_prefix(topic.name)}{sub.name}|{txn[0]}:{txn[1]}"
            value = json.dumps(record).encode()
            await asyncio.get_running_loop().run_in_executor(None, metadata.put_kv, key, value)
        return held

    # -- admin and metrics --------------------------------------------------------------------
    def metadata_of(self, txn: TxnId) -> dict[str, Any]:
        """Pulsar's TransactionMetadata of an open transaction (TransactionNotFound otherwise)."""
        return self._of(txn).get(txn).to_admin(self.broker.config.broker_service_url)


def _expired(meta: TxnMeta) -> bool:
    return meta.deadline_ms <= int(time.time() * 1000)


def _parse(name: str) -> TopicName:
    try:
        return TopicName.parse(name)
    except InvalidTopicNameError as exc:
        raise BrokerError(ServerError.InvalidTopicName, str(exc)) from None
