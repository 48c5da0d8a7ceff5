"""The ``magnetar perf`` commands: produce, consume and end-to-end, with pulsar-perf's options.

Only option parsing lives here; the loads, the HDR histograms and the client are imported when a
command runs, so that ``magnetar --help`` stays quick.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import typer

from magnetar.cli.client_conf import (
    AuthParamsOpt,
    AuthPluginOpt,
    ClientConfOpt,
    TlsHostnameOpt,
    TlsInsecureOpt,
    TlsTrustOpt,
)
from magnetar.cli.messaging import Connection, ServiceUrl
from magnetar.cli.perf.options import (
    AckDelayOpt,
    BatchDelayOpt,
    BatchMaxBytesOpt,
    BatchMaxMessagesOpt,
    CompressionOpt,
    ConsumerSettings,
    ConsumersOpt,
    ConsumersShortOpt,
    DisableBatchingOpt,
    DrainTimeoutOpt,
    JsonOpt,
    KeyModeOpt,
    MaxOutstandingOpt,
    NumMessagesOpt,
    NumSubscriptionsOpt,
    NumTopicsOpt,
    PayloadDelimiterOpt,
    PayloadFileOpt,
    PerfOptionError,
    PositionOpt,
    ProducerSettings,
    ProducersOpt,
    RateOpt,
    ReceiverQueueOpt,
    SeparatorOpt,
    SizeOpt,
    SubscriptionsOpt,
    SubTypeOpt,
    TimeOpt,
    TopicsArg,
    expand_subscriptions,
    expand_topics,
    make_payloads,
    parse_compression,
    parse_key_mode,
    parse_position,
    parse_subscription_type,
)

perf_app = typer.Typer(
    help="Load generators in the manner of pulsar-perf: produce, consume, end-to-end; rates and latency percentiles.",
    no_args_is_help=True,
)

T = TypeVar("T")


def _settings(build: Callable[[], T]) -> T:
    """Build settings from options; a bad value ends the command with one error line."""
    try:
        return build()
    except PerfOptionError as exc:
        # the runner, with a run, not for --help: 13-18 ms CPU (python -X importtime)
        from magnetar.cli.perf.runner import fail

        raise fail(str(exc)) from None


def _producer_settings(topics: list[str], num_topics: int, separator: str, rate: float, size: int,
                       num_messages: int, time_s: float, producers: int, batch_max_messages: int,
                       batch_max_bytes: int, batch_delay_ms: float, disable_batching: bool, compression: str,
                       max_outstanding: int, payload_file: Path | None, payload_delimiter: str, key_mode: str | None,
                       name_prefix: str | None = None) -> ProducerSettings:
    return ProducerSettings(
        topics=expand_topics(topics, num_topics, separator), producers_per_topic=producers, rate=rate,
        max_messages=num_messages, duration_s=time_s,
        payloads=tuple(make_payloads(size, payload_file, payload_delimiter)),
        batching=not disable_batching, batch_max_messages=batch_max_messages, batch_max_bytes=batch_max_bytes,
        batch_delay_ms=batch_delay_ms, compression=parse_compression(compression), max_outstanding=max_outstanding,
        key_mode=parse_key_mode(key_mode), producer_name_prefix=name_prefix,
    )


@perf_app.command("produce")
def perf_produce(
    topics: TopicsArg,
    rate: RateOpt = 100,
    size: SizeOpt = 1024,
    num_messages: NumMessagesOpt = 0,
    time_s: TimeOpt = 0,
    producers: ProducersOpt = 1,
    num_topics: NumTopicsOpt = 1,
    separator: SeparatorOpt = "-",
    batch_max_messages: BatchMaxMessagesOpt = 1000,
    batch_max_bytes: BatchMaxBytesOpt = 128 * 1024,
    batch_delay_ms: BatchDelayOpt = 1.0,
    disable_batching: DisableBatchingOpt = False,
    compression: CompressionOpt = "NONE",
    max_outstanding: MaxOutstandingOpt = 50_000,
    payload_file: PayloadFileOpt = None,
    payload_delimiter: PayloadDelimiterOpt = "\n",
    key_mode: KeyModeOpt = None,
    drain_timeout: DrainTimeoutOpt = 30,
    as_json: JsonOpt = False,
    service_url: ServiceUrl = None,
    client_conf: ClientConfOpt = None,
    auth_plugin: AuthPluginOpt = None,
    auth_params: AuthParamsOpt = None,
    tls_trust_cert_path: TlsTrustOpt = None,
    tls_allow_insecure: TlsInsecureOpt = None,
    tls_enable_hostname_verification: TlsHostnameOpt = None,
) -> None:
    """Produce at --rate msg/s (0: as fast as possible) until --num-messages or --time; report
    throughput and publish latency (from each message's scheduled send time to its receipt)."""
    settings = _settings(lambda: _producer_settings(
        topics, num_topics, separator, rate, size, num_messages, time_s, producers, batch_max_messages,
        batch_max_bytes, batch_delay_ms, disable_batching, compression, max_outstanding, payload_file,
        payload_delimiter, key_mode))
    conn = Connection.resolve(service_url, client_conf, auth_plugin, auth_params, tls_trust_cert_path,
                              tls_allow_insecure, tls_enable_hostname_verification)
    # the load and its runner, with a run, not for --help: 30-40 ms CPU (python -X importtime)
    from magnetar.cli.perf.produce import produce_main
    from magnetar.cli.perf.runner import Output, run

    run(produce_main(conn, settings, Output(as_json), drain_timeout))


def _consumer_settings(topics: list[str], num_topics: int, separator: str, subscriptions: list[str],
                       num_subscriptions: int, consumers: int, subscription_type: str, position: str,
                       rate: float, num_messages: int, time_s: float, receiver_queue_size: int,
                       ack_delay_ms: int) -> ConsumerSettings:
    return ConsumerSettings(
        topics=expand_topics(topics, num_topics, separator),
        subscriptions=expand_subscriptions(subscriptions, num_subscriptions), consumers_per_subscription=consumers,
        subscription_type=parse_subscription_type(subscription_type), position=parse_position(position),
        rate=rate, max_messages=num_messages, duration_s=time_s, receiver_queue_size=receiver_queue_size,
        ack_delay_ms=ack_delay_ms,
    )


@perf_app.command("consume")
def perf_consume(
    topics: TopicsArg,
    subscriptions: SubscriptionsOpt = None,
    num_subscriptions: NumSubscriptionsOpt = 1,
    consumers: ConsumersShortOpt = 1,
    subscription_type: SubTypeOpt = "Exclusive",
    position: PositionOpt = "Latest",
    rate: RateOpt = 0,
    num_messages: NumMessagesOpt = 0,
    time_s: TimeOpt = 0,
    num_topics: NumTopicsOpt = 1,
    separator: SeparatorOpt = "-",
    receiver_queue_size: ReceiverQueueOpt = 1000,
    ack_delay_ms: AckDelayOpt = 100,
    as_json: JsonOpt = False,
    service_url: ServiceUrl = None,
    client_conf: ClientConfOpt = None,
    auth_plugin: AuthPluginOpt = None,
    auth_params: AuthParamsOpt = None,
    tls_trust_cert_path: TlsTrustOpt = None,
    tls_allow_insecure: TlsInsecureOpt = None,
    tls_enable_hostname_verification: TlsHostnameOpt = None,
) -> None:
    """Receive and acknowledge until --num-messages or --time (or Ctrl-C); report throughput and
    end-to-end latency from each message's publish time (the clocks of both hosts must agree)."""
    settings = _settings(lambda: _consumer_settings(
        topics, num_topics, separator, subscriptions or ["sub"], num_subscriptions, consumers, subscription_type,
        position, rate, num_messages, time_s, receiver_queue_size, ack_delay_ms))
    conn = Connection.resolve(service_url, client_conf, auth_plugin, auth_params, tls_trust_cert_path,
                              tls_allow_insecure, tls_enable_hostname_verification)
    # the load (the client) and its runner, with a run, not for --help: 200-270 ms CPU (python -X importtime)
    from magnetar.cli.perf.consume import consume_main
    from magnetar.cli.perf.runner import Output, run

    run(consume_main(conn, settings, Output(as_json)))


@perf_app.command("end-to-end")
def perf_end_to_end(
    topics: TopicsArg,
    rate: RateOpt = 100,
    size: SizeOpt = 1024,
    num_messages: NumMessagesOpt = 0,
    time_s: TimeOpt = 0,
    producers: ProducersOpt = 1,
    consumers: ConsumersOpt = 1,
    subscription: SubscriptionsOpt = None,
    subscription_type: SubTypeOpt = "Exclusive",
    num_topics: NumTopicsOpt = 1,
    separator: SeparatorOpt = "-",
    batch_max_messages: BatchMaxMessagesOpt = 1000,
    batch_max_bytes: BatchMaxBytesOpt = 128 * 1024,
    batch_delay_ms: BatchDelayOpt = 1.0,
    disable_batching: DisableBatchingOpt = False,
    compression: CompressionOpt = "NONE",
    max_outstanding: MaxOutstandingOpt = 50_000,
    payload_file: PayloadFileOpt = None,
    payload_delimiter: PayloadDelimiterOpt = "\n",
    key_mode: KeyModeOpt = None,
    receiver_queue_size: ReceiverQueueOpt = 1000,
    ack_delay_ms: AckDelayOpt = 100,
    drain_timeout: DrainTimeoutOpt = 30,
    as_json: JsonOpt = False,
    service_url: ServiceUrl = None,
    client_conf: ClientConfOpt = None,
    auth_plugin: AuthPluginOpt = None,
    auth_params: AuthParamsOpt = None,
    tls_trust_cert_path: TlsTrustOpt = None,
    tls_allow_insecure: TlsInsecureOpt = None,
    tls_enable_hostname_verification: TlsHostnameOpt = None,
) -> None:
    """Produce and consume in one process; report publish and publish-to-receive latency, and lost
    messages. Without --subscriptions a new subscription is made and removed at the end."""
    run_id = uuid.uuid4().hex[:8]
    names = subscription or [f"perf-e2e-{run_id}"]
    producer_settings = _settings(lambda: _producer_settings(
        topics, num_topics, separator, rate, size, num_messages, time_s, producers, batch_max_messages,
        batch_max_bytes, batch_delay_ms, disable_batching, compression, max_outstanding, payload_file,
        payload_delimiter, key_mode, name_prefix=f"perf-e2e-{run_id}"))
    consumer_settings = _settings(lambda: _consumer_settings(
        topics, num_topics, separator, names[:1], 1, consumers, subscription_type, "Latest", 0, 0, 0,
        receiver_queue_size, ack_delay_ms))
    conn = Connection.resolve(service_url, client_conf, auth_plugin, auth_params, tls_trust_cert_path,
                              tls_allow_insecure, tls_enable_hostname_verification)
    # the load (the client) and its runner, with a run, not for --help: 200-300 ms CPU (python -X importtime)
    from magnetar.cli.perf.end_to_end import end_to_end_main
    from magnetar.cli.perf.runner import Output, run

    run(end_to_end_main(conn, producer_settings, consumer_settings, Output(as_json), drain_timeout,
                        unsubscribe=subscription is None))
