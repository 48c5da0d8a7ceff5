"""``magnetar repair DATA_DIR``: check a stopped broker's data directory and rebuild what can be rebuilt.

It checks ``metadata.db`` (a damaged database is set aside and a new one is built from every row
still readable), scans every segment file (damaged entries in the middle of a segment, torn tails,
segments whose framing is lost, entry ids that repeat or are missing between segments), checks the
cursors against their ledgers (entries acknowledged but missing are cut back), registers again the
topics whose metadata rows were lost (from the topic name kept next to each ledger), and prints
what it found, what it repaired and what is lost. It holds the directory's lock meanwhile.
Exit status: 0 when the directory was clean, 1 when something was found (repaired or not), 2 when
the directory does not exist, a running broker holds it (``DATA_DIR/LOCK``) or it is newer than
this magnetar (``DATA_DIR/FORMAT``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from magnetar.storage.data_format import DataFormatError, check_format
from magnetar.storage.dir_lock import DataDirLock, DataDirLockedError
from magnetar.storage.repair import repair_data_dir


def repair(
    data_dir: Annotated[Path, typer.Argument(help="The broker's data directory (the broker must be stopped)")],
    check_only: Annotated[bool, typer.Option("--check", help="Only report; change nothing")] = False,
) -> None:
    """Check a data directory, repair what can be repaired, report what was lost."""
    if not data_dir.is_dir():
        typer.echo(f"error: {data_dir} is not a directory", err=True)
        raise typer.Exit(2)
    try:
        lock = DataDirLock.acquire(data_dir, create=False)
    except DataDirLockedError as exc:
        typer.echo(f"error: {exc}; stop the broker first", err=True)
        raise typer.Exit(2) from None
    with lock:
        try:
            check_format(data_dir)
        except DataFormatError as exc:
            typer.echo(f"error: {exc}", err=True)
            raise typer.Exit(2) from None
        report = repair_data_dir(data_dir, fix=not check_only)
    for line in report.found:
        typer.echo(f"found: {line}")
    for line in report.repaired:
        typer.echo(f"repaired: {line}")
    typer.echo(
        f"lost entries: {report.lost_entries}; damaged entries skipped when read: {report.damaged_entries}; "
        f"entry ids repeated: {report.repeated_entries}; acknowledged but missing: {report.acked_missing_entries}"
    )
    typer.echo("clean" if report.clean else ("checked, nothing changed" if check_only else "repaired what could be"))
    raise typer.Exit(0 if report.clean else 1)
