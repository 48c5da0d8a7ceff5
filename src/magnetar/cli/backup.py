"""``magnetar backup DATA_DIR DEST``: a consistent copy of a data directory, while its broker runs.

The metadata (topics, cursors, schemas, policies) is copied as of one instant and the ledgers up to
at least that instant (see :mod:`magnetar.storage.backup`); restoring is starting a broker on DEST
(``magnetar standalone --data-dir DEST``). Exit status: 0 when the copy is made and consistent, 1
when it was made but something is worth a look (printed), 2 when it could not be made.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from magnetar.storage.backup import BackupError, backup_data_dir
from magnetar.storage.data_format import DataFormatError
from magnetar.storage.dir_lock import DataDirLockedError


def backup(
    data_dir: Annotated[Path, typer.Argument(help="The broker's data directory (the broker may be running)")],
    dest: Annotated[Path, typer.Argument(help="Where the copy goes: a new or empty directory")],
) -> None:
    """Copy a data directory consistently, even while its broker runs; restore by starting a broker on the copy."""
    try:
        report = backup_data_dir(data_dir, dest)
    except (BackupError, DataFormatError, DataDirLockedError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    for note in report.notes:
        typer.echo(f"note: {note}")
    typer.echo(
        f"backed up {report.topics} topics: {report.ledgers} ledgers, {report.entries} entries, "
        f"{report.bytes} bytes into {dest}"
    )
    raise typer.Exit(1 if report.notes else 0)
