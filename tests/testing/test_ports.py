"""Tests of magnetar.testing's port choice: ports a broker can bind, never ones the kernel lends out."""

from __future__ import annotations

import socket

from magnetar.testing import free_port


def test_free_ports_are_distinct_bindable_and_below_the_ephemeral_range() -> None:
    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    ports = [free_port() for _ in range(50)]
    assert len(set(ports)) == 50
    assert all(1024 <= port < low for port in ports)
    for port in ports[:5]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.bind(("127.0.0.1", port))
            s.listen()
