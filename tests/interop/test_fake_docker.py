"""tools/fake_docker.py: the Docker Engine API calls testcontainers-go makes for the Go client's Docker tests,
answered by magnetar brokers (create, start, the exec port check, stop, start on the same ports and data,
remove)."""

from __future__ import annotations

import http.client
import json
import socket
import sys
import time
from pathlib import Path

import pytest

from magnetar.client import Client, MessageId
from magnetar.testing import free_port

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
from fake_docker import serve_in_thread  # noqa: E402

pytestmark = pytest.mark.timeout(180)


class UnixConnection(http.client.HTTPConnection):
    """HTTP over the fake daemon's unix socket."""

    def __init__(self, path: Path) -> None:
        super().__init__("localhost")
        self.path = str(path)

    def connect(self) -> None:
        self.sock = socket.socket(socket.AF_UNIX)
        self.sock.connect(self.path)


def call(sock: Path, method: str, path: str, body: dict | None = None) -> tuple[int, object]:
    conn = UnixConnection(sock)
    try:
        conn.request(method, "/v1.44" + path, json.dumps(body) if body is not None else None,
                     {"Content-Type": "application/json"})
        resp = conn.getresponse()
        data = resp.read()
        return resp.status, json.loads(data) if data and resp.getheader("Content-Type") == "application/json" else data
    finally:
        conn.close()


def port_check(sock: Path, cid: str, port: int) -> int:
    """The exit status of testcontainers' internal port check, run through the exec API."""
    status, created = call(sock, "POST", f"/containers/{cid}/exec",
                           {"Cmd": ["/bin/sh", "-c", f"true && (nc -vz -w 1 localhost {port})"]})
    assert status == 201
    conn = UnixConnection(sock)
    conn.request("POST", f"/v1.44/exec/{created['Id']}/start", "{}", {"Connection": "Upgrade", "Upgrade": "tcp"})
    assert conn.getresponse().status == 101
    conn.close()
    status, inspected = call(sock, "GET", f"/exec/{created['Id']}/json")
    assert status == 200 and inspected["Running"] is False
    return inspected["ExitCode"]


def wait_listening(port: int, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
        assert time.monotonic() < deadline, f"nothing listens on {port}"
        time.sleep(0.05)


def test_a_container_is_a_broker_that_stops_and_comes_back_on_its_ports(tmp_path: Path) -> None:
    sock = tmp_path / "docker.sock"
    server = serve_in_thread(sock, sys.executable, tmp_path / "containers")
    try:
        assert call(sock, "HEAD", "/_ping")[0] == 200
        http_port = free_port()
        status, created = call(sock, "POST", "/containers/create?name=pulsar-test", {
            "Image": "apachepulsar/pulsar:latest", "ExposedPorts": {"6650/tcp": {}, "8080/tcp": {}},
            "HostConfig": {"PortBindings": {"6650/tcp": [{"HostIp": "", "HostPort": "0"}],
                                            "8080/tcp": [{"HostIp": "", "HostPort": str(http_port)}]}}})
        assert status == 201
        cid = created["Id"]
        assert call(sock, "POST", "/containers/create?name=pulsar-test", {"Image": "x"})[0] == 409
        assert call(sock, "POST", f"/containers/{cid}/start")[0] == 204
        inspected = call(sock, "GET", f"/containers/{cid}/json")[1]
        assert inspected["State"]["Running"] is True
        ports = inspected["NetworkSettings"]["Ports"]
        binary = int(ports["6650/tcp"][0]["HostPort"])
        assert binary != 0 and ports["8080/tcp"][0]["HostPort"] == str(http_port)
        wait_listening(binary)
        assert port_check(sock, cid, 6650) == 0
        listed = call(sock, "GET", '/containers/json?filters={"name":["pulsar-test"]}')[1]
        assert [c["Id"] for c in listed] == [cid]

        with Client(f"pulsar://localhost:{binary}") as client:
            client.create_producer("public/default/kept").send(b"before the stop")
        assert call(sock, "POST", f"/containers/{cid}/stop?t=10")[0] == 204
        assert call(sock, "GET", f"/containers/{cid}/json")[1]["State"]["Running"] is False
        assert port_check(sock, cid, 6650) == 1
        assert call(sock, "POST", f"/containers/{cid}/stop?t=10")[0] == 304

        assert call(sock, "POST", f"/containers/{cid}/start")[0] == 204
        wait_listening(binary)  # the same host port, and the same data
        with Client(f"pulsar://localhost:{binary}") as client:
            reader = client.create_reader("public/default/kept", MessageId.earliest)
            assert reader.read_next(30_000).data() == b"before the stop"
        assert call(sock, "DELETE", f"/containers/{cid}?force=1&v=1")[0] == 204
        assert call(sock, "GET", f"/containers/{cid}/json")[0] == 404
        assert socket.socket().connect_ex(("127.0.0.1", binary)) != 0
    finally:
        server.shutdown()
        server.engine.close()

