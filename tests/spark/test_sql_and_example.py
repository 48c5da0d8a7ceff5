"""``magnetar sql`` over topics, and the example pipeline run end to end on a small data set."""

from __future__ import annotations

import importlib.util
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from magnetar.cli.main import app
from magnetar.cli.sql import rewrite
from magnetar.client import Client
from magnetar.testing import BrokerProcess

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "pipeline" / "pipeline.py"


def test_rewrite_names_each_topic_once() -> None:
    query, views = rewrite("SELECT * FROM pulsar.`a` JOIN pulsar.`persistent://t/n/b` ON 1=1 UNION SELECT * FROM PULSAR.`a`")
    assert views == {"__pulsar_topic_0": "a", "__pulsar_topic_1": "persistent://t/n/b"}
    assert query == "SELECT * FROM __pulsar_topic_0 JOIN __pulsar_topic_1 ON 1=1 UNION SELECT * FROM __pulsar_topic_0"


def test_sql_command_over_a_topic(spark: Any, broker: BrokerProcess, clients: Callable[..., Client], topic: str) -> None:
    producer = clients().create_producer(topic)
    for i in range(30):
        producer.send_async(f"event-{i}".encode(), None, partition_key=f"user-{i % 3}")
    producer.flush()
    producer.close()
    runner = CliRunner()
    query = f"SELECT __key AS user, count(*) AS events FROM pulsar.`{topic}` GROUP BY __key ORDER BY user"
    result = runner.invoke(app, ["sql", query, "--service-url", broker.service_url])
    assert result.exit_code == 0, result.output
    assert "user-0" in result.output and "user-2" in result.output and "3 rows" in result.output
    result = runner.invoke(app, ["sql", query, "--service-url", broker.service_url, "--json"])
    assert result.exit_code == 0, result.output
    assert [json.loads(line) for line in result.output.splitlines()] == [
        {"user": "user-0", "events": 10}, {"user": "user-1", "events": 10}, {"user": "user-2", "events": 10},
    ]
    short = topic.rsplit("/", 1)[1]
    result = runner.invoke(app, ["sql", f"SELECT cast(value AS string) AS v FROM pulsar.`{short}` ORDER BY v LIMIT 2",
                                 "-u", broker.service_url, "-o", "startingOffsets=earliest"])
    assert result.exit_code == 0 and "event-0" in result.output and "event-1" in result.output, result.output
    bad = runner.invoke(app, ["sql", f"SELECT * FROM pulsar.`{topic}`", "-u", broker.service_url, "-o", "nosuch=1"])
    assert bad.exit_code == 1 and "unknown option 'nosuch'" in bad.output


def test_example_pipeline(spark: Any, broker: BrokerProcess, tmp_path: Path) -> None:
    spec = importlib.util.spec_from_file_location("example_pipeline", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["example_pipeline"] = module
    spec.loader.exec_module(module)
    lines: list[str] = []
    report = module.demo(broker.service_url, broker.http_url, tmp_path / "work", 1200, spark=spark, echo=lines.append)
    assert report["ok"], (report, lines)
    first, second = report["runs"]
    # the job was stopped in the middle and restarted from its checkpoints
    assert first["orders read"] == 600 and second["orders read"] == 601
    assert first["windows to the result topic"] > 0 and second["windows to the result topic"] > 0
    assert report["result topic"]["rows"] == report["parquet"]["rows"] == report["expected windows"]
    assert lines[-1] == "OK: every window exactly once in both outputs"
