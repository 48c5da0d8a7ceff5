"""Helpers shared by the end-to-end tests."""

from __future__ import annotations

import contextlib

import pulsar

#: receive timeout for messages that must arrive
RECEIVE_MS = 10_000
#: receive timeout when checking that nothing (more) arrives
QUIET_MS = 500


def new_client(service_url: str) -> pulsar.Client:
    """An official client with bounded operations and quiet logs."""
    return pulsar.Client(
        service_url,
        operation_timeout_seconds=10,
        connection_timeout_ms=5_000,
        logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error),
    )


def receive_all(consumer: pulsar.Consumer, count: int, timeout_ms: int = RECEIVE_MS) -> list[pulsar.Message]:
    """Receive exactly ``count`` messages (each within ``timeout_ms``)."""
    return [consumer.receive(timeout_millis=timeout_ms) for _ in range(count)]


def assert_nothing_more(receiver: pulsar.Consumer | pulsar.Reader, timeout_ms: int = QUIET_MS) -> None:
    """Assert that no message arrives within ``timeout_ms``."""
    try:
        if isinstance(receiver, pulsar.Reader):
            msg = receiver.read_next(timeout_millis=timeout_ms)
        else:
            msg = receiver.receive(timeout_millis=timeout_ms)
    except pulsar.Timeout:
        return
    raise AssertionError(f"unexpected message {msg.data()!r} id={msg.message_id()}")


def close_after_kill(client: pulsar.Client) -> None:
    """Close a client whose broker was just killed.

    The official client's close asks the broker to close each producer; when it has not yet seen
    the connection drop, that request fails with NotConnected. Any other error still fails the test.
    """
    with contextlib.suppress(pulsar.NotConnected):
        client.close()
