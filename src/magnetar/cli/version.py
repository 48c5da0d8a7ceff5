"""``magnetar version`` and ``magnetar --version``: the installed magnetar's version."""

from __future__ import annotations

from magnetar import __version__


def version_text() -> str:
    """``magnetar 0.1.0``: what both spellings print."""
    return f"magnetar {__version__}"


def version() -> None:
    """Print magnetar's version."""
    print(version_text())
