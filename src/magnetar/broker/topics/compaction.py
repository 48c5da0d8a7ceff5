"""Topic compaction: the latest message of every key, kept in a compacted ledger beside the topic's.

How a compaction runs (:class:`Compactor`), as Pulsar's two-phase compactor does:

1. The *horizon* is the last readable entry when the compaction starts. The input is the previous
   compacted view (if any) followed by the topic's entries after the previous horizon, up to the
   new one. While it runs, the topic keeps every entry of that input (``Topic.compaction_pin``).
2. Phase one reads the input and records, per key, the id (entry id, batch index) of its latest
   message. A tombstone (``null_value`` set, or an empty payload as Pulsar tests it) removes its
   key. Messages without a key are dropped from the compacted view, as Pulsar does by default
   (``topicCompactionRetainNullKey=false``).
3. Phase two reads the input again and writes what survives to a new compacted ledger: a single
   message whose id is its key's latest, a batch as it was when all its messages survive, nothing
   when none does, or else the batch re-encoded (with its own compression codec) where every
   superseded message becomes an empty message marked ``compacted_out``. Every entry keeps its
   original entry id, so consumers see the same message ids as in the topic.
4. The new ledger is synced, then the pointer ``compacted/<topic>`` in the metadata store is
   switched to it in one SQLite transaction; the previous compacted ledger is deleted afterwards.
   A crash before the switch leaves the old view in force (the half-written directory is an orphan,
   removed when the topic is next loaded); a crash after it leaves the new one.

Threads: the ledgers are read in bounded chunks as dispatch reads them (what is in memory on the
event loop, the files on the read thread); each chunk is then parsed, decompressed, re-batched and
appended to the new ledger in a worker thread, which is the only user of that new ledger until it is
closed, and which also makes the new directory and switches the pointer. Producers and consumers go
on meanwhile.

Storage: the compacted ledger (writer, index, view) is :mod:`magnetar.storage.compacted`; this
module decides what goes into it. The pointer is JSON ``{"dir": n, "horizon": entry id}``.

Retention: a compacted topic keeps its entries after the horizon until a compaction has read
them (``Topic.trim_position``); that plays the part of Pulsar's ``__compaction`` cursor, which is
not shown as a subscription here.
"""

from __future__ import annotations

import asyncio
import json
import logging
import shutil
import struct
import time
from collections.abc import Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from magnetar.broker.errors import BrokerError
from magnetar.broker.topics import lifecycle
from magnetar.broker.topics.compaction_records import (
    POINTER_PREFIX,
    CompactionRecords,
    MetadataJobs,
    settled,
)
from magnetar.protocol.batch import UnsupportedEntryError, open_entry
from magnetar.protocol.compression import CompressionError, compress
from magnetar.protocol.enums import ServerError
from magnetar.protocol.framing import ProtocolError, encode_entry, parse_entry_metadata
from magnetar.protocol.schema import MessageMetadata, SingleMessageMetadata
from magnetar.storage import Entry, ManagedLedger, MetadataStore, StorageError, mask_to_longs
from magnetar.storage.compacted import (
    CHUNK_BYTES,
    CHUNK_ENTRIES,
    CompactedView,
    CompactedWriter,
    MessageKey,
    compacted_root,
)

if TYPE_CHECKING:
    from magnetar.broker.config import BrokerConfig
    from magnetar.broker.topics.persistent import PersistentTopic as Topic
    from magnetar.storage.read_thread import ReadThread

log = logging.getLogger("magnetar.broker.topics.compaction")


_U32 = struct.Struct(">I")


# ---------------------------------------------------------------------------------------------
# the algorithm (pure: bytes in, bytes out)
# ---------------------------------------------------------------------------------------------
def _meta_key(meta: MessageMetadata) -> str | None:
    if meta.HasField("partition_key") and not meta.null_partition_key:
        return meta.partition_key
    return None


def _single_key(single: SingleMessageMetadata) -> str | None:
    if single.HasField("partition_key") and not single.null_partition_key:
        return single.partition_key
    return None


def _is_batch(meta: MessageMetadata) -> bool:
    return meta.HasField("num_messages_in_batch")


def _unbatch(data: bytes) -> list[tuple[SingleMessageMetadata, bytes]] | None:
    """The messages of a batch entry that can be opened here, else None (kept whole, as Pulsar)."""
    try:
        _, messages = open_entry(data)
    except (ProtocolError, CompressionError, UnsupportedEntryError):
        return None
    return messages  # type: ignore[return-value]


def _single_tombstone(meta: MessageMetadata, data: bytes) -> bool:
    if meta.null_value:
        return True
    if meta.HasField("uncompressed_size"):
        return meta.uncompressed_size == 0
    size = _U32.unpack_from(data, 0)[0]
    return len(data) - 4 - size == 0


class LatestByKey:
    """Phase one: the id of the latest live message of every key."""

    def __init__(self) -> None:
        self.latest: dict[str, MessageKey] = {}
        #: messages read (a batch counts each of its messages)
        self.messages = 0

    def scan(self, entry_id: int, data: bytes) -> None:
        """Account for one entry of the input, in order."""
        try:
            meta = parse_entry_metadata(data)
        except ProtocolError:
            return
        latest = self.latest
        if _is_batch(meta) and not len(meta.encryption_keys):
            messages = _unbatch(data)
            if messages is not None:
                for index, (single, payload) in enumerate(messages):
                    if single.compacted_out:
                        continue
                    self.messages += 1
                    key = _single_key(single)
                    if key is None:
                        continue
                    if single.null_value or not payload:
                        latest.pop(key, None)
                    else:
                        latest[key] = (entry_id, index)
                return
        self.messages += max(1, meta.num_messages_in_batch) if _is_batch(meta) else 1
        key = _meta_key(meta)
        if key is None or meta.HasField("marker_type"):
            return
        if _single_tombstone(meta, data):
            latest.pop(key, None)
        else:
            latest[key] = (entry_id, -1)


def _encode_singles(messages: Iterable[tuple[SingleMessageMetadata, bytes]]) -> bytes:
    parts: list[bytes] = []
    for single, payload in messages:
        meta = single.SerializeToString()
        parts.append(_U32.pack(len(meta)))
        parts.append(meta)
        parts.append(payload)
    return b"".join(parts)


def compact_entry(
    entry_id: int, data: bytes, latest: dict[str, MessageKey]
) -> tuple[bytes | None, list[int] | None]:
    """Phase two for one entry: ``(entry bytes to keep or None, survivors ack set or None)``.

    The ack set (Pulsar's convention: a set bit is a message still to deliver) is given only for a
    batch some of whose messages are compacted out; the entry bytes are the original ones unless
    the batch had to be re-encoded.
    """
    try:
        meta = parse_entry_metadata(data)
    except ProtocolError:
        return data, None  # cannot be read here: kept as it is, as Pulsar keeps undecodable batches
    if meta.HasField("marker_type"):
        return None, None
    if _is_batch(meta) and not len(meta.encryption_keys):
        messages = _unbatch(data)
        if messages is None:
            return data, None
        survivors = 0
        rewrite = False
        for index, (single, _payload) in enumerate(messages):
            if single.compacted_out:
                continue
            key = _single_key(single)
            if key is not None and latest.get(key) == (entry_id, index):
                survivors |= 1 << index
            else:
                rewrite = True
        if not survivors:
            return None, None
        everyone = (1 << len(messages)) - 1
        ack_set = None if survivors == everyone else mask_to_longs(survivors)
        if not rewrite:
            return data, ack_set
        out: list[tuple[SingleMessageMetadata, bytes]] = []
        for index, (single, payload) in enumerate(messages):
            if survivors >> index & 1 or single.compacted_out:
                out.append((single, payload))
                continue
            gone = SingleMessageMetadata(payload_size=0, compacted_out=True)
            if single.HasField("partition_key"):
                gone.partition_key = single.partition_key
            out.append((gone, b""))
        raw = _encode_singles(out)
        new_meta = MessageMetadata()
        new_meta.CopyFrom(meta)
        new_meta.uncompressed_size = len(raw)
        return encode_entry(new_meta, compress(meta.compression, raw)), ack_set
    key = _meta_key(meta)
    if key is not None and latest.get(key) == (entry_id, -1):
        return data, None
    return None, None


def survivors_of(data: bytes) -> list[int] | None:
    """The ack set of the messages not compacted out of a stored compacted entry (None: all)."""
    try:
        meta = parse_entry_metadata(data)
    except ProtocolError:
        return None
    if not _is_batch(meta) or len(meta.encryption_keys):
        return None
    messages = _unbatch(data)
    if messages is None:
        return None
    survivors = 0
    for index, (single, _payload) in enumerate(messages):
        if not single.compacted_out:
            survivors |= 1 << index
    if survivors == (1 << len(messages)) - 1 or not survivors:
        return None
    return mask_to_longs(survivors)


class EntryBatches:
    """The :class:`~magnetar.storage.compacted.BatchInspector` of Pulsar entries, for compacted views."""

    def batch_size(self, data: bytes) -> int | None:
        """Messages in a batch entry; None for a single message or unreadable metadata."""
        try:
            meta = parse_entry_metadata(data)
        except ProtocolError:
            return None
        return meta.num_messages_in_batch if _is_batch(meta) else None

    def survivors(self, data: bytes) -> list[int] | None:
        """Ack set of the messages of a batch not compacted out; None when all (or none) survive."""
        return survivors_of(data)


#: how compacted views of this broker look into entries
ENTRY_BATCHES = EntryBatches()


def open_view(directory: Path, ledger_id: int, horizon: int, reads: ReadThread | None = None) -> CompactedView:
    """Open a finished compacted ledger of a topic (its index is rebuilt if missing or damaged);
    ``reads``: the read thread dispatch reads its records on."""
    return CompactedView.open(directory, ledger_id, horizon, ENTRY_BATCHES, reads)


def write_compacted(writer: CompactedWriter, chunk: list[tuple[int, bytes]], latest: dict[str, MessageKey]) -> None:
    """Phase two over one chunk of the input: append what survives to the new compacted ledger."""
    for entry_id, data in chunk:
        kept, ack_set = compact_entry(entry_id, data, latest)
        if kept is not None:
            writer.add(entry_id, kept, ack_set)


# ---------------------------------------------------------------------------------------------
# the broker side: running compactions
# ---------------------------------------------------------------------------------------------
class Compactor:
    """Runs the compactions of a broker (one at a time per topic) and loads compacted views."""

    def __init__(self, config: BrokerConfig, topics: Mapping[str, object], reads: ReadThread | None = None) -> None:
        """Compact into ``config.data_dir``; ``reads``: the read thread compacted views are read on for
        dispatch; ``topics`` are the loaded topics by name (a compaction
        stops when its topic is no longer the one loaded under its name)."""
        self._data_dir = config.data_dir
        self._segment_max_bytes = config.segment_max_bytes
        self._topics = topics
        self._reads = reads
        #: its status and pointer rows, written by metadata jobs (compaction_records.py)
        self.records = CompactionRecords()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="magnetar-compaction")
        #: running compactions by topic name
        self.running: dict[str, asyncio.Task] = {}
        #: what the last compaction of each topic did (admin stats)
        self.stats: dict[str, dict[str, int]] = {}
        #: test hook: called in the worker after each chunk written in phase two
        self.after_chunk_written: Any = None

    @property
    def _metadata(self) -> MetadataStore:
        assert self.records.metadata is not None, "Compactor.start() was not called"
        return self.records.metadata

    # -- lifecycle -------------------------------------------------------------------------
    def start(self, metadata: MetadataStore, jobs: MetadataJobs | None = None) -> None:
        """Keep compaction state in ``metadata``, its records written by ``jobs`` (the metadata thread,
        in submission order; inline without); a compaction a previous broker left RUNNING (it crashed)
        did not finish: marked ERROR by the first of those jobs."""
        self.records.start(metadata, jobs)

    async def recorded(self) -> None:
        """Return once every record asked for so far is written (or failed, logged)."""
        await self.records.recorded()

    async def stop(self) -> None:
        """Cancel running compactions (their old views stay) and wait for the worker."""
        tasks = list(self.running.values())
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.get_running_loop().run_in_executor(None, self._executor.shutdown, True)

    # -- loading and forgetting ------------------------------------------------------------
    def open_stored_view(self, name: str, ledger_id: int) -> CompactedView | None:
        """(a topic-load thread) The compacted view of a topic being loaded, opened (its index read),
        None when it has none; orphan compacted ledgers are removed. A view that cannot be opened is
        forgotten (the topic reads uncompacted)."""
        root = compacted_root(self._data_dir, ledger_id)
        pointer = self._pointer(name)
        keep = str(pointer["dir"]) if pointer else None
        if name not in self.running and root.is_dir():
            for child in root.iterdir():
                if child.name != keep:
                    log.info("removing orphan compacted ledger %s of %s", child, name)
                    shutil.rmtree(child, ignore_errors=True)
        if pointer is None:
            return None
        try:
            view = open_view(root / str(pointer["dir"]), ledger_id, int(pointer["horizon"]), self._reads)
        except (StorageError, OSError, KeyError, ValueError) as exc:
            log.error("compacted view of %s cannot be opened (%s): reading it uncompacted", name, exc)
            self._metadata.delete_kv(POINTER_PREFIX + name)
            return None
        log.debug("loaded %r for %s", view, name)
        return view

    def _pointer(self, name: str) -> dict[str, Any] | None:
        raw = self._metadata.get_kv(POINTER_PREFIX + name)
        if not raw:
            return None
        try:
            value = json.loads(raw)
        except ValueError:
            return None
        return value if isinstance(value, dict) and "dir" in value and "horizon" in value else None

    def forget(self, name: str, ledger_id: int | None, topic: Topic | None) -> None:
        """A topic is being deleted: stop its compaction and delete its compacted ledgers."""
        task = self.running.pop(name, None)
        if task is not None:
            task.cancel()
        if topic is not None and topic.compacted is not None:
            topic.compacted.close()
            topic.compacted = None
        self.records.forget(name)
        self.stats.pop(name, None)
        if ledger_id is not None:
            root = compacted_root(self._data_dir, ledger_id)
            # after whatever the worker is doing for a cancelled compaction of this topic
            self._executor.submit(shutil.rmtree, root, True)

    # -- triggering ------------------------------------------------------------------------
    async def trigger_recorded(self, topic: Topic) -> asyncio.Task:
        """:meth:`trigger`, returning once the status RUNNING is committed (an admin request answers
        after it); when that commit fails, its error is raised and nothing is started."""
        task = self.running.get(topic.name)
        if task is not None:
            return task
        self._check_persistent(topic)
        recorded = self.records.status(topic.name, "RUNNING")
        if recorded is not None:
            await recorded
        return self.trigger(topic, recorded=True)

    def trigger(self, topic: Topic, recorded: bool = False) -> asyncio.Task:
        """Start compacting ``topic`` in the background (or return the compaction running); its status
        RUNNING is recorded first unless ``recorded``."""
        task = self.running.get(topic.name)
        if task is not None:
            return task
        self._check_persistent(topic)
        if not recorded:
            self.records.status(topic.name, "RUNNING")
        task = asyncio.create_task(self._run(topic), name=f"compaction:{topic.name}")
        self.running[topic.name] = task
        task.add_done_callback(lambda t, name=topic.name: self._done(name, t))
        return task

    def _done(self, name: str, task: asyncio.Task) -> None:
        if self.running.get(name) is task:
            del self.running[name]
        if not task.cancelled():
            task.exception()  # retrieved: logged and recorded by _run already

    @staticmethod
    def _check_persistent(topic: Topic) -> None:
        if not topic.persistent:
            raise BrokerError(
                ServerError.NotAllowedError, f"{topic.name} is non-persistent: it cannot be compacted"
            )

    async def _run(self, topic: Topic) -> None:
        started = time.time()
        try:
            removed = await self.compact(topic)
        except asyncio.CancelledError:
            if not topic.closed:  # a deleted topic has no status left to record
                self.records.status(topic.name, "ERROR", "interrupted by a broker shutdown")
            raise
        except Exception as exc:
            log.exception("compaction of %s failed", topic.name)
            if not topic.closed:
                stats = self.stats.setdefault(topic.name, {})
                stats["lastCompactionFailedTimestamp"] = int(time.time() * 1000)
                await settled(self.records.status(topic.name, "ERROR", f"{type(exc).__name__}: {exc}"))
            raise
        if topic.closed:
            return
        # the compaction is done once its status is committed (a failed record is logged)
        await settled(self.records.status(topic.name, "SUCCESS"))
        stats = self.stats.setdefault(topic.name, {})
        stats["lastCompactionRemovedEventCount"] = removed
        stats["lastCompactionSucceedTimestamp"] = int(time.time() * 1000)
        stats["lastCompactionDurationTimeInMills"] = int((time.time() - started) * 1000)

    # -- the compaction itself ---------------------------------------------------------------
    async def compact(self, topic: Topic) -> int:
        """Compact ``topic`` up to its last readable entry now; returns the messages removed.

        The caller makes sure only one compaction of a topic runs at a time (see :meth:`trigger`).
        """
        loop = asyncio.get_running_loop()
        previous = topic.compacted
        horizon = topic.last_readable_id
        start = max(previous.horizon + 1 if previous is not None else -1, topic.ledger.first_entry_id)
        if horizon < start:
            log.info("nothing to compact in %s (horizon %d)", topic.name, horizon)
            return 0
        topic.compaction_pin = start
        directory: Path | None = None
        writer: CompactedWriter | None = None
        view: CompactedView | None = None
        try:
            scan = LatestByKey()
            async for chunk in self._input(topic, previous, start, horizon):
                await loop.run_in_executor(self._executor, _scan_chunk, scan, chunk)
            log.info(
                "compacting %s up to entry %d: %d live keys among %d messages",
                topic.name,
                horizon,
                len(scan.latest),
                scan.messages,
            )
            root = compacted_root(self._data_dir, topic.ledger_id)
            directory = await loop.run_in_executor(self._executor, _new_directory, root)
            number = int(directory.name)
            writer = await loop.run_in_executor(
                self._executor,
                CompactedWriter,
                directory,
                topic.ledger_id,
                self._segment_max_bytes,
            )
            hook = self.after_chunk_written
            async for chunk in self._input(topic, previous, start, horizon):
                await loop.run_in_executor(self._executor, _write_chunk, writer, chunk, scan.latest, hook)
            await loop.run_in_executor(self._executor, writer.finish, horizon)
            view = await loop.run_in_executor(
                self._executor, open_view, directory, topic.ledger_id, horizon, self._reads
            )
            self._check_alive(topic)
            if topic.compacted is not previous:
                raise StorageError(f"the compacted view of {topic.name} changed during its compaction")
            # the switch: one metadata transaction (and its sync, in the worker); a crash before it keeps the old view
            pointer = json.dumps({"dir": number, "horizon": horizon}).encode()
            await loop.run_in_executor(self._executor, self._metadata.put_kv, POINTER_PREFIX + topic.name, pointer)
        except BaseException:
            if view is not None:
                view.close()
            if writer is not None:
                self._executor.submit(writer.abort)
            elif directory is not None:
                self._executor.submit(shutil.rmtree, directory, True)
            topic.compaction_pin = None
            raise
        topic.compacted = view
        topic.compaction_pin = None
        if previous is not None:
            previous.close()
            self._executor.submit(shutil.rmtree, previous.directory, True)
        for sub in topic.subscriptions.values():
            sub.schedule_dispatch()
        if topic.closed:  # while the pointer was switched: the topic's close closed the previous view
            view.close()
        else:
            lifecycle.trim(topic)
        log.info("compacted %s up to entry %d: %d entries in %s", topic.name, horizon, len(view), directory)
        return max(0, scan.messages - len(scan.latest))

    def _check_alive(self, topic: Topic) -> None:
        if topic.closed or self._topics.get(topic.name) is not topic:
            raise StorageError(f"{topic.name} was closed during its compaction")

    async def _input(self, topic: Topic, previous: CompactedView | None, start: int, horizon: int):  # noqa: ANN202
        """The compaction input in chunks: the previous view, then new entries (from the files on the
        read thread, from memory on the loop, as dispatch reads them)."""
        if previous is not None:
            index = 0
            while index < len(previous):
                self._check_alive(topic)
                last = min(len(previous), index + CHUNK_ENTRIES) - 1
                chunk = previous.records_of(await read_entries(previous.ledger, index, last, CHUNK_BYTES))
                index += len(chunk)
                yield chunk
        position = start
        while position <= horizon:
            self._check_alive(topic)
            last = min(horizon, position + CHUNK_ENTRIES - 1)
            entries = await read_entries(topic.ledger, position, last, CHUNK_BYTES)
            position += len(entries)
            buffer = getattr(topic, "txn_buffer", None)  # markers and aborted messages are never compacted in
            yield [(e.entry_id, e.data) for e in entries if buffer is None or not buffer.hidden(e.entry_id)]


def _new_directory(root: Path) -> Path:
    """(the worker) The directory of the next compacted ledger under ``root``: one past the highest."""
    try:
        numbers = [int(c.name) for c in root.iterdir() if c.name.isdigit()]
    except OSError:
        numbers = []
    root.mkdir(parents=True, exist_ok=True)
    return root / str(1 + max(numbers, default=0))


async def read_entries(ledger: ManagedLedger, first: int, last: int, max_bytes: int) -> list[Entry]:
    """Entries ``first..`` (up to ``last`` and ``max_bytes``, at least one) read as dispatch reads them:
    from memory on the loop, from the files on the ledger's read thread (:meth:`ManagedLedger.read_later`)."""
    if ledger.in_memory(first):
        return ledger.read_range(first, last, max_bytes)
    future: asyncio.Future[list[Entry] | BaseException] = asyncio.get_running_loop().create_future()
    if not ledger.read_later(first, last, max_bytes, lambda result: future.done() or future.set_result(result)):
        return ledger.read_range(first, last, max_bytes)  # closed: it raises
    result = await future
    if isinstance(result, BaseException):
        raise result
    return result


def _scan_chunk(scan: LatestByKey, chunk: list[tuple[int, bytes]]) -> None:
    for entry_id, data in chunk:
        scan.scan(entry_id, data)


def _write_chunk(
    writer: CompactedWriter, chunk: list[tuple[int, bytes]], latest: dict[str, MessageKey], hook
) -> None:  # noqa: ANN001
    write_compacted(writer, chunk, latest)
    if hook is not None:
        hook(writer)

