"""The console's charts start with the last minutes the broker kept (not empty on every load), and
their legends stay inside their cards (MAGNETAR_SCREENSHOTS=1: docs/console/overview-charts.png and
topic-charts.png)."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pulsar

from ..admin_http import Http

NS = "public/default"

#: for every chart: whether its legend and plot lie inside the card, and how many samples it draws
INSIDE = """() => [...document.querySelectorAll("figure.chart")].map((fig) => {
  const box = fig.getBoundingClientRect();
  const parts = [...fig.querySelectorAll(".u-legend, .uplot")].map((e) => e.getBoundingClientRect());
  const inside = parts.length > 0 && parts.every((r) => r.left >= box.left - 0.5 && r.right <= box.right + 0.5);
  return [fig.dataset.chart, inside, Number(fig.dataset.samples || 0)];
})"""


def _samples(rest: Http, path: str) -> int:
    return len(rest.get(path).json()["t"])


def _drawn(page: Any, chart: str) -> None:
    """Until the chart draws more than one sample: the seeded history and the page's first sample
    (without the history it would draw one, and a second only after the 2-3 s poll)."""
    page.wait_for_function(
        "name => Number(document.querySelector(`figure.chart[data-chart='${name}']`)?.dataset.samples || 0) > 1", arg=chart
    )


def test_charts_are_drawn_from_the_brokers_history(
    page: Any, rest: Http, pulsar_client: pulsar.Client, unique: str, screenshot: Callable[[Any, str], None]
) -> None:
    topic = f"charts-{unique}"
    producer = pulsar_client.create_producer(f"persistent://{NS}/{topic}", batching_enabled=False)
    pulsar_client.subscribe(f"persistent://{NS}/{topic}", "s")
    history = f"/magnetar/v1/history/persistent/{NS}/{topic}"
    _samples(rest, history)  # a page asks about the topic: the broker keeps its series from now on
    deadline = time.monotonic() + 30
    while (_samples(rest, history) < 3 or _samples(rest, "/magnetar/v1/history") < 3) and time.monotonic() < deadline:
        for i in range(20):  # traffic, so the rates are not flat zero
            producer.send(f"m{i}".encode())
        time.sleep(0.5)
    kept, kept_topic = _samples(rest, "/magnetar/v1/history"), _samples(rest, history)
    assert kept >= 3 and kept_topic >= 3

    page.goto(page.base + "/console")  # a fresh load
    _drawn(page, "Messages per second")
    charts = page.evaluate(INSIDE)
    assert [c[0] for c in charts] == ["Messages per second", "Throughput", "Fsync round latency", "Connections"]
    assert all(inside and samples >= kept for _, inside, samples in charts), charts
    screenshot(page, "overview-charts")

    page.goto(page.base + f"/console/topics/persistent/{NS}/{topic}")
    _drawn(page, "Backlog")
    charts = page.evaluate(INSIDE)
    assert [c[0] for c in charts] == ["Messages per second", "Backlog"]
    assert all(inside and samples >= kept_topic for _, inside, samples in charts), charts
    screenshot(page, "topic-charts")
    producer.close()
