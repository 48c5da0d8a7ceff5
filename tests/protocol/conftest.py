"""Shared fixtures of the protocol tests."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

_DATA = Path(__file__).parent / "data"


def load_official_capture() -> dict[str, Any]:
    """Bytes the official client (pulsar-client 3.13.0, C++ 4.2.0) sent to a stub broker.

    ``entries``: one SEND entry per codec, single and batched, with the payloads the client was
    given; ``producer_connection_stream``: everything that client wrote on its connection.
    """
    with open(_DATA / "official_client_entries.json", encoding="utf-8") as f:
        return json.load(f)


@pytest.fixture(scope="session")
def official_capture() -> dict[str, Any]:
    """The official client's captured bytes (see :func:`load_official_capture`)."""
    return load_official_capture()
