"""One measurement in its own interpreter: ``python -m benchmarks.suite.worker DRIVER SCENARIO JSON``
prints the driver's result as one JSON document (so no two clients ever share a process)."""

from __future__ import annotations

import asyncio
import importlib
import json
import sys
from typing import Any

from benchmarks.suite.drivers.common import Params, run_async

#: driver name -> module of benchmarks.suite.drivers
DRIVERS = {
    "official": "pulsar_official",
    "magnetar-client": "magnetar_perf",
    "redis": "redis_streams",
    "nats": "nats_jetstream",
    "rabbitmq": "rabbit_stream",
}


def measure(driver: str, scenario: str, params: dict[str, Any]) -> dict[str, Any]:
    """Run one scenario of one driver."""
    module = importlib.import_module(f"benchmarks.suite.drivers.{DRIVERS[driver]}")
    function = getattr(module, scenario)
    if asyncio.iscoroutinefunction(function):
        return run_async(function(Params.of(params)))
    return function(Params.of(params))


def main(argv: list[str]) -> int:
    """Parse the arguments, measure, print the JSON."""
    driver, scenario, params = argv
    print(json.dumps(measure(driver, scenario, json.loads(params))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
