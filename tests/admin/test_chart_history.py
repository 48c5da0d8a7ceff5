"""The console charts' history kept by the broker (magnetar.admin.chart_history): bounded rings of
the broker's totals and of the topics pages asked about, and the routes serving them."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from magnetar.admin import chart_history
from magnetar.admin.chart_history import ChartHistory

from .admin_http import Http


class _Sub:
    def __init__(self, backlog: int) -> None:
        self._backlog = backlog

    def backlog(self) -> int:
        return self._backlog


def _topic(name: str, rate_in: float, rate_out: float, backlog: int) -> SimpleNamespace:
    numbers = {"msgRateIn": rate_in, "msgRateOut": rate_out, "msgThroughputIn": rate_in * 100, "msgThroughputOut": rate_out * 100}
    return SimpleNamespace(name=name, numbers=numbers, subscriptions={"s": _Sub(backlog)})


def _history(topics: list[SimpleNamespace], samples: int = 4) -> tuple[ChartHistory, SimpleNamespace]:
    service = SimpleNamespace(
        topics={t.name: t for t in topics}, connections={1: None, 2: None},
        committer=SimpleNamespace(rounds=0, sync_seconds_total=0.0),
    )
    admin = SimpleNamespace(service=service, tracker=SimpleNamespace(topic_numbers=lambda t: t.numbers))
    return ChartHistory(admin, interval=5.0, samples=samples), service  # type: ignore[arg-type]


def test_broker_totals_in_a_bounded_ring() -> None:
    history, service = _history([_topic("a", 10, 4, 0), _topic("b", 5, 1, 0)], samples=3)
    for i in range(5):
        service.committer.rounds += 2
        service.committer.sync_seconds_total += 0.002 * (i + 1)  # rounds of 1, 2, 3, 4, 5 ms
        history.sample(at=100.0 + 5 * i)
    got = history.broker_history()
    assert got["intervalSeconds"] == 5.0
    assert got["t"] == [110.0, 115.0, 120.0]  # the oldest two dropped
    assert got["rateIn"] == [15.0] * 3 and got["rateOut"] == [5.0] * 3
    assert got["throughputIn"] == [1500.0] * 3 and got["connections"] == [2.0] * 3
    assert got["fsyncMs"] == [3.0, 4.0, 5.0]


def test_a_topic_is_sampled_from_the_first_page_that_asks() -> None:
    history, _ = _history([_topic("t", 3, 2, 7), _topic("p-partition-0", 1, 0, 4), _topic("p-partition-1", 2, 1, 5)])
    history.sample(at=1.0)
    assert history.topic_history("t")["t"] == []
    assert history.topic_history("p", partitions=2)["t"] == []
    history.sample(at=6.0)
    history.sample(at=11.0)
    assert history.topic_history("t") == {
        "intervalSeconds": 5.0, "t": [6.0, 11.0], "rateIn": [3.0, 3.0], "rateOut": [2.0, 2.0], "backlog": [7.0, 7.0]}
    partitioned = history.topic_history("p", partitions=2)
    assert (partitioned["rateIn"], partitioned["rateOut"], partitioned["backlog"]) == ([3.0, 3.0], [1.0, 1.0], [9.0, 9.0])


def test_watched_topics_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chart_history, "MAX_WATCHED", 2)
    history, _ = _history([_topic(n, 1, 1, 0) for n in "abc"])
    for name in "abc":
        history.topic_history(name)
    history.sample(at=1.0)
    assert history.topic_history("c")["t"] == [1.0]
    assert history.topic_history("a")["t"] == []  # dropped when c came: asked again, it starts again


def test_the_background_sampler_walks_the_topics_in_steps(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(chart_history, "TOPICS_PER_STEP", 2)
    history, service = _history([_topic(n, 1, 2, 0) for n in "abcde"])
    service._tasks = []
    history.interval = 0.01
    steps: list[tuple[int, int]] = []  # (samples recorded so far, topics read in this step)
    add_rates = history._add_rates
    monkeypatch.setattr(history, "_add_rates", lambda totals, topics: (
        steps.append((len(history.broker.times), len(topics))), add_rates(totals, topics)))

    async def run() -> None:
        history.start()
        while len(history.broker.times) < 2:
            await asyncio.sleep(0.005)
        service._tasks[0].cancel()

    asyncio.run(run())
    got = history.broker_history()
    assert got["rateIn"][:2] == [5.0, 5.0] and got["rateOut"][:2] == [10.0, 10.0]
    assert steps[:6] == [(0, 2), (0, 2), (0, 1), (1, 2), (1, 2), (1, 1)]  # a yield to the loop after each


def test_the_routes_serve_the_history(http: Http, name: str) -> None:
    broker = http.get("/magnetar/v1/history").json()
    assert set(broker) == {"intervalSeconds", "t", *chart_history.BROKER_SERIES}
    assert len(broker["t"]) == len(broker["rateIn"]) <= chart_history.SAMPLES
    topic = http.get(f"/magnetar/v1/history/persistent/public/default/{name}?partitions=2").json()
    assert set(topic) == {"intervalSeconds", "t", *chart_history.TOPIC_SERIES}
    assert http.get(f"/magnetar/v1/history/elsewhere/public/default/{name}").status == 404
    assert http.get(f"/magnetar/v1/history/persistent/public/default/{name}?partitions=-1").status == 412  # Pulsar's status for a bad parameter
