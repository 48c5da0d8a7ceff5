"""One-at-a-time durable sends against the machine's fsync rate, side by side.

Each round runs, one after the other on the same disk (the brokers' data directories):

- the baseline: a tiny loop appending 100 bytes to a file and calling fdatasync, for T seconds;
- magnetar (fsync always): one producer sending 100-byte messages one at a time, each send
  waiting for its receipt (which magnetar only sends after the fsync covering the message), for
  T seconds, with magnetar.client's sync face, with its asyncio API (``await producer.send``: no
  hop between an application thread and the client's loop thread), and with the official
  pulsar-client (batching off).

With ``--baseline-src DIR`` a second broker runs from that tree (the committed one, say) next to the
broker of this tree, and every sender runs against both in each round, alternating which goes
first. The senders run from ``--client-src`` (default: this tree) against both, so only the
brokers differ. With ``--baseline-client-src DIR`` instead, one broker (this tree's) serves every
sender run twice per round, from that tree ("before") and from ``--client-src`` ("after"),
alternating which goes first, so only the clients differ (the official client's two runs, with the
same code, show the noise). ``--fsync never`` measures what a send costs without the disk.

``--floor`` says what ratio is reachable at all: one broker of this tree with fsync never and one
with fsync always serve every sender in each round. A one-at-a-time send cannot take less than the
fsync plus the round trip without the disk, so per round the ceiling is
never_rate / (fsync_rate + never_rate) (``ceiling_per_round``), next to the measured ratio of the
fsync-always broker.

The ratio send rate / fsync rate (goal >= 0.8) is taken per round and its median reported, so
the disk's mood, which changes from second to second on a shared machine, affects both sides of
one ratio alike. The CPU seconds of each broker process over the run, and the sender process's
own CPU per send (its timed loop only), are reported too. Written to
benchmarks/results/durable_sends.json (``--label``: added as a labelled block, keeping the rest).

usage: python benchmarks/durable_sends.py [--seconds T] [--rounds R] [--baseline-src DIR | --baseline-client-src DIR
       | --floor] [--fsync always|never] [--label L]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from magnetar.testing import BrokerProcess

HERE = Path(__file__).resolve().parent


def fsync_loop(directory: Path, seconds: float) -> float:
    """Appends of 100 bytes, each followed by fdatasync, for ``seconds``: returns fsyncs per second."""
    path = directory / f"fsync-baseline-{time.time_ns()}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    try:
        count = 0
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            os.write(fd, b"x" * 100)
            os.fdatasync(fd)
            count += 1
        return count / (time.perf_counter() - start)
    finally:
        os.close(fd)
        path.unlink()


def send_magnetar(url: str, topic: str, seconds: float) -> dict:
    """One-at-a-time sends with magnetar.client (sync facade, batching off)."""
    from magnetar.client import Client

    client = Client(url, operation_timeout_seconds=30)
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"w" * 100)  # warm-up: topic loaded, connection ready
    count = 0
    cpu = time.process_time()
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        producer.send(b"x" * 100)
        count += 1
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    client.close()
    return {"sent": count, "seconds": elapsed, "cpu": cpu}


def send_magnetar_asyncio(url: str, topic: str, seconds: float) -> dict:
    """One-at-a-time sends with magnetar.client's asyncio API (``await producer.send``, batching off)."""
    import asyncio

    from magnetar.client.core.client import AsyncClient

    async def run() -> dict:
        client = AsyncClient(url, operation_timeout_seconds=30)
        producer = await client.create_producer(topic, batching_enabled=False)
        await producer.send(b"w" * 100)
        count = 0
        cpu = time.process_time()
        start = time.perf_counter()
        while time.perf_counter() - start < seconds:
            await producer.send(b"x" * 100)
            count += 1
        elapsed = time.perf_counter() - start
        cpu = time.process_time() - cpu
        await client.close()
        return {"sent": count, "seconds": elapsed, "cpu": cpu}

    try:
        import uvloop

        return uvloop.run(run())
    except ImportError:  # pragma: no cover - uvloop is absent on some platforms
        return asyncio.run(run())


def send_official(url: str, topic: str, seconds: float) -> dict:
    """One-at-a-time sends with the official pulsar-client (batching off)."""
    import pulsar

    client = pulsar.Client(url, operation_timeout_seconds=30, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(topic, batching_enabled=False)
    producer.send(b"w" * 100)
    count = 0
    cpu = time.process_time()
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        producer.send(b"x" * 100)
        count += 1
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu
    client.close()
    return {"sent": count, "seconds": elapsed, "cpu": cpu}


WORKERS = {"magnetar": send_magnetar, "magnetar-asyncio": send_magnetar_asyncio, "official": send_official}


def run_worker(kind: str, url: str, topic: str, seconds: float, client_src: Path) -> dict:
    """One sender in its own process (magnetar from ``client_src``); its report, with its CPU seconds."""
    env = {**os.environ, "PYTHONPATH": str(client_src)}
    out = subprocess.run(
        [sys.executable, __file__, "--worker", kind, url, topic, str(seconds)],
        capture_output=True, text=True, timeout=300, env=env,
    )
    if out.returncode != 0:
        raise RuntimeError(f"{kind} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def broker_cpu_seconds(broker: BrokerProcess) -> float:
    """User + system CPU seconds the broker process used so far (Linux /proc)."""
    assert broker.proc is not None
    fields = Path(f"/proc/{broker.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def parse_args() -> argparse.Namespace:
    """The command line."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--baseline-src", type=Path, help="also run a broker from this tree (e.g. HEAD's src)")
    parser.add_argument("--client-src", type=Path, default=HERE.parent / "src", help="the magnetar.client senders use")
    parser.add_argument("--baseline-client-src", type=Path,
                        help="also run every sender from this tree (e.g. HEAD's src), against one broker of this tree")
    parser.add_argument("--senders", default=",".join(WORKERS), help="comma-separated: " + ", ".join(WORKERS))
    parser.add_argument("--fsync", default="always", choices=("always", "never"))
    parser.add_argument("--floor", action="store_true",
                        help="a broker with fsync never next to one with fsync always: the reachable ratio")
    parser.add_argument("--label", help="write the results as this labelled block of the results file")
    parser.add_argument("--out", default=str(HERE / "results" / "durable_sends.json"))
    parser.add_argument("--worker", nargs=4, metavar=("KIND", "URL", "TOPIC", "SECONDS"))
    return parser.parse_args()


def plan(args: argparse.Namespace) -> tuple[dict[str, Path], dict[str, Path]]:
    """The brokers to start (name -> src) and the client trees to send from (name -> src)."""
    if sum(x is not None and x is not False for x in (args.baseline_src, args.baseline_client_src, args.floor)) > 1:
        raise SystemExit("--baseline-src, --baseline-client-src and --floor compare different things: give one")
    if args.floor:
        return {"never": HERE.parent / "src", "always": HERE.parent / "src"}, {"": args.client_src}
    if args.baseline_src is not None:
        return {"before": args.baseline_src, "after": HERE.parent / "src"}, {"": args.client_src}
    if args.baseline_client_src is not None:
        return {"broker": HERE.parent / "src"}, {"before": args.baseline_client_src, "after": args.client_src}
    return {"broker": HERE.parent / "src"}, {"": args.client_src}


def measure(args: argparse.Namespace, data: Path) -> dict:
    """Run the rounds; per-second rates, per-round ratios, broker CPU and sender CPU."""
    trees, clients = plan(args)
    senders = args.senders.split(",")
    brokers = {
        name: BrokerProcess(data / name, args=("--fsync", name if args.floor else args.fsync, "--log-level", "WARNING"),
                            env={"PYTHONPATH": str(src)})
        for name, src in trees.items()
    }
    # (label, broker name, client src) per sender; one side of the comparison varies
    if len(brokers) > 1:
        sides = [(name, name, args.client_src) for name in brokers]
    else:
        sides = [(name or "broker", next(iter(brokers)), src) for name, src in clients.items()]
    rates: dict[str, list[float]] = {}
    ratios: dict[str, list[float]] = {}
    cpu: dict[str, float] = dict.fromkeys(brokers, 0.0)
    sent: dict[str, int] = dict.fromkeys(brokers, 0)
    client_cpu: dict[str, list[float]] = {}
    #: the fsync rate measured just before each run, by run
    disks: dict[str, list[float]] = {}
    try:
        for broker in brokers.values():
            broker.start()
        for r in range(args.rounds):
            order = sides if r % 2 == 0 else list(reversed(sides))
            for kind in senders:
                for label, name, client_src in order:
                    broker = brokers[name]
                    disk = fsync_loop(data, args.seconds)
                    rates.setdefault("fsync", []).append(disk)
                    disks.setdefault(f"{label}/{kind}", []).append(disk)
                    cpu0 = broker_cpu_seconds(broker)
                    report = run_worker(kind, broker.service_url, f"durable-{kind}-{label}-{r}", args.seconds, client_src)
                    cpu[name] += broker_cpu_seconds(broker) - cpu0
                    sent[name] += report["sent"]
                    rate = report["sent"] / report["seconds"]
                    rates.setdefault(f"{label}/{kind}", []).append(rate)
                    ratios.setdefault(f"{label}/{kind}", []).append(rate / disk)
                    client_cpu.setdefault(f"{label}/{kind}", []).append(1e6 * report["cpu"] / max(report["sent"], 1))
            print(f"round {r}: " + ", ".join(f"{k} {v[-1]:,.0f}/s" for k, v in rates.items()), flush=True)
    finally:
        for broker in brokers.values():
            broker.stop()
    out = summarize(rates, ratios, cpu, sent, client_cpu, senders, [label for label, _, _ in sides])
    if args.floor:
        out["ceiling_per_round"] = {
            kind: [round(never / (disk + never), 3)
                   for never, disk in zip(rates[f"never/{kind}"], disks[f"always/{kind}"], strict=True)]
            for kind in senders
        }
        out["ceiling_median"] = {kind: round(statistics.median(v), 3) for kind, v in out["ceiling_per_round"].items()}
    return out


def summarize(
    rates: dict[str, list[float]], ratios: dict[str, list[float]], cpu: dict[str, float], sent: dict[str, int],
    client_cpu: dict[str, list[float]], senders: list[str], sides: list[str],
) -> dict:
    """Medians and ratios of what :func:`measure` collected."""
    medians = {k: statistics.median(v) for k, v in rates.items()}
    out = {
        "per_second": {k: [round(x) for x in v] for k, v in rates.items()},
        "ratio_per_round": {k: [round(x, 3) for x in v] for k, v in ratios.items()},
        "ratio_median": {k: round(statistics.median(v), 3) for k, v in ratios.items()},
        "broker_cpu_us_per_send": {k: round(1e6 * cpu[k] / max(sent[k], 1), 1) for k in cpu},
        "sender_cpu_us_per_send_median": {k: round(statistics.median(v), 1) for k, v in client_cpu.items()},
    }
    if "before" in sides:
        out["after_vs_before_median_rate"] = {
            kind: round(medians[f"after/{kind}"] / medians[f"before/{kind}"], 3) for kind in senders
        }
        out["after_vs_before_per_round_rate"] = {
            kind: [round(a / b, 3) for a, b in zip(rates[f"after/{kind}"], rates[f"before/{kind}"], strict=True)]
            for kind in senders
        }
    return out


def main() -> None:
    """Run the benchmark and write benchmarks/results/durable_sends.json."""
    args = parse_args()
    if args.worker:
        kind, url, topic, seconds = args.worker
        print(json.dumps(WORKERS[kind](url, topic, float(seconds))))
        return
    tmp = tempfile.TemporaryDirectory(dir=os.environ.get("BENCH_DIR"))
    try:
        results = measure(args, Path(tmp.name))
    finally:
        tmp.cleanup()
    report = {
        "benchmark": "one-at-a-time durable sends (100 B, each waits for its receipt) vs an fdatasync loop on the same disk",
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, Python {platform.python_version()}",
        "broker": f"magnetar standalone, fsync {args.fsync} (with always: a receipt only after the fsync covering the entry)",
        "seconds_per_run": args.seconds,
        "rounds": args.rounds,
        "alternated": "each run is preceded by its own fsync loop; brokers (or client trees) alternate which goes first per round",
        "trees": {"baseline": str(args.baseline_src), "baseline_client": str(args.baseline_client_src),
                  "client": str(args.client_src)},
        **results,
        "goal": "ratio >= 0.8",
    }
    out = Path(args.out)
    out.parent.mkdir(exist_ok=True)
    if args.label:
        existing = json.loads(out.read_text()) if out.exists() else {}
        existing[args.label] = report
        report_text = json.dumps(existing, indent=2)
    else:
        report_text = json.dumps(report, indent=2)
    out.write_text(report_text + "\n")
    print(json.dumps({k: results[k] for k in results if k != "per_second"}, indent=2))


if __name__ == "__main__":
    main()
