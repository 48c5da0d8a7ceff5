"""The official Python client's own test suite with magnetar's client in its place.

``import pulsar`` is answered by ``magnetar.client`` (tools/magnetar_as_pulsar puts it first on
the path), so the suite checks what "replace the official client by changing an import" means.
The suite (apache/pulsar-client-python's tests/) is read from GIT_DIR into a scratch directory
and never copied into this repository. A fresh ``magnetar standalone`` serves it on the ports the
suite hard-codes (6650 / 8080), inside a private network namespace (``unshare --user
--map-root-user --net``), so runs never collide with anything else on the machine.

``--secure`` sets the broker up as upstream's CI does: its test-conf/standalone-ssl.conf (TLS on
6651 / 8443, token, basic and TLS-certificate authentication, authorization), a token key of its
own, and the suite's tenants, namespaces and permissions.

usage: python tools/python_client_suite.py [GIT_DIR] [-k EXPR] [--files F ...] [--timeout S] [--secure]
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
PYTHON = REPO_ROOT / ".venv" / "bin" / "python"
SHIM = Path(__file__).resolve().parent / "magnetar_as_pulsar"
DEFAULT_GIT_DIR = Path("/work/.mirror/apache+pulsar-client-python/repo")
#: the suite's files that need a broker and nothing else (its TLS / auth tests need --secure)
FILES = ["pulsar_test.py", "reader_test.py", "schema_test.py", "asyncio_test.py", "table_view_test.py"]
#: the suite's own set-up: tenants and namespaces it expects
TENANTS = ["public", "private"]
NAMESPACES = ["public/default", "public/default-2", "private/auth"]


MAGNETAR = REPO_ROOT / ".venv" / "bin" / "magnetar"
#: the secure set-up (upstream's CI): PUT path -> body, sent with the superuser's token
SECURE_SET_UP = {
    "clusters/standalone": {"serviceUrl": "http://localhost:8080/", "serviceUrlTls": "https://localhost:8443/",
                            "brokerServiceUrl": "pulsar://localhost:6650/",
                            "brokerServiceUrlTls": "pulsar+ssl://localhost:6651/"},
    "tenants/public": {"adminRoles": ["anonymous"], "allowedClusters": ["standalone"]},
    "namespaces/public/default": {"auth_policies": {"namespace_auth": {"anonymous": ["produce", "consume"]}}},
    "namespaces/public/default-2": {"auth_policies": {"namespace_auth": {"anonymous": ["produce", "consume"]}}},
    "tenants/private": {"adminRoles": [], "allowedClusters": ["standalone"]},
    "namespaces/private/auth": {"auth_policies": {"namespace_auth": {"token-principal": ["produce", "consume"]}}},
}


def _put(path: str, body: object = None, token: str | None = None) -> None:
    headers = {"Content-Type": "application/json"}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(f"http://127.0.0.1:8080/admin/v2/{path}", data=data, method="PUT", headers=headers)
    try:
        # the admin app is built by the first request: allow for a loaded machine
        urllib.request.urlopen(request, timeout=60).close()
    except urllib.error.HTTPError as exc:
        if exc.code == 409 and path.startswith("tenants/"):
            # a secured standalone makes tenant public itself (its admins: the superusers, as Pulsar's);
            # upstream's script means to give it the suite's admin roles: update it
            request = urllib.request.Request(request.full_url, data=data, method="POST", headers=headers)
            urllib.request.urlopen(request, timeout=60).close()
        elif exc.code != 409:  # already there is fine; anything else shows in the tests
            print(f"set-up PUT {path}: {exc}", file=sys.stderr)


def _secure_config(work: Path) -> tuple[list[str], str]:
    """Upstream's standalone-ssl.conf with its own token key and htpasswd: (broker options, superuser token)."""
    tokens = work / "data" / "tokens"
    tokens.mkdir(parents=True)
    key = tokens / "secret.key"

    def magnetar(*args: str) -> str:
        return subprocess.run([str(MAGNETAR), *args], check=True, capture_output=True, text=True).stdout.strip()

    magnetar("tokens", "create-secret-key", "--output", str(key))
    (work / "tests" / ".test-token.txt").write_text(
        magnetar("tokens", "create", "--subject", "token-principal", "--secret-key", f"file://{key}")
    )
    superuser = magnetar("tokens", "create", "--subject", "superUser", "--secret-key", f"file://{key}")
    conf = (work / "tests" / "test-conf" / "standalone-ssl.conf").read_text()
    conf = conf.replace("file:///pulsar/data/tokens/secret.key", f"file://{key}")
    (work / "standalone-ssl.conf").write_text(conf + "\nbasicAuthConf=test-conf/.htpasswd\n")
    return ["--config", str(work / "standalone-ssl.conf")], superuser


def _start_broker(work: Path, secure: bool) -> subprocess.Popen:
    """A fresh broker for the suite, with the suite's tenants and namespaces (and, secure, its TLS,
    token, basic and TLS-certificate authentication and its permissions)."""
    options, token = _secure_config(work) if secure else (["--port", "6650", "--http-port", "8080"], None)
    log = (work / "broker.log").open("w")
    broker = subprocess.Popen(
        [str(MAGNETAR), "standalone", "--data-dir", str(work / "data" / "broker"), *options],
        stdout=log, stderr=subprocess.STDOUT, cwd=work / "tests",
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            with socket.create_connection(("127.0.0.1", 6651 if secure else 6650), timeout=1):
                break
        except OSError:
            if broker.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the broker did not start: see {work / 'broker.log'}") from None
            time.sleep(0.1)
    try:
        if secure:
            for path, body in SECURE_SET_UP.items():
                _put(path, body, token)
        else:
            for tenant in TENANTS:
                _put(f"tenants/{tenant}", {"allowedClusters": ["standalone"], "adminRoles": []})
            for namespace in NAMESPACES:
                _put(f"namespaces/{namespace}")
    except BaseException:  # a set-up that fails must not leave the broker running
        broker.terminate()
        broker.wait(10)
        raise
    return broker


def _report(xml_file: Path) -> int:
    per_file: dict[str, list[int]] = {}
    failed: list[str] = []
    for case in ET.parse(xml_file).getroot().iter("testcase"):
        file = (case.get("classname") or "").split(".")[0]
        ok = not any(child.tag in ("failure", "error") for child in case)
        counts = per_file.setdefault(file, [0, 0])
        counts[0 if ok else 1] += 1
        if not ok:
            failed.append(f"{case.get('classname')}::{case.get('name')}")
    for name in failed:
        print(f"  FAIL {name}")
    for file, (ok, bad) in sorted(per_file.items()):
        print(f"{file:24s} {ok:4d} passed {bad:4d} failed")
    passed = sum(ok for ok, _ in per_file.values())
    print(f"all: {passed} passed, {len(failed)} failed")
    return 1 if failed else 0


def run_inside(args: argparse.Namespace) -> int:
    """In the private network namespace: the broker, the set-up, the suite, the report."""
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    work = Path(args.work)
    subprocess.run(
        f"git --git-dir={args.git_dir} archive HEAD tests | tar -x -C {work}", shell=True, check=True
    )
    broker = _start_broker(work, args.secure)
    try:
        env = {**os.environ, "PYTHONPATH": f"{SHIM}{os.pathsep}{REPO_ROOT / 'src'}"}
        command = [
            str(PYTHON), "-m", "pytest", "-p", "no:cacheprovider", "-o", "addopts=", "-q", "--tb=short",
            f"--timeout={args.timeout}", f"--junitxml={work / 'results.xml'}", *args.files,
        ]
        if args.k:
            command += ["-k", args.k]
        with (work / "pytest.out").open("w") as out:
            subprocess.run(command, cwd=work / "tests", env=env, stdout=out, stderr=subprocess.STDOUT, check=False)
    finally:
        broker.terminate()
        broker.wait(10)
    print(f"output: {work / 'pytest.out'}, broker log: {work / 'broker.log'}")
    return _report(work / "results.xml")


def main(argv: list[str]) -> int:
    """Parse the arguments; re-run this script inside a private network namespace."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("git_dir", nargs="?", type=Path, default=DEFAULT_GIT_DIR)
    parser.add_argument("-k", help="pytest -k expression: only these tests")
    parser.add_argument("--files", nargs="+", default=FILES, help="the suite's test files to run")
    parser.add_argument("--timeout", type=int, default=60, help="seconds per test")
    parser.add_argument("--secure", action="store_true", help="upstream's secure set-up (TLS, tokens, basic auth)")
    parser.add_argument("--inner", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.inner:
        args.work = args.inner
        return run_inside(args)
    work = tempfile.mkdtemp(prefix="magnetar-python-client-suite-")
    inner = [str(PYTHON), str(Path(__file__).resolve()), str(args.git_dir.resolve()), "--inner", work,
             "--files", *args.files, "--timeout", str(args.timeout)]
    if args.k:
        inner += ["-k", args.k]
    if args.secure:
        inner.append("--secure")
    return subprocess.run(["unshare", "--user", "--map-root-user", "--net", *inner], check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
