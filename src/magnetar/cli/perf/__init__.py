"""``magnetar perf``: pulsar-perf's load generator on magnetar's client (see docs/PERF.md).

Modules: ``commands`` (the CLI), ``options`` (option names and run settings), ``rate_limiter``
(send schedule), ``recorder`` (HDR latency histograms), ``produce`` / ``consume`` /
``end_to_end`` (the loads), ``send_groups`` (receipts of messages sent in groups), ``runner``
(event loop, progress ticker, output), ``report`` (text and JSON). Works against any Pulsar
broker: it only speaks the protocol through magnetar.client.
"""

from magnetar.cli.perf.commands import perf_app

__all__ = ["perf_app"]
