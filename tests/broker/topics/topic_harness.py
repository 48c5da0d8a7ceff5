"""A persistent topic on a temporary directory, driven without sockets or an event loop.

The topic's sessions are fakes that record what the topic asked of them; the group commit is
a fake too: a test decides when appended entries become durable (``make_durable``).
"""

from __future__ import annotations

from pathlib import Path

from magnetar.broker.config import BrokerConfig
from magnetar.broker.loop_urgency import LoopUrgency
from magnetar.broker.policies.resolution import TopicPolicies
from magnetar.broker.topics.persistent import PersistentTopic
from magnetar.broker.topics.producer import Producer
from magnetar.protocol.enums import ProducerAccessMode, ServerError
from magnetar.protocol.framing import crc32c, encode_entry
from magnetar.protocol.schema import MessageMetadata
from magnetar.protocol.topic_name import TopicName
from magnetar.storage import ManagedCursor, ManagedLedger

TOPIC = "persistent://public/default/unit"
LEDGER_ID = 11


class FakeCommitter:
    """Records which topics appended; the test makes entries durable itself."""

    def __init__(self) -> None:
        self.appended_topics: list[PersistentTopic] = []
        self.urgency = LoopUrgency()

    def appended(self, topic: PersistentTopic) -> None:
        self.appended_topics.append(topic)


class FakeCursors:
    """The service's cursor side, unused by publishing."""

    def open_cursor(self, topic: PersistentTopic, name: str, mark_delete: int) -> ManagedCursor:
        raise AssertionError("no durable subscription in these tests")

    def maybe_trim(self, topic: PersistentTopic) -> None:
        pass


class RecordingContext:
    """A publish context that records how the topic completed it, in one log shared by all."""

    def __init__(self, log: list[tuple], sequence_id: int, highest_sequence_id: int = 0, num_messages: int = 1) -> None:
        self.log = log
        self.sequence_id = sequence_id
        self.highest_sequence_id = highest_sequence_id
        self.num_messages = num_messages

    def completed(self, ledger_id: int, entry_id: int) -> None:
        self.log.append(("receipt", self.sequence_id, ledger_id, entry_id))

    def duplicate(self) -> None:
        self.log.append(("duplicate", self.sequence_id))

    def failed(self, code: ServerError, message: str) -> None:
        self.log.append(("error", self.sequence_id, code))


class RecordingSession:
    """A producer's session that records what the topic told it."""

    peer = "127.0.0.1:1"
    client_version = "test"

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.reasons: list[str] = []

    def producer_ready(self, producer_id: int) -> None:
        self.calls.append(("ready", producer_id))

    def producer_refused(self, producer_id: int, reason: str) -> None:
        self.calls.append(("refused", producer_id))
        self.reasons.append(reason)

    def producer_closed_by_broker(self, producer_id: int) -> None:
        self.calls.append(("closed", producer_id))


class Wire:
    """A producer's session that writes to the client: what it wrote, in order, and the publish bytes
    it holds."""

    peer = "127.0.0.1:1"
    client_version = "test"

    def __init__(self) -> None:
        self.frames: list[tuple] = []
        self.pending_bytes = 0

    def send_receipt(self, producer_id: int, sequence_id: int, highest: int, ledger_id: int, entry_id: int) -> None:
        self.frames.append(("receipt", sequence_id, entry_id))

    def send_send_error(self, producer_id: int, sequence_id: int, code: ServerError, message: str) -> None:
        self.frames.append(("send_error", sequence_id, code))

    def producer_closed_by_broker(self, producer_id: int) -> None:
        self.frames.append(("close_producer", producer_id))

    def producer_ready(self, producer_id: int) -> None:
        self.frames.append(("ready", producer_id))

    def publish_done(self, size: int) -> None:
        self.pending_bytes -= size


class TopicHarness:
    """One persistent topic, its fake committer, and helpers to publish and complete."""

    def __init__(self, tmp_path: Path) -> None:
        self.ledger = ManagedLedger.open(tmp_path / "ledger", LEDGER_ID)
        self.committer = FakeCommitter()
        self.topic = PersistentTopic(
            TopicName.parse(TOPIC),
            self.ledger,
            config=BrokerConfig(data_dir=tmp_path),
            committer=self.committer,  # type: ignore[arg-type]
            cursors=FakeCursors(),
            producer_name_prefix="unit",
        )
        self.session = RecordingSession()
        self.log: list[tuple] = []
        self._ids = 0

    def producer(self, name: str, mode: ProducerAccessMode = ProducerAccessMode.Shared) -> Producer:
        self._ids += 1
        return Producer(self.session, self._ids, name, self.topic, mode, True)

    def publish(
        self, producer: Producer, sequence_id: int, highest_sequence_id: int = 0, chunk: tuple[int, int] | None = None
    ) -> bool:
        """Publish one entry; ``chunk`` = (chunk id, number of chunks) makes it a chunk of a message."""
        meta = MessageMetadata(producer_name=producer.name, sequence_id=sequence_id, publish_time=1)
        if chunk is not None:
            meta.chunk_id, meta.num_chunks_from_msg = chunk
        entry = encode_entry(meta, f"m{sequence_id}".encode())
        context = RecordingContext(self.log, sequence_id, highest_sequence_id)
        return self.topic.publish(producer, entry, crc32c(entry), context)

    def make_durable(self, upto: int | None = None) -> None:
        """What the group commit does once a sync round covered the entries up to ``upto`` (all by default)."""
        synced = self.ledger.sync()
        self.topic.on_durable(synced if upto is None else upto)

    def enable_deduplication(self) -> None:
        self.topic.apply_policies(TopicPolicies(deduplication=True))
