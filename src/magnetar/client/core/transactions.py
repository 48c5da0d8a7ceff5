"""Transactions of the asyncio core: :class:`AsyncTransaction` and its states.

As the Java client's ``TransactionImpl`` (and the Go client's ``transaction``): a transaction
registers each partition it produces to (ADD_PARTITION_TO_TXN) and each subscription it acknowledges
on (ADD_SUBSCRIPTION_TO_TXN) once, before the first SEND or ACK that needs it; it counts its sends
and acknowledgements in flight, and commit or abort waits for them before END_TXN. The client's own
timer moves an open transaction to TIME_OUT when its timeout passes (the coordinator aborts it
then). A send or acknowledgement that fails puts the transaction in ERROR: it can then only be
aborted.

Producers and consumers hand their work here: a producer asks :meth:`AsyncTransaction.ready_on`
whether a message may go into its open batch of this transaction (its partition is registered),
else hands it to ``queue_send``; it reports each SEND of the transaction (a batch, a message, a
chunked message) through its ``txn_sinks``, so the accounting costs a SEND, not a message. They
only carry the transaction id on what they send, so that they know nothing of coordinators.
"""

from __future__ import annotations

import asyncio
import enum
import functools
import logging
from collections.abc import Callable
from typing import Any, Protocol

from magnetar.client.api.message import Message, MessageId
from magnetar.client.core.connection import ClientConnection
from magnetar.client.core.sends import resolve, retrieve
from magnetar.client.core.txn_coordinator import TransactionCoordinatorClient, TxnId
from magnetar.client.exceptions import AlreadyClosed, InvalidTxnStatus, PulsarError
from magnetar.protocol.enums import AckType, CommandType
from magnetar.protocol.schema import BaseCommand

log = logging.getLogger("magnetar.client")

_U64 = (1 << 64) - 1
EntryKey = tuple[int, int]


class TransactionState(enum.Enum):
    """The states of a transaction, as the Java client's ``Transaction.State``."""

    OPEN = "OPEN"
    COMMITTING = "COMMITTING"
    COMMITTED = "COMMITTED"
    ABORTING = "ABORTING"
    ABORTED = "ABORTED"
    ERROR = "ERROR"
    TIME_OUT = "TIME_OUT"


#: (read per message: an enum member looked up through its class costs more than a global)
_OPEN = TransactionState.OPEN


class TxnProducer(Protocol):
    """What a transaction uses of a producer (one partition's)."""

    topic: str
    settled_hook: Callable[[int], None] | None
    #: the transactions whose sends this producer reports (:meth:`AsyncTransaction.send_enqueued`)
    txn_sinks: dict[TxnId, Any]

    def send_nowait(self, content: Any, waiter: Any = None, sequence_id: int | None = None, txn: Any = None,
                    **options: Any) -> None: ...  # noqa: D102
    def _queue_message(self, content: Any, waiter: Any = None, **options: Any) -> None: ...  # noqa: D102
    def _flush_batches(self) -> None: ...  # noqa: D102


class TxnConsumer(Protocol):
    """What a transaction uses of a consumer (one partition's)."""

    topic: str
    subscription: str
    consumer_id: int
    conn: ClientConnection | None
    config: Any
    client: Any
    sink_reset: Callable[[Any], None] | None

    def _untrack(self, key: EntryKey) -> None: ...  # noqa: D102
    def _redeliver_entries(self, keys: list[EntryKey]) -> None: ...  # noqa: D102
    def redeliver_unacknowledged_messages(self) -> None: ...  # noqa: D102


class AsyncTransaction:
    """A transaction of the asyncio core (``await client.new_transaction()``)."""

    def __init__(self, coordinator: TransactionCoordinatorClient, txn_id: TxnId, timeout_ms: int) -> None:
        self._tc = coordinator
        self._id = txn_id
        self.timeout_ms = timeout_ms
        self._state = TransactionState.OPEN
        loop = asyncio.get_running_loop()
        self._timer = loop.call_later(timeout_ms / 1000.0, self._timed_out)
        self._partitions: dict[str, asyncio.Future[None]] = {}
        self._subscriptions: dict[tuple[str, str], asyncio.Future[None]] = {}
        #: partitions registered: their producers send this transaction's messages at once
        self._ready_topics: set[str] = set()
        #: producers on registered partitions; each reports this transaction's sends to it (txn_sinks)
        self._producers: set[TxnProducer] = set()
        #: sends waiting for their partition's registration, in send order (later sends queue behind)
        self._queued: dict[str, list[tuple[TxnProducer, Any, Any, int | None, dict[str, Any]]]] = {}
        #: the sends queued behind a registration are being handed to their producers
        self._draining = False
        self._ops = 0
        self._idle = asyncio.Event()
        self._idle.set()
        self._failure: PulsarError | None = None
        #: batch entries acknowledged by index, and consumers that acknowledged cumulatively (both
        #: redelivered after an abort: the broker redelivers only whole entries it held)
        self._batch_acks: dict[int, tuple[TxnConsumer, set[EntryKey]]] = {}
        self._cumulative: dict[int, TxnConsumer] = {}

    def __repr__(self) -> str:
        return f"<Transaction ({self._id[0]},{self._id[1]}) {self._state.value}>"

    def id(self) -> TxnId:
        """The transaction id: (most significant bits, least significant bits)."""
        return self._id

    def state(self) -> TransactionState:
        """The transaction's state."""
        return self._state

    def _timed_out(self) -> None:
        if self._state is TransactionState.OPEN:
            self._state = TransactionState.TIME_OUT

    def _check_open(self) -> None:
        if self._state is not TransactionState.OPEN:
            raise InvalidTxnStatus(
                f"[{self._id[0]}:{self._id[1]}] with unexpected state : {self._state.value}, expect OPEN state!"
            )

    # -- operations in flight ----------------------------------------------------------------------
    def _op_started(self) -> None:
        self._ops += 1
        self._idle.clear()

    def _op_ended(self, error: BaseException | None) -> None:
        if error is not None:
            if self._failure is None and isinstance(error, PulsarError):
                self._failure = error
            if self._state is TransactionState.OPEN:
                self._state = TransactionState.ERROR
        self._ops -= 1
        if not self._ops:
            self._idle.set()

    def _registered(self, table: dict, key: Any, register: Callable[[], Any]) -> asyncio.Future[None]:
        fut = table.get(key)
        if fut is None or (fut.done() and fut.exception() is not None):
            fut = table[key] = asyncio.ensure_future(register())
            fut.add_done_callback(retrieve)
        return fut

    # -- sends ---------------------------------------------------------------------------------------
    async def register_partition(self, topic: str) -> None:
        """Register ``topic`` (a partition) with the coordinator (once), for writers that send
        batches of their own with this transaction's id (:func:`magnetar.client.bulk.send_batch`)."""
        self._check_open()
        await self._registered(self._partitions, topic, lambda: self._tc.add_partition(self._id, topic))

    def ready_on(self, producer: TxnProducer) -> TxnId | None:
        """(a producer's send, per message) This transaction's id when ``producer``'s partition is
        registered: the message may go into the producer's open batch of this transaction; None while
        it is not (the producer hands it to :meth:`queue_send`). Raises InvalidTxnStatus when the
        transaction is not open."""
        if self._state is not _OPEN and not self._draining:
            self._check_open()
        if producer in self._producers:
            return self._id
        if producer.topic in self._ready_topics:
            self._producers.add(producer)
            producer.txn_sinks[self._id] = self
            return self._id
        return None

    def queue_send(self, producer: TxnProducer, content: Any, waiter: Any, sequence_id: int | None,
                   options: dict[str, Any]) -> None:
        """Queue a message of this transaction that ``producer``'s open batch could not take as it is:
        at once when its partition is registered, else once ADD_PARTITION_TO_TXN is answered (the
        waiting messages are kept in send order, one list per partition). Raises InvalidTxnStatus when
        the transaction is not open."""
        if self._state is not _OPEN and not self._draining:
            self._check_open()
        topic = producer.topic
        if topic in self._ready_topics:
            self._send_now(producer, content, waiter, sequence_id, options)
            return
        queued = self._queued.get(topic)
        if queued is None:
            queued = self._queued[topic] = []
            self._op_started()
            registered = self._registered(self._partitions, topic, lambda: self._tc.add_partition(self._id, topic))
            registered.add_done_callback(functools.partial(self._partition_registered, topic))
        queued.append((producer, content, waiter, sequence_id, options))

    def _send_now(self, producer: TxnProducer, content: Any, waiter: Any, sequence_id: int | None,
                  options: dict[str, Any]) -> None:
        if producer not in self._producers:
            self._producers.add(producer)
            producer.txn_sinks[self._id] = self
        try:
            producer._queue_message(content, waiter, sequence_id=sequence_id, txn=self._id, **options)
        except Exception as exc:
            self._send_failed(producer, waiter, exc)

    def _partition_registered(self, topic: str, registered: asyncio.Future[None]) -> None:
        """ADD_PARTITION_TO_TXN answered: the sends waiting for it go to their producers, in order
        (or fail with its error)."""
        waiting = self._queued.pop(topic, [])
        error = PulsarError("registration cancelled") if registered.cancelled() else registered.exception()
        if error is None:
            self._ready_topics.add(topic)
            self._draining = True
            try:
                for producer, content, waiter, sequence_id, options in waiting:
                    try:
                        producer.send_nowait(content, waiter, sequence_id, txn=self, **options)
                    except Exception as exc:
                        self._send_failed(producer, waiter, exc)
            finally:
                self._draining = False
        else:
            for producer, _, waiter, _, _ in waiting:
                self._send_failed(producer, waiter, error)
        self._op_ended(None)

    def _send_failed(self, producer: TxnProducer, waiter: Any, exc: BaseException) -> None:
        """A send of this transaction failed before its producer took it: its waiter fails, the
        transaction is in ERROR."""
        error = exc if isinstance(exc, PulsarError) else PulsarError(f"cannot send: {exc!r}")
        self.send_failed(error)
        resolve(waiter, error, None)
        hook = producer.settled_hook
        if hook is not None:
            hook(1)

    def send_enqueued(self) -> Callable[[PulsarError | None, Any], None]:
        """(the producer, per SEND of this transaction: a batch, a message or a chunked message) One more
        operation in flight; returns what its settlement calls (with its error or None)."""
        self._op_started()
        return self._send_settled

    def _send_settled(self, error: PulsarError | None, _: Any) -> None:
        self._op_ended(error)

    def send_failed(self, error: PulsarError) -> None:
        """(the producer) Messages of this transaction failed before they were sent (their producer
        was closed or fenced with them in its open batch): the transaction is in ERROR."""
        if self._failure is None:
            self._failure = error
        if self._state is TransactionState.OPEN:
            self._state = TransactionState.ERROR

    # -- acknowledgements ------------------------------------------------------------------------------
    def acknowledge(self, consumer: TxnConsumer, message: Message | MessageId, cumulative: bool) -> asyncio.Future[None]:
        """Acknowledge ``message`` on ``consumer`` in this transaction: ADD_SUBSCRIPTION_TO_TXN first
        (once per subscription), then an ACK with the transaction id and a request id, answered by
        ACK_RESPONSE. The future fails with the broker's error (TransactionConflict, ...)."""
        mid = message.message_id() if isinstance(message, Message) else message
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        fut.add_done_callback(retrieve)
        try:
            self._check_open()
        except PulsarError as exc:
            fut.set_exception(exc)
            return fut
        self._op_started()
        task = asyncio.ensure_future(self._acknowledge(consumer, mid, cumulative))

        def done(t: asyncio.Future) -> None:
            error = t.exception()
            self._op_ended(error)
            if fut.done():
                return
            if error is not None:
                fut.set_exception(error)
            else:
                fut.set_result(None)

        task.add_done_callback(done)
        return fut

    async def _acknowledge(self, consumer: TxnConsumer, mid: MessageId, cumulative: bool) -> None:
        topic, sub = consumer.topic, consumer.subscription
        await self._registered(self._subscriptions, (topic, sub), lambda: self._tc.add_subscription(self._id, topic, sub))
        conn = consumer.conn
        if conn is None or conn.closed:
            raise AlreadyClosed(f"consumer on {topic} is not connected")
        rid = conn.new_request_id()
        cmd = _ack_command(consumer.consumer_id, mid, cumulative, self._id, rid)
        await conn.request(cmd, rid, consumer.client.operation_timeout)
        keys = mid.chunk_entries()
        for key in keys:
            consumer._untrack(key)
        if cumulative:
            self._cumulative[id(consumer)] = consumer
        elif mid.batch_index >= 0 and not mid.is_chunked():
            self._batch_acks.setdefault(id(consumer), (consumer, set()))[1].update(keys)

    # -- ending --------------------------------------------------------------------------------------
    async def commit(self) -> None:
        """Wait for the transaction's sends and acknowledgements, then commit it (END_TXN).

        InvalidTxnStatus when it is not open (committed, aborted, timed out, or one of its
        operations failed: abort it then); the coordinator's error otherwise (TransactionNotFound
        when it was aborted meanwhile, e.g. timed out on the broker)."""
        if self._state is TransactionState.ERROR and self._failure is not None:
            raise InvalidTxnStatus(
                f"[{self._id[0]}:{self._id[1]}] cannot be committed: an operation failed ({self._failure}); abort it"
            )
        self._check_open()
        self._state = TransactionState.COMMITTING
        await self._end(True)

    async def abort(self) -> None:
        """Wait for the transaction's operations, then abort it (END_TXN); what it acknowledged is
        delivered again. InvalidTxnStatus when it is committed, aborted or timed out."""
        if self._state not in (TransactionState.OPEN, TransactionState.ERROR):
            self._check_open()
        self._state = TransactionState.ABORTING
        await self._end(False)
        self._redeliver_acknowledged()

    async def _end(self, commit: bool) -> None:
        self._timer.cancel()
        await self._settle()
        try:
            await self._tc.end_txn(self._id, commit)
        except PulsarError:
            self._state = TransactionState.ERROR
            raise
        finally:
            for producer in self._producers:
                producer.txn_sinks.pop(self._id, None)
        self._state = TransactionState.COMMITTED if commit else TransactionState.ABORTED

    async def _settle(self) -> None:
        """Send what the producers still batch of this transaction, and wait until every send and
        acknowledgement of it is answered (sends waiting for a registration go into a batch when it
        is answered: flushed on the next turn)."""
        while True:
            for producer in list(self._producers):
                producer._flush_batches()
            if not self._ops:
                return
            await self._idle.wait()

    def _redeliver_acknowledged(self) -> None:
        """After an abort: what the broker does not send again by itself comes back (batch entries
        acknowledged by index; everything in flight to a consumer that acknowledged cumulatively,
        its queue dropped first, as the Java client does)."""
        for consumer, keys in self._batch_acks.values():
            if id(consumer) not in self._cumulative:
                consumer._redeliver_entries(sorted(keys))
        for consumer in self._cumulative.values():
            if consumer.sink_reset is not None:
                consumer.sink_reset(consumer)
            consumer.redeliver_unacknowledged_messages()
        self._batch_acks.clear()
        self._cumulative.clear()


def _ack_command(consumer_id: int, mid: MessageId, cumulative: bool, txn: TxnId, request_id: int) -> BaseCommand:
    """The ACK of one message in a transaction: a batched message by its batch index (an ack set
    with the acknowledged indexes cleared), a chunked one by every chunk's entry."""
    cmd = BaseCommand(type=CommandType.ACK)
    ack = cmd.ack
    ack.consumer_id = consumer_id
    ack.ack_type = AckType.Cumulative if cumulative else AckType.Individual
    ack.txnid_most_bits, ack.txnid_least_bits = txn
    ack.request_id = request_id
    keys = [mid.chunk_entries()[-1]] if cumulative else mid.chunk_entries()
    for ledger_id, entry_id in keys:
        data = ack.message_id.add(ledger_id=ledger_id & _U64, entry_id=entry_id & _U64)
        if mid.batch_index >= 0 and not mid.is_chunked() and mid.batch_size > 0:
            size = mid.batch_size
            acked = range(mid.batch_index + 1) if cumulative else (mid.batch_index,)
            mask = (1 << size) - 1
            for i in acked:
                mask &= ~(1 << i)
            data.ack_set.extend(_words(mask))
            data.batch_size = size
    return cmd


def _words(mask: int) -> list[int]:
    """A bit set as the signed 64-bit words of Java's ``BitSet.toLongArray`` (none when empty:
    every message of the batch acknowledged, the whole entry)."""
    words = []
    while mask:
        w = mask & _U64
        words.append(w - (1 << 64) if w >= 1 << 63 else w)
        mask >>= 64
    return words


__all__ = ["AsyncTransaction", "TransactionState"]
