"""Ports for test brokers: free ones below the kernel's ephemeral range, and waiting until one listens."""

from __future__ import annotations

import random
import socket
import time
from pathlib import Path

_handed_out_ports: set[int] = set()


def _ephemeral_port_floor() -> int:
    """The lowest port the kernel hands to outgoing connections (32768 when it cannot be read)."""
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago and that no outgoing connection will take.

    The port comes from below the kernel's ephemeral range: a port the kernel picked for ``bind(0)``
    is one it may also give, a moment later, to some client socket's outgoing connection, and the
    broker then fails to bind it (``EADDRINUSE``). Ports already handed out in this process are not
    handed out again.
    """
    floor = min(_ephemeral_port_floor(), 32768)
    candidates = random.Random().sample(range(floor // 2, floor), 200)
    for port in candidates:
        if port in _handed_out_ports:
            continue
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
        _handed_out_ports.add(port)
        return port
    raise RuntimeError(f"no free TCP port on 127.0.0.1 in {floor // 2}-{floor - 1}")


def wait_for_port(port: int, timeout: float = 10.0, host: str = "127.0.0.1") -> None:
    """Block until something accepts TCP connections on ``port``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.5):
                return
        except OSError:
            if time.monotonic() > deadline:
                raise TimeoutError(f"nothing listens on {host}:{port} after {timeout} s") from None
            time.sleep(0.02)
