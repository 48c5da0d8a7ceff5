"""An end-to-end data pipeline: orders into magnetar, Spark Structured Streaming out.

1. ``produce``: generates a realistic stream of orders (a fixed seed: the same data every time)
   and publishes them with magnetar's client to ``persistent://public/pipeline/orders`` (2
   partitions): JSON schema, the product category as the key, the order time as event time,
   slightly out of order as real sources are.
2. ``run``: the streaming job. It reads the topic with the "pulsar" data source (typed columns
   from the topic's schema), keeps valid orders, windows them by event time (1 minute windows,
   2 minute watermark), aggregates per category (orders, revenue, largest order) and writes each
   closed window once to a result topic (``order-stats``, effectively once: the namespace has
   deduplication on) and to Parquet files. It runs with Trigger.AvailableNow: it processes
   what is there and stops; run it again and it goes on from its checkpoints.
3. ``check``: recomputes the expected aggregates from the generated data in plain Python and
   compares them with the result topic and with the Parquet files: every window exactly once.

``demo`` does it all and restarts the job in the middle: half the orders, the job, the other
half, the job again from its checkpoint, the check.

usage: python examples/pipeline/pipeline.py demo [--events N] [--service-url URL] [--admin-url URL] [--work-dir DIR]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
import urllib.error
import urllib.request
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any

NAMESPACE = "public/pipeline"
ORDERS = f"persistent://{NAMESPACE}/orders"
STATS = f"persistent://{NAMESPACE}/order-stats"
CATEGORIES = ["books", "games", "garden", "grocery", "health", "music", "sports", "toys"]
#: event time of the first order (a fixed instant, so that windows are the same every run)
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
WINDOW = "1 minute"
WATERMARK = "2 minutes"
#: the heartbeat sent last moves event time past the last window so that it closes
HEARTBEAT = "__heartbeat__"


@dataclass
class Order:
    order_id: str
    customer: str
    category: str
    quantity: int
    unit_price: float
    status: str


def generate(events: int, seed: int = 7) -> list[tuple[int, Order]]:
    """(event time ms, order) pairs: ~2 orders a second, up to 20 s out of order, a few cancelled."""
    rng = random.Random(seed)
    weights = [rng.uniform(0.5, 2.0) for _ in CATEGORIES]
    out = []
    t = START_MS
    for i in range(events):
        t += int(rng.expovariate(1 / 500))  # mean 500 ms between orders
        event_time = t - rng.randint(0, 20_000)
        category = rng.choices(CATEGORIES, weights)[0]
        order = Order(
            order_id=f"o-{i:07d}",
            customer=f"c-{rng.randint(1, 5000):05d}",
            category=category,
            quantity=rng.randint(1, 5),
            unit_price=round(rng.uniform(2, 120), 2),
            status="cancelled" if rng.random() < 0.05 else "paid",
        )
        out.append((event_time, order))
    return out


def expected(orders: list[tuple[int, Order]]) -> dict[tuple[int, str], dict[str, Any]]:
    """{(window start ms, category): aggregates} computed without Spark."""
    agg: dict[tuple[int, str], dict[str, Any]] = defaultdict(lambda: {"orders": 0, "revenue": 0.0, "largest": 0.0})
    for event_time, o in orders:
        if o.status != "paid":
            continue
        key = (event_time - event_time % 60_000, o.category)
        a = agg[key]
        amount = o.quantity * o.unit_price
        a["orders"] += 1
        a["revenue"] += amount
        a["largest"] = max(a["largest"], amount)
    return dict(agg)


# -- set-up -------------------------------------------------------------------------------------------

def _http(admin_url: str, method: str, path: str, body: str | None = None) -> int:
    req = urllib.request.Request(
        admin_url.rstrip("/") + path, data=body.encode() if body is not None else None, method=method,
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(req) as resp:
            return resp.status
    except urllib.error.HTTPError as exc:
        if exc.code == 409:  # already there
            return exc.code
        raise


def setup(admin_url: str) -> None:
    """The namespace (deduplication on: the result topic gets each window once) and the topics."""
    _http(admin_url, "PUT", f"/admin/v2/namespaces/{NAMESPACE}", "{}")
    _http(admin_url, "POST", f"/admin/v2/namespaces/{NAMESPACE}/deduplication", "true")
    _http(admin_url, "PUT", f"/admin/v2/persistent/{NAMESPACE}/orders/partitions", "2")


def produce(service_url: str, orders: list[tuple[int, Order]], heartbeat: bool = False) -> None:
    """Publish orders (and, last, a heartbeat order that only moves event time on)."""
    from magnetar.client import Client, JsonSchema

    client = Client(service_url)
    try:
        producer = client.create_producer(ORDERS, schema=JsonSchema(Order), block_if_queue_full=True)
        errors: list[Exception] = []

        def done(error: Exception | None, _msg_id: Any) -> None:
            if error is not None:
                errors.append(error)

        for event_time, order in orders:
            producer.send_async(order, done, partition_key=order.category, event_timestamp=event_time)
        if heartbeat:
            last = max(t for t, _ in orders) if orders else START_MS
            # a paid order of nothing: it passes the status filter (Spark applies filters before
            # the watermark is taken) and is not counted (its window is left out)
            beat = Order("heartbeat", "-", HEARTBEAT, 0, 0.0, "paid")
            producer.send_async(beat, done, partition_key=HEARTBEAT, event_timestamp=last + 10 * 60_000)
        producer.flush()
        if errors:
            raise RuntimeError(f"could not publish every order: {errors[0]}")
    finally:
        client.close()


# -- the streaming job ----------------------------------------------------------------------------------

def run_job(spark: Any, service_url: str, work_dir: Path) -> dict[str, int]:
    """Process what the orders topic holds (Trigger.AvailableNow); returns rows written per sink."""
    from pyspark.sql import functions as F  # noqa: N812

    orders = (
        spark.readStream.format("pulsar")
        .option("service.url", service_url)
        .option("topic", ORDERS)
        .option("startingOffsets", "earliest")
        .load()
    )
    stats = (
        orders.withWatermark("__eventTime", WATERMARK)
        .where(F.col("status") == "paid")
        .withColumn("amount", F.col("quantity") * F.col("unit_price"))
        .groupBy(F.window("__eventTime", WINDOW), F.col("category"))
        .agg(
            F.count(F.when(F.col("category") != HEARTBEAT, 1)).alias("orders"),
            F.sum("amount").alias("revenue"),
            F.max("amount").alias("largest"),
        )
        .select(
            F.col("window.start").alias("window_start"),
            F.col("window.end").alias("window_end"),
            "category",
            "orders",
            F.round("revenue", 2).alias("revenue"),
            F.round("largest", 2).alias("largest"),
        )
        # on an aggregate, so that Spark keeps this filter after the aggregation (a filter on
        # the category would be applied first, before the watermark sees the heartbeat)
        .where(F.col("orders") > 0)
    )
    to_topic = (
        stats.withColumn("__key", F.col("category"))
        .withColumn("__eventTime", F.col("window_end"))
        .writeStream.format("pulsar")
        .option("service.url", service_url)
        .option("topic", STATS)
        .option("checkpointLocation", str(work_dir / "checkpoints" / "to-topic"))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    to_parquet = (
        stats.writeStream.format("parquet")
        .option("path", str(work_dir / "parquet"))
        .option("checkpointLocation", str(work_dir / "checkpoints" / "to-parquet"))
        .outputMode("append")
        .trigger(availableNow=True)
        .start()
    )
    counts = {}
    for name, query in (("result topic", to_topic), ("parquet", to_parquet)):
        query.awaitTermination()
        counts[f"{name} batches"] = len(query.recentProgress)
    counts["orders read"] = sum(p["numInputRows"] for p in to_topic.recentProgress)
    counts["windows to the result topic"] = sum(max(0, p["sink"].get("numOutputRows", 0)) for p in to_topic.recentProgress)
    return counts


# -- the check ------------------------------------------------------------------------------------------

def check(spark: Any, service_url: str, work_dir: Path, orders: list[tuple[int, Order]]) -> dict[str, Any]:
    """Compare both outputs with the expected aggregates; returns a report (``ok`` says it all)."""
    want = expected(orders)
    topic_rows = (
        spark.read.format("pulsar").option("service.url", service_url).option("topic", STATS).load()
        .select("window_start", "category", "orders", "revenue", "largest").collect()
    )
    parquet_dir = work_dir / "parquet"
    parquet_rows = (
        spark.read.parquet(str(parquet_dir)).select("window_start", "category", "orders", "revenue", "largest").collect()
        if parquet_dir.exists() else []
    )
    report: dict[str, Any] = {"expected windows": len(want)}
    ok = True
    for name, rows in (("result topic", topic_rows), ("parquet", parquet_rows)):
        got: dict[tuple[int, str], list[Any]] = defaultdict(list)
        for r in rows:
            got[(int(r.window_start.timestamp() * 1000), r.category)].append(r)
        duplicates = sum(len(v) - 1 for v in got.values() if len(v) > 1)
        missing = [k for k in want if k not in got]
        unexpected = [k for k in got if k not in want]
        wrong = [
            k for k, v in got.items()
            if k in want and (v[0].orders != want[k]["orders"] or abs(v[0].revenue - round(want[k]["revenue"], 2)) > 0.011
                              or abs(v[0].largest - round(want[k]["largest"], 2)) > 0.011)
        ]
        report[name] = {"rows": len(rows), "duplicates": duplicates, "missing": len(missing),
                        "unexpected": len(unexpected), "wrong": len(wrong)}
        ok = ok and not (duplicates or missing or unexpected or wrong)
    report["ok"] = ok
    return report


def _parquet_rows(spark: Any, work_dir: Path) -> int:
    path = work_dir / "parquet"
    return spark.read.parquet(str(path)).count() if path.exists() and any(path.glob("*.parquet")) else 0


# -- command line ---------------------------------------------------------------------------------------

def demo(service_url: str, admin_url: str, work_dir: Path, events: int, spark: Any = None, echo: Any = print) -> dict[str, Any]:
    """Half the orders, the job, the other half, the job again from its checkpoint, the check."""
    import magnetar.spark

    orders = generate(events)
    half = len(orders) // 2
    setup(admin_url)
    own = spark is None
    if own:
        spark = magnetar.spark.local_session("order-pipeline", "local[2]", **{"spark.sql.shuffle.partitions": "2"})
    else:
        magnetar.spark.register(spark)
    try:
        t = time.perf_counter()
        produce(service_url, orders[:half])
        echo(f"produced {half} orders to {ORDERS} ({time.perf_counter() - t:.1f} s)")
        first = run_job(spark, service_url, work_dir)
        echo(f"job run 1: {first['orders read']} orders read, {first['windows to the result topic']} closed windows"
             f" written to {STATS} and {_parquet_rows(spark, work_dir)} to {work_dir / 'parquet'}")
        produce(service_url, orders[half:], heartbeat=True)
        echo(f"produced {len(orders) - half} more orders and a heartbeat")
        second = run_job(spark, service_url, work_dir)
        echo(f"job run 2 (restarted from its checkpoints): {second['orders read']} orders read,"
             f" {second['windows to the result topic']} more windows written; parquet now holds"
             f" {_parquet_rows(spark, work_dir)} rows")
        report = check(spark, service_url, work_dir, orders)
        for name in ("result topic", "parquet"):
            r = report[name]
            echo(f"check {name}: {r['rows']} rows for {report['expected windows']} expected (window, category) pairs;"
                 f" {r['duplicates']} duplicated, {r['missing']} missing, {r['wrong']} wrong")
        echo("OK: every window exactly once in both outputs" if report["ok"] else "FAILED")
        report["runs"] = [first, second]
        return report
    finally:
        if own:
            spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=["demo", "produce", "run", "check"])
    parser.add_argument("--events", type=int, default=20_000, help="orders generated (default 20000)")
    parser.add_argument("--service-url", default="pulsar://localhost:6650")
    parser.add_argument("--admin-url", default="http://localhost:8080")
    parser.add_argument("--work-dir", type=Path, default=Path("pipeline-work"), help="checkpoints and Parquet output")
    args = parser.parse_args()
    if args.command == "demo":
        report = demo(args.service_url, args.admin_url, args.work_dir, args.events)
        sys.exit(0 if report["ok"] else 1)
    import magnetar.spark

    if args.command == "produce":
        setup(args.admin_url)
        produce(args.service_url, generate(args.events), heartbeat=True)
        print(f"produced {args.events} orders and a heartbeat to {ORDERS}")
        return
    spark = magnetar.spark.local_session("order-pipeline", "local[2]", **{"spark.sql.shuffle.partitions": "2"})
    try:
        if args.command == "run":
            print(json.dumps(run_job(spark, args.service_url, args.work_dir)))
        else:
            report = check(spark, args.service_url, args.work_dir, generate(args.events))
            print(json.dumps(report, indent=2))
            sys.exit(0 if report["ok"] else 1)
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
