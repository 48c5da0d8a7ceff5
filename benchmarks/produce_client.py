"""One producer run with the official client: send N messages with batching, print msg/s as JSON."""

from __future__ import annotations

import argparse
import json
import threading
import time

import pulsar


def main() -> None:
    """Command line: produce_client.py URL TOPIC N SIZE."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("url")
    parser.add_argument("topic")
    parser.add_argument("count", type=int)
    parser.add_argument("size", type=int)
    args = parser.parse_args()
    client = pulsar.Client(args.url, operation_timeout_seconds=30, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    producer = client.create_producer(
        args.topic,
        batching_enabled=True,
        batching_max_messages=1000,
        batching_max_publish_delay_ms=1,
        max_pending_messages=10000,
        block_if_queue_full=True,
    )
    payload = b"x" * args.size
    done = threading.Event()
    failures = []
    acked = [0]

    def callback(res, _msg_id) -> None:  # noqa: ANN001
        if res != pulsar.Result.Ok:
            failures.append(res)
        acked[0] += 1
        if acked[0] == args.count:
            done.set()

    start = time.perf_counter()
    for _ in range(args.count):
        producer.send_async(payload, callback)
    producer.flush()
    done.wait(120)
    elapsed = time.perf_counter() - start
    client.close()
    print(json.dumps({"count": args.count, "acked": acked[0], "failures": len(failures), "seconds": elapsed,
                      "msg_per_s": args.count / elapsed}))


if __name__ == "__main__":
    main()
