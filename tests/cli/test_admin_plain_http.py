"""The admin CLI's plain-socket HTTP exchange: what it sends, and every way an answer is delimited."""

from __future__ import annotations

import io
import socket
import threading

import pytest

from magnetar.cli.admin.client import AdminClient, AdminCliError
from magnetar.cli.admin.plain_http import BrokenAnswer, exchange, read_answer, request_head


def test_content_length_body() -> None:
    stream = io.BytesIO(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n[\"a\",1]\nEXTRA")
    assert read_answer(stream) == (200, {"content-type": "application/json", "content-length": "8"}, b'["a",1]\n')


def test_chunked_body_with_extension_and_trailer() -> None:
    stream = io.BytesIO(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                        b"4;x=y\r\nabcd\r\n3\r\nefg\r\n0\r\nX-Trailer: 1\r\n\r\n")
    assert read_answer(stream)[2] == b"abcdefg"


def test_body_until_close_and_informational_answers_skipped() -> None:
    stream = io.BytesIO(b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.0 404 Not Found\r\nX-A: b\r\n\r\n{\"reason\": \"no\"}")
    assert read_answer(stream) == (404, {"x-a": "b"}, b'{"reason": "no"}')


def test_no_body_for_204_even_with_bytes_after() -> None:
    assert read_answer(io.BytesIO(b"HTTP/1.1 204 No Content\r\n\r\n")) == (204, {}, b"")


@pytest.mark.parametrize("answer, reason", [
    (b"", "connection closed before the answer ended"),
    (b"SSH-2.0-OpenSSH\r\n", "not an HTTP status line"),
    (b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "not a header line"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc", "answer cut short: 3 of 10 bytes"),
    (b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n", "bad Content-Length 'ten'"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", "bad chunk size b'zz'"),
    (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab", "chunk cut short"),
])
def test_broken_answers(answer: bytes, reason: str) -> None:
    with pytest.raises(BrokenAnswer, match=reason):
        read_answer(io.BytesIO(answer))


def test_request_head_as_http_client_writes_it() -> None:
    head = request_head("PUT", "::1", 8080, "/admin/v2/tenants/t", {"Accept": "application/json"}, 0)
    assert head == (b"PUT /admin/v2/tenants/t HTTP/1.1\r\nHost: [::1]:8080\r\nAccept-Encoding: identity\r\n"
                    b"Connection: close\r\nAccept: application/json\r\nContent-Length: 0\r\n\r\n")
    assert request_head("GET", "broker", 80, "/", {}, None).startswith(b"GET / HTTP/1.1\r\nHost: broker\r\n")


def _serve_once(answer: bytes) -> tuple[int, list[bytes]]:
    """A one-shot server on 127.0.0.1: it records the request and writes ``answer``, then closes."""
    server = socket.create_server(("127.0.0.1", 0))
    got: list[bytes] = []

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            data = b""
            while b"\r\n\r\n" not in data:
                data += conn.recv(4096)
            head, _, body = data.partition(b"\r\n\r\n")
            length = next((int(line.split(b":")[1]) for line in head.split(b"\r\n")
                           if line.lower().startswith(b"content-length")), 0)
            while len(body) < length:
                body += conn.recv(4096)
            got.append(head + b"\r\n\r\n" + body)
            conn.sendall(answer)
        server.close()

    threading.Thread(target=serve, daemon=True).start()
    return server.getsockname()[1], got


def test_exchange_sends_body_and_reads_answer() -> None:
    port, got = _serve_once(b"HTTP/1.1 204 No Content\r\n\r\n")
    status, headers, body = exchange("127.0.0.1", port, "POST", "/x?y=1", b'{"a": 1}',
                                     {"Content-Type": "application/json"}, 5.0)
    assert (status, headers, body) == (204, {}, b"")
    assert got == [f"POST /x?y=1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAccept-Encoding: identity\r\n"
                   "Connection: close\r\nContent-Type: application/json\r\nContent-Length: 8\r\n\r\n"
                   '{"a": 1}'.encode()]


def test_admin_client_follows_a_redirect_and_reports_a_broken_answer() -> None:
    port2, got2 = _serve_once(b'HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n["public"]')
    port1, got1 = _serve_once(f"HTTP/1.1 307 Temporary Redirect\r\nLocation: http://127.0.0.1:{port2}/b\r\n"
                              "Content-Length: 0\r\n\r\n".encode())
    assert AdminClient(f"http://127.0.0.1:{port1}").get("/a") == ["public"]
    assert got1[0].startswith(b"GET /a HTTP/1.1") and got2[0].startswith(b"GET /b HTTP/1.1")
    port3, _ = _serve_once(b"garbage\r\n")
    with pytest.raises(AdminCliError) as info:
        AdminClient(f"http://127.0.0.1:{port3}").get("/a")
    assert info.value.message == f"broken answer from http://127.0.0.1:{port3}: not an HTTP status line: 'garbage'"
