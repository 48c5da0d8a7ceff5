"""`magnetar perf produce | consume | end-to-end` against a broker process, through the console entry point."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable

from magnetar.testing import BrokerProcess

LATENCY_FIELDS = {"count", "mean", "p50", "p95", "p99", "p99_9", "p99_99", "max"}
RATE_FIELDS = {"messages", "bytes", "msg_per_s", "mb_per_s"}


def magnetar(*args: str, timeout: float = 90) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "magnetar.cli.main", *args], capture_output=True, text=True, timeout=timeout
    )


def topic_name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def test_produce_at_a_fixed_rate_keeps_the_rate_and_reports_json(broker: BrokerProcess) -> None:
    out = magnetar("perf", "produce", topic_name("rate"), "-r", "2000", "-t", "3", "-s", "100", "--json",
                   "-u", broker.service_url)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["command"] == "produce" and doc["target_rate"] == 2000
    assert doc["settings"]["rate"] == 2000 and doc["settings"]["time_s"] == 3 and doc["settings"]["payload_sizes"] == [100]
    assert doc["sent"]["messages"] == doc["produced"]["messages"] == 6000
    assert doc["produced"]["bytes"] == 600_000
    assert doc["errors"] == 0 and doc["pending"] == 0
    assert abs(doc["sent"]["msg_per_s"] - 2000) <= 100, doc["sent"]
    assert set(doc["latency_ms"]) == {"publish"} and set(doc["latency_ms"]["publish"]) == LATENCY_FIELDS
    assert doc["latency_ms"]["publish"]["count"] == 6000
    assert 2 <= len(doc["intervals"]) <= 4
    for interval in doc["intervals"]:
        assert set(interval) == {"elapsed_s", "produced", "pending", "errors", "latency_ms"}
        assert set(interval["produced"]) == RATE_FIELDS
    progress = [line for line in out.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == len(doc["intervals"]) and "publish ms p50" in progress[0]


def test_produce_then_consume_the_backlog_report_rates(broker: BrokerProcess) -> None:
    topic = topic_name("perf")
    out = magnetar("perf", "produce", topic, "-r", "0", "-m", "20000", "-s", "50", "-u", broker.service_url)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("magnetar perf produce:")
    rows = {line.split()[0]: line.split() for line in out.stdout.splitlines()[1:]}
    assert rows["produced"][:3] == ["produced", "20,000", "msg"]
    assert rows["pending"] == ["pending", "0", "errors", "0"]
    out = magnetar("perf", "consume", topic, "-sp", "Earliest", "-m", "20000", "--json", "-u", broker.service_url)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["consumed"]["messages"] == 20000 and doc["consumed"]["bytes"] == 20000 * 50
    assert doc["settings"]["subscriptions"] == ["sub"] and doc["settings"]["subscription_position"] == "Earliest"
    assert doc["latency_ms"]["end_to_end"]["count"] == 20000


def test_produce_at_full_speed_times_every_acknowledged_message_once(broker: BrokerProcess) -> None:
    # 1,000 B payloads: 131 to a 128 KiB batch, so the groups of a chunk straddle batches
    out = magnetar("perf", "produce", topic_name("full"), "-r", "0", "-m", "30001", "-s", "1000", "-n", "2",
                   "-bm", "1000", "-b", "10", "--json", "-u", broker.service_url)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["sent"]["messages"] == doc["produced"]["messages"] == 30001
    assert doc["produced"]["bytes"] == 30001 * 1000 and doc["errors"] == 0 and doc["pending"] == 0
    assert doc["latency_ms"]["publish"]["count"] == 30001
    assert sum(interval["latency_ms"]["publish"]["count"] for interval in doc["intervals"]) <= 30001
    assert 0 < doc["latency_ms"]["publish"]["p50"] <= doc["latency_ms"]["publish"]["max"]


def test_end_to_end_receives_every_message_and_times_it(broker: BrokerProcess) -> None:
    out = magnetar("perf", "end-to-end", topic_name("e2e"), "-r", "1000", "-m", "2000", "-s", "64",
                   "-n", "2", "--consumers", "2", "-st", "Shared", "--json", "-u", broker.service_url)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["command"] == "end-to-end"
    assert doc["sent"]["messages"] == doc["produced"]["messages"] == doc["consumed"]["messages"] == 2000
    assert doc["lost"] == 0 and doc["errors"] == 0 and doc["unexpected"] == 0
    assert doc["latency_ms"]["publish"]["count"] == doc["latency_ms"]["end_to_end"]["count"] == 2000
    assert doc["latency_ms"]["end_to_end"]["p50"] >= doc["latency_ms"]["publish"]["p50"] * 0.5
    assert doc["settings"]["consumers"]["subscription_type"] == "Shared"
    assert abs(doc["sent"]["msg_per_s"] - 1000) <= 50


def test_end_to_end_over_a_partitioned_topic(broker: BrokerProcess, admin: Callable) -> None:
    topic = f"persistent://public/default/{topic_name('parts')}"
    assert admin("topics", "create-partitioned-topic", topic, "-p", "3").exit_code == 0
    out = magnetar("perf", "end-to-end", topic, "-r", "0", "-m", "3000", "-s", "10", "--json", "-u", broker.service_url)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["consumed"]["messages"] == 3000 and doc["lost"] == 0


def test_ctrl_c_stops_the_run_and_still_prints_the_summary(broker: BrokerProcess) -> None:
    proc = subprocess.Popen(
        [sys.executable, "-m", "magnetar.cli.main", "perf", "produce", topic_name("int"), "-r", "500",
         "-u", broker.service_url], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    deadline = time.monotonic() + 30
    assert proc.stdout is not None
    first = proc.stdout.readline()  # the first progress line: the run is under way
    assert first.startswith("[") and time.monotonic() < deadline
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 0, stderr
    assert "magnetar perf produce:" in stdout and "errors 0" in stdout


def test_bad_options_print_one_error_line(broker: BrokerProcess) -> None:
    for args, message in [
        (("produce", "t", "-z", "gzip"), "--compression: unknown value 'gzip'"),
        (("consume", "t", "-st", "bogus"), "--subscription-type: unknown value 'bogus'"),
        (("produce", "a", "b", "--num-topics", "3"), "needs one topic name"),
        (("end-to-end", "t", "-r", "-5"), "--rate must not be negative"),
    ]:
        out = magnetar("perf", *args, "-u", broker.service_url)
        assert out.returncode == 1
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:") and message in lines[0], out.stderr
