"""The format version of a data directory: ``DATA_DIR/FORMAT``, one line ``magnetar-data N``.

Written when a broker first opens a directory, checked every time one does (under the directory's
lock). A directory without the file was written before the version existed (format 1, the current
one): it opens and is stamped. A directory whose version is newer than this magnetar knows is
refused, before anything in it is read or written: an older broker would misread what a newer one
wrote. A future change of the on-disk layout raises :data:`FORMAT_VERSION` and upgrades older
directories when it stamps them.
"""

from __future__ import annotations

import os
from pathlib import Path

from magnetar.storage.files import fsync_path

__all__ = [
    "FORMAT_FILE_NAME", "FORMAT_VERSION", "DataFormatError", "check_format", "open_format", "read_format", "stamp_format",
]

FORMAT_FILE_NAME = "FORMAT"
#: the format this magnetar writes and the newest it reads
FORMAT_VERSION = 1
_MAGIC = "magnetar-data"


class DataFormatError(Exception):
    """A data directory this magnetar cannot open: newer than it, or its FORMAT file unreadable."""


def read_format(data_dir: Path) -> int | None:
    """The directory's format version, None when it has no FORMAT file (written before versions)."""
    path = Path(data_dir) / FORMAT_FILE_NAME
    try:
        text = path.read_text(encoding="ascii", errors="replace")
    except FileNotFoundError:
        return None
    magic, _, version = text.strip().partition(" ")
    if magic != _MAGIC or not version.isdigit():
        raise DataFormatError(f"{path} is not a magnetar format file (it holds {text.strip()[:40]!r})")
    return int(version)


def check_format(data_dir: Path) -> int | None:
    """The directory's format version (None: unversioned, as format 1); raises DataFormatError when
    it is newer than this magnetar reads."""
    version = read_format(data_dir)
    if version is not None and version > FORMAT_VERSION:
        raise DataFormatError(
            f"data directory {data_dir} has format version {version}, newer than this magnetar reads "
            f"(up to {FORMAT_VERSION}): use a newer magnetar"
        )
    return version


def stamp_format(data_dir: Path) -> None:
    """Write this magnetar's format version into the directory (atomically, durably)."""
    data_dir = Path(data_dir)
    temporary = data_dir / f"{FORMAT_FILE_NAME}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        os.write(fd, f"{_MAGIC} {FORMAT_VERSION}\n".encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, data_dir / FORMAT_FILE_NAME)
    fsync_path(data_dir)


def open_format(data_dir: Path) -> None:
    """Check the (locked) directory's format and stamp it when it has none or an older one."""
    if check_format(data_dir) != FORMAT_VERSION:
        stamp_format(data_dir)
