"""Fixtures of the topic tests: a persistent topic on a temporary directory (see topic_harness.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.broker.topics.topic_harness import TopicHarness


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[TopicHarness]:
    h = TopicHarness(tmp_path)
    yield h
    h.topic.close()
