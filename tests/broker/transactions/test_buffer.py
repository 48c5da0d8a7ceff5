"""The transaction buffer: the max-read position, markers, aborted messages, replay on load."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from magnetar.broker.transactions.buffer import (
    TransactionBuffer,
    scan_ledger,
    state_from_snapshot,
    with_txn_id,
)
from magnetar.protocol.framing import encode_entry, parse_entry_metadata
from magnetar.protocol.schema import MessageMetadata
from magnetar.storage import ManagedLedger

A, B = (0, 1), (0, 2)


class FakeTopic:
    """A topic whose appends become durable when the test says so."""

    name = "persistent://public/default/t"

    def __init__(self, ledger: ManagedLedger) -> None:
        self.ledger = ledger
        self.waiting: list[Callable[[], None]] = []
        self.changes = 0

    def append(self, payload: bytes, txn: tuple[int, int] | None = None) -> int:
        entry = encode_entry(MessageMetadata(producer_name="p", sequence_id=0, publish_time=1), payload)
        return self.ledger.append(with_txn_id(entry, txn) if txn else entry)

    def append_marker(self, entry: bytes, durable: Callable[[], None], failed: Callable[[str], None]) -> int:
        self.waiting.append(durable)
        return self.ledger.append(entry)

    def txn_visibility_changed(self) -> None:
        self.changes += 1

    def make_durable(self) -> None:
        for done in self.waiting:
            done()
        self.waiting.clear()


def test_max_read_stops_before_the_first_open_transaction(tmp_path: Path) -> None:
    with ManagedLedger.open(tmp_path / "l", 1) as ledger:
        topic = FakeTopic(ledger)
        buffer = TransactionBuffer(topic)
        plain = topic.append(b"p0")
        a0 = topic.append(b"a0", A)
        buffer.appended(A, a0)
        b0 = topic.append(b"b0", B)
        buffer.appended(B, b0)
        topic.append(b"p1")
        assert buffer.max_read(ledger.last_entry_id) == plain
        ended = []
        buffer.end(B, commit=False, done=lambda why: ended.append("B"))
        assert buffer.max_read(ledger.last_entry_id) == plain  # A still open
        topic.make_durable()
        assert ended == ["B"]
        buffer.end(A, commit=True, done=lambda why: ended.append("A"))
        topic.make_durable()
        last = ledger.last_entry_id
        assert buffer.max_read(last) == last
        readable = [e for e in range(last + 1) if not buffer.hidden(e)]
        assert readable == [plain, a0, plain + 3]  # p0, a0, p1: b0 aborted, two markers hidden
        buffer.end(A, commit=True, done=lambda why: ended.append("again"))
        assert ended == ["B", "A", "again"]  # ending again answers at once
        assert buffer.check_open(A) is not None


def test_replay_rebuilds_what_was_aborted_and_what_is_open(tmp_path: Path) -> None:
    with ManagedLedger.open(tmp_path / "l", 1) as ledger:
        topic = FakeTopic(ledger)
        buffer = TransactionBuffer(topic)
        for txn in (A, B):
            buffer.appended(txn, topic.append(b"x", txn))
        buffer.end(A, commit=False, done=lambda why: None)
        topic.make_durable()
        open_c = (0, 3)
        buffer.appended(open_c, topic.append(b"y", open_c))
        state = scan_ledger(ledger)
        assert state.ended == {A: False}
        assert state.ongoing == {B: [1], open_c: [3]}
        assert state.hidden == {0, 2}
        assert parse_entry_metadata(ledger.read(1).data).txnid_least_bits == 2


def test_a_snapshot_plus_the_entries_after_it_is_the_whole_replay(tmp_path: Path) -> None:
    with ManagedLedger.open(tmp_path / "l", 1) as ledger:
        topic = FakeTopic(ledger)
        buffer = TransactionBuffer(topic)
        for txn in (A, B):
            buffer.appended(txn, topic.append(b"x", txn))
        buffer.end(A, commit=False, done=lambda why: None)
        topic.make_durable()
        snapshot = json.loads(json.dumps(buffer.snapshot(1, ledger.last_entry_id)))
        later = (0, 3)
        buffer.appended(later, topic.append(b"y", later))
        buffer.end(B, commit=True, done=lambda why: None)
        topic.make_durable()
        state, position = state_from_snapshot(snapshot)
        assert (snapshot["ledger_id"], position) == (1, 2)
        resumed = scan_ledger(ledger, position + 1, state)
        whole = scan_ledger(ledger)
        assert (resumed.ongoing, resumed.ended, resumed.hidden) == (whole.ongoing, whole.ended, whole.hidden)
        assert resumed.ongoing == {later: [3]} and resumed.ended == {A: False, B: True}
