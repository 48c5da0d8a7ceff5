"""The options of ``magnetar perf``: pulsar-perf's names (and its one-dash short forms), parsed
into the settings of the producer and consumer loads.

Where pulsar-perf's short form would clash, the brief's form wins: ``-t`` is ``--time`` here
(pulsar-perf's ``-t`` is the number of topics; ``--num-topics`` is spelled out), and ``-time`` also
means ``--time``, as in pulsar-perf.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from magnetar.protocol.enums import CompressionType, InitialPosition, SubType

TopicsArg = Annotated[list[str], typer.Argument(help="Topic(s); with --num-topics N one name becomes NAME-0 ... NAME-(N-1)")]
RateOpt = Annotated[float, typer.Option("--rate", "-r", help="Messages per second across all producers/consumers (0 = unlimited)")]
NumMessagesOpt = Annotated[int, typer.Option("--num-messages", "-m", help="Stop after this many messages in all (0 = no limit)")]
TimeOpt = Annotated[float, typer.Option("--time", "-t", "-time", "--test-duration", help="Stop after this many seconds (0 = no limit)")]
NumTopicsOpt = Annotated[int, typer.Option("--num-topics", "--num-topic", help="Number of topics made from one topic name")]
SeparatorOpt = Annotated[str, typer.Option("--separator", help="Between a topic name and its number with --num-topics")]
SizeOpt = Annotated[int, typer.Option("--size", "-s", help="Payload bytes (random letters)")]
PayloadFileOpt = Annotated[Path | None, typer.Option("--payload-file", "-f", help="Payloads: the file's records, sent in turn")]
PayloadDelimiterOpt = Annotated[str, typer.Option("--payload-delimiter", "-e", help="Separator of the records of --payload-file")]
ProducersOpt = Annotated[int, typer.Option("--num-producers", "--producers", "-n", help="Producers per topic (partition)")]
BatchMaxMessagesOpt = Annotated[int, typer.Option("--batch-max-messages", "-bm", help="Most messages in a batch")]
BatchMaxBytesOpt = Annotated[int, typer.Option("--batch-max-bytes", "-bb", help="Most payload bytes in a batch")]
BatchDelayOpt = Annotated[float, typer.Option("--batch-delay-ms", "--batch-time-window", "-b", help="Batching delay, ms")]
DisableBatchingOpt = Annotated[bool, typer.Option("--disable-batching", "-db", help="Send every message on its own")]
CompressionOpt = Annotated[str, typer.Option("--compression", "-z", help="NONE, LZ4, ZLIB, ZSTD or SNAPPY")]
MaxOutstandingOpt = Annotated[int, typer.Option("--max-outstanding", "-o", help="Most messages awaiting a receipt (0 = no limit)")]
KeyModeOpt = Annotated[str | None, typer.Option("--message-key-generation-mode", "-mk", help="Message keys: autoIncrement or random (default: none)")]
ConsumersOpt = Annotated[int, typer.Option("--num-consumers", "--consumers", help="Consumers per subscription and topic")]
ConsumersShortOpt = Annotated[int, typer.Option("--num-consumers", "--consumers", "-n", help="Consumers per subscription and topic")]
SubscriptionsOpt = Annotated[list[str] | None, typer.Option("--subscriptions", "--subscriber-name", "-ss", help="Subscription name(s) (repeatable)")]
NumSubscriptionsOpt = Annotated[int, typer.Option("--num-subscriptions", "-ns", help="Subscriptions per topic: NAME-0 ... when one name is given")]
SubTypeOpt = Annotated[str, typer.Option("--subscription-type", "-st", help="Exclusive, Shared, Failover or Key_Shared")]
PositionOpt = Annotated[str, typer.Option("--subscription-position", "-sp", help="Where a new subscription starts: Latest or Earliest")]
ReceiverQueueOpt = Annotated[int, typer.Option("--receiver-queue-size", "-q", help="Receiver queue size of each consumer")]
AckDelayOpt = Annotated[int, typer.Option("--acks-delay-millis", help="Acknowledgements are grouped this long, ms")]
DrainTimeoutOpt = Annotated[float, typer.Option("--drain-timeout", help="Seconds to wait for outstanding receipts/messages at the end")]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print one JSON document at the end (progress lines go to stderr)")]

KEY_MODES = ("autoIncrement", "random")


class PerfOptionError(ValueError):
    """An option value that cannot be used; the message names the option."""


def _choice(option: str, value: str, choices: dict[str, Any]) -> Any:
    chosen = choices.get(value.lower().replace("-", "_"))
    if chosen is None:
        names = ", ".join(sorted({c if isinstance(c, str) else c.name for c in choices.values()}))
        raise PerfOptionError(f"{option}: unknown value {value!r}: use one of {names}")
    return chosen


def parse_compression(value: str) -> CompressionType:
    """A --compression name."""
    return _choice("--compression", value, {c.name.lower(): c for c in CompressionType})


def parse_subscription_type(value: str) -> SubType:
    """A --subscription-type name (Key_Shared, key-shared and KeyShared alike)."""
    choices = {t.name.lower(): t for t in SubType}
    choices["keyshared"] = SubType.Key_Shared
    return _choice("--subscription-type", value, choices)


def parse_position(value: str) -> InitialPosition:
    """A --subscription-position name."""
    return _choice("--subscription-position", value, {p.name.lower(): p for p in InitialPosition})


def parse_key_mode(value: str | None) -> str | None:
    """A --message-key-generation-mode name, or None."""
    if value is None:
        return None
    return _choice("--message-key-generation-mode", value, {m.lower(): m for m in KEY_MODES})


def expand_topics(topics: list[str], num_topics: int, separator: str = "-") -> list[str]:
    """The topics of a run: with --num-topics N > 1 and one name, NAME-0 ... NAME-(N-1)."""
    if num_topics < 1:
        raise PerfOptionError("--num-topics must be at least 1")
    if num_topics == 1 or num_topics == len(topics):
        return list(topics)
    if len(topics) != 1:
        raise PerfOptionError(f"--num-topics {num_topics} needs one topic name (or exactly {num_topics}), not {len(topics)}")
    return [f"{topics[0]}{separator}{i}" for i in range(num_topics)]


def expand_subscriptions(names: list[str], num_subscriptions: int) -> list[str]:
    """The subscriptions of each topic: with --num-subscriptions N > 1 and one name, NAME-0 ...."""
    if num_subscriptions < 1:
        raise PerfOptionError("--num-subscriptions must be at least 1")
    if num_subscriptions == 1 or num_subscriptions == len(names):
        return list(names)
    if len(names) != 1:
        raise PerfOptionError(f"--num-subscriptions {num_subscriptions} needs one subscription name, not {len(names)}")
    return [f"{names[0]}-{i}" for i in range(num_subscriptions)]


def make_payloads(size: int, payload_file: Path | None = None, delimiter: str = "\n") -> list[bytes]:
    """What the producers send in turn: the records of --payload-file, else one payload of
    ``size`` random capital letters (pulsar-perf's payload)."""
    if payload_file is not None:
        try:
            data = payload_file.read_bytes()
        except OSError as exc:
            raise PerfOptionError(f"--payload-file: cannot read {payload_file}: {exc.strerror}") from None
        sep = delimiter.encode().decode("unicode_escape").encode() if delimiter else b""
        records = [r for r in data.split(sep) if r] if sep else [data]
        if not records:
            raise PerfOptionError(f"--payload-file: {payload_file} holds no payload")
        return records
    if size < 0:
        raise PerfOptionError("--size must not be negative")
    rng = random.Random(size)
    return [bytes(rng.randrange(65, 91) for _ in range(size))]


def check_run_limits(rate: float, num_messages: int, duration_s: float) -> None:
    """Refuse negative rates, counts and durations."""
    if rate < 0:
        raise PerfOptionError("--rate must not be negative")
    if num_messages < 0:
        raise PerfOptionError("--num-messages must not be negative")
    if duration_s < 0:
        raise PerfOptionError("--time must not be negative")


@dataclass(frozen=True)
class ProducerSettings:
    """What the producers of a run do."""

    topics: list[str]
    producers_per_topic: int = 1
    rate: float = 100
    max_messages: int = 0
    duration_s: float = 0
    payloads: tuple[bytes, ...] = (b"x" * 1024,)
    batching: bool = True
    batch_max_messages: int = 1000
    batch_max_bytes: int = 128 * 1024
    batch_delay_ms: float = 1
    compression: CompressionType = CompressionType.NONE
    max_outstanding: int = 50_000
    key_mode: str | None = None
    #: names producers ``PREFIX-0``, ``PREFIX-1``...: end-to-end runs find a message's sender by name
    producer_name_prefix: str | None = None

    def __post_init__(self) -> None:
        check_run_limits(self.rate, self.max_messages, self.duration_s)
        if self.producers_per_topic < 1:
            raise PerfOptionError("--num-producers must be at least 1")
        if self.batch_max_messages < 1 or self.batch_max_bytes < 1 or self.batch_delay_ms < 0:
            raise PerfOptionError("--batch-max-messages and --batch-max-bytes must be positive, --batch-delay-ms not negative")
        if self.max_outstanding < 0:
            raise PerfOptionError("--max-outstanding must not be negative")

    def producer_options(self) -> dict[str, Any]:
        """Keyword arguments of ``create_producer``."""
        return {
            "batching_enabled": self.batching,
            "batching_max_messages": self.batch_max_messages,
            "batching_max_allowed_size_in_bytes": self.batch_max_bytes,
            "batching_max_publish_delay_ms": self.batch_delay_ms,
            "compression_type": self.compression,
            "max_pending_messages": 0,
            "send_timeout_millis": 30_000,
        }

    def describe(self) -> dict[str, Any]:
        """The settings as the JSON document reports them."""
        sizes = sorted({len(p) for p in self.payloads})
        return {
            "topics": self.topics, "producers_per_topic": self.producers_per_topic, "rate": self.rate,
            "num_messages": self.max_messages, "time_s": self.duration_s,
            "payload_sizes": sizes if len(sizes) <= 10 else [sizes[0], sizes[-1]],
            "batching": self.batching, "batch_max_messages": self.batch_max_messages,
            "batch_max_bytes": self.batch_max_bytes, "batch_delay_ms": self.batch_delay_ms,
            "compression": self.compression.name, "max_outstanding": self.max_outstanding, "key_mode": self.key_mode,
        }


@dataclass(frozen=True)
class ConsumerSettings:
    """What the consumers of a run do."""

    topics: list[str]
    subscriptions: list[str]
    consumers_per_subscription: int = 1
    subscription_type: SubType = SubType.Exclusive
    position: InitialPosition = InitialPosition.Latest
    rate: float = 0
    max_messages: int = 0
    duration_s: float = 0
    receiver_queue_size: int = 1000
    ack_delay_ms: int = 100

    def __post_init__(self) -> None:
        check_run_limits(self.rate, self.max_messages, self.duration_s)
        if self.consumers_per_subscription < 1:
            raise PerfOptionError("--num-consumers must be at least 1")
        if self.receiver_queue_size < 1:
            raise PerfOptionError("--receiver-queue-size must be at least 1")
        if self.ack_delay_ms < 0:
            raise PerfOptionError("--acks-delay-millis must not be negative")

    def subscribe_options(self) -> dict[str, Any]:
        """Keyword arguments of ``subscribe`` (besides topic and subscription)."""
        return {
            "consumer_type": self.subscription_type, "initial_position": self.position,
            "receiver_queue_size": self.receiver_queue_size, "ack_group_time_ms": self.ack_delay_ms,
        }

    def describe(self) -> dict[str, Any]:
        """The settings as the JSON document reports them."""
        return {
            "topics": self.topics, "subscriptions": self.subscriptions,
            "consumers_per_subscription": self.consumers_per_subscription,
            "subscription_type": self.subscription_type.name, "subscription_position": self.position.name,
            "rate": self.rate, "num_messages": self.max_messages, "time_s": self.duration_s,
            "receiver_queue_size": self.receiver_queue_size, "acks_delay_millis": self.ack_delay_ms,
        }
