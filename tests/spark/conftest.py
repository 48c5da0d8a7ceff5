"""Fixtures of the Spark connector tests: one local SparkSession and one broker for the session.

The SparkSession (``local[2]``, 2 shuffle partitions, no UI) is started once: starting Spark
costs seconds. Every magnetar client a test opens goes through ``clients`` and is closed after
the test.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from magnetar.client import Client
from magnetar.testing import BrokerProcess

try:  # the "spark" extra (part of the "test" extra): without it, these tests are not collected
    import pyarrow  # noqa: F401
    import pyspark  # noqa: F401
except ImportError:
    collect_ignore_glob = ["test_*.py"]


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """The session's SparkSession, with the "pulsar" data source registered."""
    import magnetar.spark

    session = magnetar.spark.local_session(
        "magnetar-tests", "local[2]",
        **{"spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2", "spark.driver.memory": "1g"},
    )
    yield session
    session.stop()


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """The broker shared by the Spark tests."""
    proc = BrokerProcess(tmp_path_factory.mktemp("spark-broker") / "data", args=("--fsync", "never")).start()
    yield proc
    proc.stop()


@pytest.fixture
def clients(broker: BrokerProcess) -> Iterator[Callable[..., Client]]:
    """Make magnetar clients (of the shared broker unless told otherwise); closed after the test."""
    made: list[Client] = []

    def make(url: str | None = None) -> Client:
        c = Client(url or broker.service_url, operation_timeout_seconds=15)
        made.append(c)
        return c

    yield make
    for c in made:
        c.close()


@pytest.fixture
def topic() -> str:
    """A topic name of this test only."""
    return f"persistent://public/default/spark-{uuid.uuid4().hex[:12]}"
