"""One HTTP/1.1 exchange over a plain TCP socket, for the admin CLI's http:// requests.

``http.client`` imports ``email`` (to parse headers) and ``ssl`` at module level: 20-30 ms CPU of
each ``magnetar admin`` call, about a tenth of it, for one request whose answer is read to its end.
This sends the request with ``Connection: close`` and reads one answer: a status line, header lines
and a body delimited by ``Content-Length``, by chunks, or by the end of the connection. https:// stays
with ``http.client`` and ``ssl`` (:mod:`magnetar.cli.admin.client`).
"""

from __future__ import annotations

import socket
from typing import BinaryIO

#: the longest status or header line accepted (as http.client's)
_MAX_LINE = 65536
_MAX_HEADERS = 100


class BrokenAnswer(ValueError):
    """An answer that is not HTTP/1.x as expected (status line, headers, chunks, length)."""


def connect(address: tuple[str, int], timeout: float, source: tuple[str, int] | None = None) -> socket.socket:
    """``socket.create_connection`` with an ASCII host name as bytes: Python 3.11's getaddrinfo encodes a
    str host with the idna codec, whose import (stringprep, unicodedata) every admin call would pay."""
    host, port = address
    return socket.create_connection((host.encode() if host.isascii() else host, port), timeout, source)  # type: ignore[arg-type]


def request_head(method: str, host: str, port: int, target: str, headers: dict[str, str],
                 length: int | None) -> bytes:
    """The request line and headers (``Host`` as http.client writes it, no keep-alive)."""
    shown = f"[{host}]" if ":" in host else host
    lines = [f"{method} {target} HTTP/1.1", f"Host: {shown}" if port == 80 else f"Host: {shown}:{port}",
             "Accept-Encoding: identity", "Connection: close"]
    lines.extend(f"{name}: {value}" for name, value in headers.items())
    if length is not None:
        lines.append(f"Content-Length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def exchange(host: str, port: int, method: str, target: str, data: bytes | None, headers: dict[str, str],
             timeout: float) -> tuple[int, dict[str, str], bytes]:
    """Send one request and read its answer: (status, headers with lower-case names, body).
    Raises OSError (TimeoutError included) for the connection, BrokenAnswer for the answer."""
    # a body-carrying method always says its length, as http.client does
    length = len(data) if data is not None else (0 if method in ("PUT", "POST", "PATCH") else None)
    with connect((host, port), timeout) as sock:
        sock.sendall(request_head(method, host, port, target, headers, length) + (data or b""))
        with sock.makefile("rb") as stream:
            return read_answer(stream, method)


def read_answer(stream: BinaryIO, method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """One answer read from ``stream``: (status, headers with lower-case names, body); informational
    (1xx) answers before it are skipped."""
    status = _status(stream)
    headers = _headers(stream)
    while 100 <= status < 200:
        status = _status(stream)
        headers = _headers(stream)
    if method == "HEAD" or status in (204, 304):
        return status, headers, b""
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return status, headers, _chunked(stream)
    if "content-length" in headers:
        try:
            length = int(headers["content-length"])
        except ValueError:
            raise BrokenAnswer(f"bad Content-Length {headers['content-length']!r}") from None
        body = stream.read(length)
        if len(body) != length:
            raise BrokenAnswer(f"answer cut short: {len(body)} of {length} bytes")
        return status, headers, body
    return status, headers, stream.read()


def _line(stream: BinaryIO) -> bytes:
    line = stream.readline(_MAX_LINE + 1)
    if len(line) > _MAX_LINE:
        raise BrokenAnswer("line too long")
    if not line:
        raise BrokenAnswer("connection closed before the answer ended")
    return line


def _status(stream: BinaryIO) -> int:
    line = _line(stream).decode("latin-1").rstrip("\r\n")
    version, _, rest = line.partition(" ")
    code = rest[:3]
    if not version.startswith("HTTP/1.") or not code.isdigit():
        raise BrokenAnswer(f"not an HTTP status line: {line[:80]!r}")
    return int(code)


def _headers(stream: BinaryIO) -> dict[str, str]:
    found: dict[str, str] = {}
    for _ in range(_MAX_HEADERS + 1):
        line = _line(stream).decode("latin-1").rstrip("\r\n")
        if not line:
            return found
        name, colon, value = line.partition(":")
        if not colon:
            raise BrokenAnswer(f"not a header line: {line[:80]!r}")
        found[name.strip().lower()] = value.strip()
    raise BrokenAnswer(f"more than {_MAX_HEADERS} headers")


def _chunked(stream: BinaryIO) -> bytes:
    parts = []
    while True:
        size_text = _line(stream).split(b";", 1)[0].strip()
        try:
            size = int(size_text, 16)
        except ValueError:
            raise BrokenAnswer(f"bad chunk size {size_text[:20]!r}") from None
        if size == 0:
            _headers(stream)  # the trailer, if any, up to the blank line
            return b"".join(parts)
        chunk = stream.read(size)
        if len(chunk) != size or stream.read(2) != b"\r\n":
            raise BrokenAnswer("chunk cut short")
        parts.append(chunk)
