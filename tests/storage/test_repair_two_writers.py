"""``magnetar repair --check`` finds what two writers on one data directory leave: entry ids that
repeat (go backwards) or are missing between a ledger's segments, and cursors acknowledging entries
their ledger does not hold; a repair cuts such cursors back."""

from __future__ import annotations

from pathlib import Path

import typer
from crc32c import crc32c
from typer.testing import CliRunner

from magnetar.cli.repair import repair
from magnetar.storage import CursorState, ManagedLedger, MetadataStore
from magnetar.storage.dir_lock import DataDirLock
from magnetar.storage.repair import repair_data_dir
from magnetar.storage.segment import RECORD_HEADER, segment_file_name

TOPIC = "persistent://public/default/two-writers"


def write_segment(directory: Path, base: int, count: int) -> None:
    """A segment file of ``count`` intact records, written by hand."""
    directory.mkdir(parents=True, exist_ok=True)
    records = []
    for i in range(count):
        data = b"entry-%d" % (base + i)
        records.append(RECORD_HEADER.pack(len(data), crc32c(data)) + data)
    (directory / segment_file_name(base)).write_bytes(b"".join(records))


def data_dir_with_topic(tmp_path: Path, cursor: CursorState | None = None) -> tuple[Path, int]:
    data = tmp_path / "data"
    with MetadataStore(data / "metadata.db") as store:
        store.ensure_defaults()
        ledger_id = store.get_or_create_topic(TOPIC)
        if cursor is not None:
            store.save_cursors([(TOPIC, "sub", cursor.to_bytes())])
    return data, ledger_id


def run_repair(*args: str) -> tuple[int, str]:
    app = typer.Typer()
    app.command()(repair)
    result = CliRunner().invoke(app, list(args))
    return result.exit_code, result.output


def test_two_ledgers_appending_to_one_directory_leave_repeated_ids_that_check_reports(tmp_path: Path) -> None:
    data, ledger_id = data_dir_with_topic(tmp_path)
    directory = data / "ledgers" / str(ledger_id)
    first = ManagedLedger.open(directory, ledger_id, segment_max_bytes=200, write_behind=False)
    for i in range(3):
        first.append(b"first-%02d" % i + bytes(40))
    first.sync()
    # a second broker opens the same ledger: each rolls to a new segment at the id it believes next
    second = ManagedLedger.open(directory, ledger_id, segment_max_bytes=200, write_behind=False)
    for i in range(6):
        first.append(b"first-%02d" % (3 + i) + bytes(40))
        first.sync()
        second.append(b"secnd-%02d" % i + bytes(40))
        second.sync()
    first.close()
    second.close()
    report = repair_data_dir(data, fix=False)
    assert report.repeated_entries == 1
    assert [line for line in report.found if "repeat" in line] == [
        f"ledger {ledger_id} segment {segment_file_name(6)}: starts at entry 6 but {segment_file_name(3)} holds "
        "entries up to 6: 1 entry ids repeat (the ids go backwards; two writers?)"
    ]
    code, output = run_repair(str(data), "--check")
    assert code == 1
    assert "entry ids repeated: 1;" in output


def test_overlapping_and_gapped_segments_are_counted(tmp_path: Path) -> None:
    data, ledger_id = data_dir_with_topic(tmp_path)
    directory = data / "ledgers" / str(ledger_id)
    write_segment(directory, 0, 10)  # 0..9
    write_segment(directory, 5, 5)  # 5..9 again: 5 ids repeat
    write_segment(directory, 12, 3)  # 10, 11 missing
    report = repair_data_dir(data, fix=False)
    assert (report.repeated_entries, report.lost_entries, report.acked_missing_entries) == (5, 2, 0)
    assert sum("repeat" in line for line in report.found) == 1
    assert f"ledger {ledger_id} segment {segment_file_name(12)}: entries 10..11 (2) are missing before it" in report.found
    assert not report.clean


def test_cursors_acknowledging_entries_the_ledger_does_not_hold_are_found_and_cut_back(tmp_path: Path) -> None:
    cursor = CursorState(14)  # the ledger holds 0..9: 10..14 are acknowledged but missing
    cursor.ack_runs([(17, 18)])
    cursor.ack_batch_indexes(20, [0b101], 3)
    healthy = CursorState(4)
    data, ledger_id = data_dir_with_topic(tmp_path, cursor)
    with MetadataStore(data / "metadata.db") as store:
        store.save_cursors([(TOPIC, "healthy", healthy.to_bytes())])
    write_segment(data / "ledgers" / str(ledger_id), 0, 10)
    db_before = (data / "metadata.db" / "metadata.db").read_bytes()

    report = repair_data_dir(data, fix=False)
    assert report.acked_missing_entries == 5 + 2 + 1
    assert report.found == [
        f"cursor sub of {TOPIC} (mark-delete 14): 8 entries acknowledged but missing from ledger {ledger_id}, "
        "whose last entry is 9"
    ]
    assert (data / "metadata.db" / "metadata.db").read_bytes() == db_before
    code, output = run_repair(str(data), "--check")
    assert code == 1 and "acknowledged but missing: 8" in output

    fixed = repair_data_dir(data)
    assert fixed.repaired == [f"cursor sub of {TOPIC}: cut back to its ledger's last entry"]
    with MetadataStore(data / "metadata.db") as store:
        states = {sub: CursorState.from_bytes(blob) for sub, blob in store.load_cursors(TOPIC).items()}
    assert states["sub"] == CursorState(9)
    assert states["healthy"] == healthy
    assert repair_data_dir(data, fix=False).clean
    assert run_repair(str(data), "--check")[0] == 0


def test_repair_refuses_a_directory_a_broker_holds(tmp_path: Path) -> None:
    data, _ = data_dir_with_topic(tmp_path)
    with DataDirLock.acquire(data):
        code, output = run_repair(str(data), "--check")
    assert code == 2
    assert f"data directory {data} is in use by process" in output and "stop the broker first" in output
    assert run_repair(str(data), "--check")[0] == 0
