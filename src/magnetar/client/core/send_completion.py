"""What becomes of a producer's sends once written: receipts, send errors, timeouts, failure.

:class:`SendCompletion` is the completing side of :class:`~magnetar.client.core.producer.AsyncProducer`:
SEND_RECEIPTs complete the oldest pending send (receipts come in order) and its waiters with
their message ids; a SEND_ERROR fails one send (a checksum error) or reconnects to send again;
sends without a receipt within the send timeout fail; a fenced producer or a terminated topic
fails everything pending, and what is batched but not sent yet.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from magnetar.client.api.message import MessageId
from magnetar.client.core.sends import Batch, PendingSend, resolve, resolve_batch, retrieve
from magnetar.client.exceptions import ConnectError, PulsarError, Timeout, TopicTerminated, error_for
from magnetar.protocol.enums import ServerError

if TYPE_CHECKING:
    from magnetar.client.api.config import ProducerConfig
    from magnetar.client.core.connection import ClientConnection

log = logging.getLogger("magnetar.client.core.producer")

class SendCompletion:
    """The completing side of a producer: receipts and send errors in, waiters completed."""

    # what the producer provides
    name: str
    topic: str
    partition: int
    config: ProducerConfig
    conn: ClientConnection | None
    settled_hook: Callable[[int], None] | None
    _closed: bool
    _pending: deque[PendingSend]
    _pending_messages: int
    _space: asyncio.Event
    _fenced: PulsarError | None
    _batch: Batch | None
    _key_batches: dict[tuple[str | None, bytes | None], Batch]
    _batch_timer: asyncio.TimerHandle | None
    txn_sinks: dict[tuple[int, int], Any]
    #: sends the broker refused (NotAllowedError) behind sends still waiting for their receipt: by
    #: highest sequence id, failed once they reach the head of the queue
    _refused: dict[int, PulsarError]

    def _flush_batches(self) -> None: ...  # noqa: D102

    async def flush(self) -> None:
        """Send the open batch and wait until every message sent so far has its receipt (or failed)."""
        self._flush_batches()
        if not self._pending:
            return
        fut: asyncio.Future = asyncio.get_running_loop().create_future()
        fut.add_done_callback(retrieve)
        self._pending[-1].callbacks.append(fut)
        try:
            await fut
        except PulsarError:
            pass

    def _settled(self, n: int) -> None:
        """``n`` messages got their receipt or failed: room for more."""
        self._pending_messages -= n
        if not self._space.is_set():
            self._space.set()
        hook = self.settled_hook
        if hook is not None and n:
            hook(n)

    # -- broker events -------------------------------------------------------------------
    def on_receipt(self, receipt: Any) -> None:
        """SEND_RECEIPT: complete the oldest pending send (receipts come in order)."""
        pending = self._pending
        if not pending:
            return
        op = pending[0]
        if receipt.sequence_id != op.sequence_id:
            if receipt.sequence_id < op.sequence_id:
                return  # a late duplicate receipt
            log.warning(
                "producer %s: receipt for sequence %d while %d is the oldest pending; reconnecting",
                self.name, receipt.sequence_id, op.sequence_id,
            )
            if self.conn is not None:
                self.conn.close(ConnectError("out-of-order receipt"))
            return
        pending.popleft()
        if self._refused:
            self._fail_refused()
        mid = receipt.message_id
        ledger_id, entry_id = mid.ledger_id, mid.entry_id
        count = op.count
        self._settled(count)
        callbacks = op.callbacks
        # as the official client's, the id of a sent message names no topic (only its partition)
        partition = self.partition
        if op.chunk_index >= 0:
            assert op.chunk_ids is not None
            msg_id = MessageId(ledger_id, entry_id, -1, partition)
            op.chunk_ids.append((msg_id.ledger_id, msg_id.entry_id))
            if count:  # the last chunk
                msg_id._chunk_ids = list(op.chunk_ids)
                for cb in callbacks:
                    resolve(cb, None, msg_id)
            return
        if not op.batched:
            msg_id = MessageId(ledger_id, entry_id, -1, partition)
            for cb in callbacks:
                resolve(cb, None, msg_id)
            return
        resolve_batch(callbacks, ledger_id, entry_id, partition, count, None)

    def on_send_error(self, error: Any) -> None:
        """SEND_ERROR, as the Java client's ClientCnx: a checksum error fails that send; NotAllowedError
        (a refusal: a send in a transaction that has ended, ...) fails the send whose highest sequence
        id it names, when it is the oldest pending (Java's recoverNotAllowedError; here also once the
        sends before it have their receipts, where Java drops the error and reconnects); anything
        else reconnects and resends."""
        code = error.error
        if code == ServerError.ChecksumError:
            for i, op in enumerate(self._pending):
                if op.sequence_id == error.sequence_id:
                    del self._pending[i]
                    self._fail_op(op, error_for(code, error.message))
                    return
            return
        if code == ServerError.NotAllowedError:
            if any(max(op.sequence_id, op.highest_sequence_id) == error.sequence_id for op in self._pending):
                self._refused[error.sequence_id] = error_for(code, error.message)
                self._fail_refused()
            return
        if code == ServerError.TopicTerminatedError:
            self._fail_all(TopicTerminated(error.message))
            return
        log.warning("producer %s on %s: send error %s (%s), reconnecting", self.name, self.topic, code, error.message)
        if self.conn is not None:
            self.conn.close(ConnectError(error.message))

    def _fail_refused(self) -> None:
        """Fail the refused sends at the head of the queue."""
        pending, refused = self._pending, self._refused
        while pending and (exc := refused.pop(max(pending[0].sequence_id, pending[0].highest_sequence_id), None)):
            self._fail_op(pending.popleft(), exc)
        if not pending:
            refused.clear()

    def _fail_op(self, op: PendingSend, exc: PulsarError) -> None:
        self._settled(op.count)
        for cb in op.callbacks:
            resolve(cb, exc, None)

    def _fail_all(self, exc: PulsarError) -> None:
        batches = [b for b in (self._batch, *self._key_batches.values()) if b is not None]
        self._batch = None
        self._key_batches.clear()
        if self._batch_timer is not None:
            self._batch_timer.cancel()
            self._batch_timer = None
        pending, self._pending = self._pending, deque()
        self._settled(self._pending_messages)
        for op in pending:
            for cb in op.callbacks:
                resolve(cb, exc, None)
        for batch in batches:  # messages not sent yet fail as well
            for cb in batch.callbacks:
                resolve(cb, exc, None)
            sink = self.txn_sinks.get(batch.txn) if batch.txn is not None else None
            if sink is not None:
                sink.send_failed(exc)

    async def _check_timeouts(self) -> None:
        interval = min(1.0, self.config.send_timeout_millis / 1000.0 / 2)
        while not self._closed:
            await asyncio.sleep(interval)
            now = time.monotonic()
            pending = self._pending
            expired = []
            while pending and pending[0].deadline <= now:
                expired.append(pending.popleft())
            if expired:
                exc = Timeout(
                    f"producer {self.name} on {self.topic}: no receipt within {self.config.send_timeout_millis} ms"
                )
                for op in expired:
                    self._fail_op(op, exc)
                if self._refused:
                    self._fail_refused()
