"""Commands answered after an await: PRODUCER, SUBSCRIBE and GET_OR_CREATE_SCHEMA of a topic not loaded,
and commands whose handling wrote the metadata store, answered once that write is durable: a new
schema version (:meth:`DeferredCommands.after_metadata_write`: the schema registry has the metadata
thread commit it) and an auto-created partitioned topic (:meth:`DeferredCommands.after_metadata_job`,
written by the metadata thread).

Loading a topic reads and writes storage (:meth:`~magnetar.broker.service.BrokerService.load_topic`
runs that in a thread), so the command's handler hands the rest of its work to :meth:`answer_later`,
and the connection reads on. A refusal is answered as :meth:`ServerConnection.frame_received
<magnetar.broker.session.connection.ServerConnection.frame_received>` answers one; a connection
closed meanwhile gets nothing. The producer and consumer ids of such requests are held in
:attr:`~DeferredCommands.pending_producers` and :attr:`~DeferredCommands.pending_consumers` until
they are answered, so that a CLOSE_PRODUCER or CLOSE_CONSUMER in between cancels them.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import sqlite3
from collections.abc import Awaitable, Callable, Coroutine
from functools import partial
from typing import TYPE_CHECKING, Any, TypeVar

from magnetar.broker.errors import BrokerError
from magnetar.broker.session.base import SessionBase
from magnetar.protocol.commands import request_id_of
from magnetar.protocol.enums import CommandType, ServerError
from magnetar.storage import StorageError
from magnetar.storage.metadata import deferring_sync

if TYPE_CHECKING:
    from magnetar.broker.metadata_sync import MetadataSync
    from magnetar.broker.service import BrokerService
    from magnetar.protocol.schema import BaseCommand

log = logging.getLogger("magnetar.broker.session")

T = TypeVar("T")


class PendingRequest:
    """A PRODUCER or SUBSCRIBE waiting for its topic; ``cancelled`` once closed before it was answered."""

    __slots__ = ("cancelled",)

    def __init__(self) -> None:
        self.cancelled = False


class DeferredCommands(SessionBase):
    """The requests of a session that wait for a topic to load."""

    def __init__(self, service: BrokerService) -> None:
        super().__init__(service)
        #: producer / consumer id -> its PRODUCER / SUBSCRIBE waiting for the topic to load
        self.pending_producers: dict[int, PendingRequest] = {}
        self.pending_consumers: dict[int, PendingRequest] = {}
        self._deferred: set[asyncio.Task[None]] = set()

    def answer_later(self, command: BaseCommand, work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` (the rest of ``command``'s handling) as a task; what it raises is answered."""
        task = asyncio.get_running_loop().create_task(self._answer(command, work))
        self._deferred.add(task)
        task.add_done_callback(self._deferred.discard)

    def after_metadata_write(
        self,
        command: BaseCommand,
        write: Callable[[], T | Awaitable[T]],
        answer: Callable[[T], None],
        refused: Callable[[BrokerError], None] | None = None,
    ) -> bool:
        """Run ``write`` (which may start a write of the metadata store: it returns an awaitable of its
        result then), then ``answer`` its result: at once when it wrote nothing (True); else (False)
        once the metadata thread committed the write and its sync
        (:class:`~magnetar.broker.metadata_sync.MetadataSync`) made it durable: nothing is
        acknowledged before it is durable. What ``write`` raises propagates; a BrokerError of the
        awaited write goes to ``refused`` when given (a command answered with its own response
        type), anything else is answered as :meth:`answer_later` answers it."""
        result = write()
        if not isinstance(result, Awaitable):
            answer(result)
            return True
        self.answer_later(command, self._answer_when_written(result, answer, refused))
        return False

    async def _answer_when_written(
        self, written: Awaitable[T], answer: Callable[[T], None], refused: Callable[[BrokerError], None] | None
    ) -> None:
        try:
            result = await self.durably_written(written)
        except BrokerError as exc:
            if refused is None:
                raise
            refused(exc)
            return
        if not self.closed:
            answer(result)

    async def durably_written(self, written: Awaitable[T]) -> T:
        """The result of a metadata write under way, once it is committed and durable (StorageError
        when the metadata thread's sync failed)."""
        result = await written
        sync: MetadataSync | None = getattr(self.service, "metadata_sync", None)
        if sync is not None:
            try:
                await sync.durable()
            except OSError as exc:
                raise StorageError(f"the metadata write could not be made durable: {exc}") from exc
        return result

    def after_metadata_job(self, command: BaseCommand, job: Callable[[], T], answer: Callable[[T], None]) -> None:
        """Run ``job`` (which reads and may write the metadata store, and changes no state of the
        loop's) as a job of the metadata thread, the store's one writer, after those queued there;
        its commits are made without their fsync (``deferring_sync``) and ``answer`` runs with its
        result on the loop once the metadata thread's sync made them durable. What ``job`` raises is
        answered as :meth:`answer_later` answers it."""
        self.answer_later(command, self._job_then_answer(job, answer))

    async def _job_then_answer(self, job: Callable[[], T], answer: Callable[[T], None]) -> None:
        service = self.service
        persistence = getattr(service, "persistence", None)
        sync: MetadataSync | None = getattr(service, "metadata_sync", None)
        if persistence is None or sync is None:
            answer(job())
            return
        with deferring_sync():
            context = contextvars.copy_context()
        result = await persistence.run(partial(context.run, job))
        await self._answer_when_durable(sync, result, answer)

    async def _answer_when_durable(self, sync: MetadataSync, result: T, answer: Callable[[T], None]) -> None:
        try:
            await sync.durable()
        except OSError as exc:
            raise StorageError(f"the metadata write could not be made durable: {exc}") from exc
        if not self.closed:
            answer(result)

    async def settled(self) -> None:
        """Wait until every command handed to :meth:`answer_later` so far has been answered (for
        callers that feed a session command after command and want each one done before the next)."""
        while self._deferred:
            await asyncio.gather(*self._deferred, return_exceptions=True)

    async def _answer(self, command: BaseCommand, work: Coroutine[Any, Any, None]) -> None:
        try:
            await work
        except Exception as exc:
            self.answer_failure(command, exc)

    def answer_failure(self, command: BaseCommand, exc: Exception) -> None:
        """Answer a request whose handling raised ``exc``; the connection stays open. A BrokerError is
        answered with its code, a storage failure (the disk refused: the request failed, the broker
        did not) with PersistenceError, anything else (a broker bug, logged) with UnknownError."""
        request_id = request_id_of(command)
        name = CommandType(command.type).name if command.type in CommandType._value2member_map_ else str(command.type)
        if isinstance(exc, BrokerError):
            code, message = exc.code, exc.message
            if request_id is None:
                log.info("refused %s from %s: %s", name, self.peer, message)
        elif isinstance(exc, (StorageError, sqlite3.Error)):
            log.error("storage failure handling %s from %s: %s", name, self.peer, exc)
            code, message = ServerError.PersistenceError, f"storage failure: {exc}"
        else:
            log.error("error handling %s from %s", name, self.peer, exc_info=exc)
            code, message = ServerError.UnknownError, f"internal broker error: {type(exc).__name__}"
        if request_id is not None:
            self.send_error(request_id, code, message)

    def pending_done(self, pending: dict[int, PendingRequest], key: int, request: PendingRequest) -> bool:
        """Forget a request that waited for its topic: False when the connection closed meanwhile
        (nothing to carry out nor answer), BrokerError ServiceNotReady when the producer or consumer
        was closed before it was created."""
        if pending.get(key) is request:
            del pending[key]
        if self.closed:
            return False
        if request.cancelled:
            raise BrokerError(ServerError.ServiceNotReady, "closed before its creation completed")
        return True

    def cancel_pending(self, pending: dict[int, PendingRequest], key: int) -> None:
        """A CLOSE_PRODUCER / CLOSE_CONSUMER for a request still waiting: it will not be carried out."""
        request = pending.pop(key, None)
        if request is not None:
            request.cancelled = True

    def refuse_if_pending(self, pending: dict[int, PendingRequest], key: int, what: str) -> None:
        """BrokerError ServiceNotReady when a request for the same id waits for its topic (as Pulsar
        answers a second PRODUCER or SUBSCRIBE while the first is under way)."""
        if key in pending:
            raise BrokerError(ServerError.ServiceNotReady, f"{what} is already present on the connection")
