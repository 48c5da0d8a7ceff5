"""The real pulsar-admin against magnetar and against Apache Pulsar, verb by verb: docs/PULSAR-ADMIN.md.

1. `mvn dependency:copy-dependencies` on tools/pulsar-admin/pom.xml puts the Java CLI
   (org.apache.pulsar:pulsar-client-tools, main class org.apache.pulsar.admin.cli.PulsarAdminTool)
   and its dependencies in WORK/lib; tools/pulsar-admin/PulsarAdminBatch.java, compiled there, runs
   many command lines in one JVM through that same PulsarAdminTool (a JVM start per verb costs
   10-40 s on this machine);
2. each broker gets the command lines of tools/pulsar_admin_verbs.py in order, through a small HTTP
   proxy that records which REST routes each verb called; a `client.conf` with `webServiceUrl`
   points the tool at the proxy;
3. outputs are compared after volatile fields are normalised (rates, times, addresses, ledger ids,
   sizes, the run's names), and every (group, verb) gets one line: works, works with a difference
   (which), fails on magnetar (its error and the route), or fails on both.

The Pulsar side is a broker you name (--pulsar-http / --pulsar-service) or Apache Pulsar standalone
started from the lib dir `make reference` assembles (--pulsar-lib, default
/tmp/magnetar-pulsar-reference/lib); --only magnetar reuses the last Pulsar results. Heavy: not in CI.
"""

from __future__ import annotations

import argparse
import http.client
import http.server
import json
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from pulsar_admin_verbs import steps

REPO_ROOT = Path(__file__).resolve().parent.parent
TOOL_DIR = Path(__file__).resolve().parent / "pulsar-admin"
BATCH_MAIN = "org.apache.pulsar.admin.cli.PulsarAdminBatch"
SCHEMA = {
    "type": "AVRO",
    "schema": json.dumps(
        {"type": "record", "name": "User", "namespace": "t", "fields": [{"name": "name", "type": "string"}]}
    ),
    "properties": {},
}


def log(message: str) -> None:
    """A progress line on stderr."""
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def assemble(work: Path) -> Path:
    """pulsar-client-tools into WORK/lib and the batch driver into WORK/classes (once); the classpath."""
    lib, classes = work / "lib", work / "classes"
    if not (lib / ".complete").exists():
        log("assembling pulsar-admin (pulsar-client-tools) from Maven Central")
        cmd = ["mvn", "-B", "-q", "-f", str(TOOL_DIR / "pom.xml"), f"-Dadmin.buildDir={work / 'target'}"]
        cmd += ["dependency:copy-dependencies", f"-DoutputDirectory={lib}", "-DincludeScope=runtime"]
        subprocess.run(cmd, check=True)
        (lib / ".complete").write_text("ok\n")
    source = TOOL_DIR / "PulsarAdminBatch.java"
    built = classes / "org" / "apache" / "pulsar" / "admin" / "cli" / "PulsarAdminBatch.class"
    if not built.exists() or built.stat().st_mtime < source.stat().st_mtime:
        classes.mkdir(parents=True, exist_ok=True)
        subprocess.run(["javac", "-d", str(classes), "-cp", f"{lib}/*", str(source)], check=True)
    return f"{classes}:{lib}/*"


class RecordingProxy:
    """An HTTP proxy in front of a broker's admin port that records each request's method and path."""

    def __init__(self, upstream: str) -> None:
        host, _, port = upstream.removeprefix("http://").rstrip("/").partition(":")
        self.routes: list[str] = []
        proxy = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def _forward(self) -> None:
                body = self._body()
                skip = ("host", "connection", "transfer-encoding", "content-length")
                headers = {k: v for k, v in self.headers.items() if k.lower() not in skip}
                conn = http.client.HTTPConnection(host, int(port), timeout=120)
                try:
                    conn.request(self.command, self.path, body=body, headers=headers)
                    resp = conn.getresponse()
                    data = resp.read()
                finally:
                    conn.close()
                proxy.routes.append(f"{self.command} {self.path.split('?')[0]} -> {resp.status}")
                self.send_response(resp.status)
                for key, value in resp.getheaders():
                    if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                        self.send_header(key, value)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _body(self) -> bytes | None:
                if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
                    chunks = []
                    while size := int(self.rfile.readline().split(b";")[0].strip() or b"0", 16):
                        chunks.append(self.rfile.read(size))
                        self.rfile.readline()
                    while self.rfile.readline().strip():
                        pass  # trailers
                    return b"".join(chunks)
                length = int(self.headers.get("Content-Length") or 0)
                return self.rfile.read(length) if length else None

            do_GET = do_PUT = do_POST = do_DELETE = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        """The proxy's http:// URL."""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()


@dataclass
class Outcome:
    """What one command line did on one broker."""

    args: list[str]
    ok: bool
    out: str
    err: str
    routes: list[str] = field(default_factory=list)


class AdminBatch:
    """The batch driver in a child JVM; ``run`` sends one command line and reads its answer block."""

    def __init__(self, classpath: str, client_conf: Path) -> None:
        cmd = ["java", "-Xmx256m", "-cp", classpath, BATCH_MAIN, str(client_conf)]
        self.proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )

    def run(self, args: list[str]) -> tuple[bool, str, str]:
        """(succeeded, stdout, stderr) of one command line."""
        assert self.proc.stdin and self.proc.stdout
        self.proc.stdin.write("\t".join(args) + "\n")
        self.proc.stdin.flush()
        lines: list[str] = []
        while True:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("the pulsar-admin batch JVM exited")
            if line.startswith("@@@END "):
                ok = line.split()[2] == "0"
                break
            lines.append(line)
        text = "".join(lines[1:])
        out, _, err = text.partition("@@@STDERR\n")
        return ok, out, err

    def close(self) -> None:
        """End the JVM."""
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def produce(service_url: str, topic: str, count: int = 5) -> int:
    """``count`` messages on ``topic`` (magnetar's client, Pulsar's wire protocol); the first's ledger id."""
    from magnetar.client import Client

    client = Client(service_url)
    try:
        producer = client.create_producer(topic, batching_enabled=False)
        ids = [producer.send(f"m{i}".encode(), partition_key=f"k{i}") for i in range(count)]
        producer.close()
    finally:
        client.close()
    return ids[0].ledger_id()


def run_side(classpath: str, http_url: str, service_url: str, work: Path, label: str) -> list[dict]:
    """Every step against one broker; the outcomes as dicts (saved to WORK/results-LABEL.json)."""
    run_id = uuid.uuid4().hex[:6]
    schema_file = work / "schema.json"
    schema_file.write_text(json.dumps(SCHEMA))
    names = {
        "{T}": f"admtable{run_id}",
        "{CLUSTER}": "standalone",
        "{SCHEMA}": str(schema_file),
        "{BROKER}": http_url.removeprefix("http://"),
    }
    names["{NS}"] = f"{names['{T}']}/ns"
    names["{TOPIC}"] = f"persistent://{names['{NS}']}/t1"
    names["{PT}"] = f"persistent://{names['{NS}']}/pt"
    names["{ST}"] = f"persistent://{names['{NS}']}/st"
    proxy = RecordingProxy(http_url)
    conf = work / f"client-{label}.conf"
    conf.write_text(f"webServiceUrl={proxy.url}\nbrokerServiceUrl={service_url}\n")
    batch = AdminBatch(classpath, conf)
    results = []
    try:
        for group, verb, args in steps():
            if verb == "PRODUCE":
                try:
                    names["{LEDGER}"] = str(produce(service_url, names["{TOPIC}"]))
                except Exception as exc:  # noqa: BLE001 - the verbs after it still run, and show it
                    log(f"{label}: producing to {names['{TOPIC}']} failed: {exc}")
                    names["{LEDGER}"] = "0"
                continue
            filled = [_fill(a, names) for a in args]
            proxy.routes.clear()
            ok, out, err = batch.run(filled)
            routes = [_unfill(r, names, run_id) for r in proxy.routes]
            outcome = Outcome(args, ok, _unfill(out, names, run_id), _unfill(err, names, run_id), routes)
            results.append({"group": group, "verb": verb, **asdict(outcome)})
            log(f"{label}: {'ok  ' if ok else 'FAIL'} {' '.join(args)}")
    finally:
        batch.close()
        proxy.close()
        (work / f"results-{label}.json").write_text(json.dumps(results, indent=1))
    return results


def _fill(arg: str, names: dict[str, str]) -> str:
    for key, value in names.items():
        arg = arg.replace(key, value)
    return arg


def _unfill(text: str, names: dict[str, str], run_id: str) -> str:
    return text.replace(run_id, "RUN").replace(names["{BROKER}"], "BROKER")


# -- comparing -----------------------------------------------------------------------------------
_VOLATILE_KEY = re.compile(
    r"(rate|throughput|timestamp|since|time$|address|version|size|ledger|entr|bytes|position|"
    r"count$|id$|uptime|connected|cursor|messages|backlog|lastMarkDelete|markDelete|read|waiting|"
    r"pending|offset|age|host|url|port|pid|memory|cpu|bandwidth|directmemory|heap|load|metrics)",
    re.IGNORECASE,
)
_MESSAGE_ID = re.compile(r"\b-?\d+:-?\d+(:-?\d+)*\b")
_NUMBER = re.compile(r"\b\d+\b")


def _shape(value: object, volatile: bool = False) -> object:
    """A JSON value with its volatile parts replaced by their type."""
    if isinstance(value, dict):
        return {k: _shape(v, volatile or bool(_VOLATILE_KEY.search(k))) for k, v in sorted(value.items())}
    if isinstance(value, list):
        return [_shape(v, volatile) for v in value]
    if volatile and value is not None:
        return type(value).__name__
    if isinstance(value, str):
        return _MESSAGE_ID.sub("L:E", value)
    return value


def normalise(text: str) -> object:
    """The comparable form of a command's output: JSON shapes, or text with ids and numbers masked."""
    text = text.strip()
    try:
        return _shape(json.loads(text))
    except ValueError:
        pass
    lines = [_NUMBER.sub("N", _MESSAGE_ID.sub("L:E", line.strip())) for line in text.splitlines()]
    return sorted(line for line in lines if line)


def differences(pulsar: object, magnetar: object, path: str = "") -> list[str]:
    """What differs between two normalised outputs, as short phrases."""
    if isinstance(pulsar, dict) and isinstance(magnetar, dict):
        found = [f"no `{path}{k}`" for k in pulsar if k not in magnetar]
        found += [f"extra `{path}{k}`" for k in magnetar if k not in pulsar]
        for key in pulsar.keys() & magnetar.keys():
            found += differences(pulsar[key], magnetar[key], f"{path}{key}.")
        return found
    if isinstance(pulsar, list) and isinstance(magnetar, list) and pulsar and magnetar:
        if all(isinstance(x, dict) for x in pulsar + magnetar):
            return differences(pulsar[0], magnetar[0], path + "[].")
    if pulsar != magnetar:
        where = path.rstrip(".") or "output"
        return [f"`{where}`: {_short(magnetar)} (Pulsar: {_short(pulsar)})"]
    return []


def _short(value: object) -> str:
    text = json.dumps(value) if not isinstance(value, str) else value
    return text if len(text) <= 60 else text[:57] + "..."


def _error_line(outcome: dict) -> str:
    lines = [line.strip() for line in (outcome["err"] or outcome["out"]).splitlines() if line.strip()]
    reason = next((line for line in lines if line.startswith("Reason:")), lines[0] if lines else "?")
    return reason.removeprefix("Reason: ")[:120]


def verdict(pulsar: dict | None, magnetar: dict) -> tuple[str, str]:
    """(status, note) of one command line."""
    if pulsar is None:
        return ("works" if magnetar["ok"] else "fails"), "not run on Pulsar"
    if magnetar["ok"] and pulsar["ok"]:
        diff = differences(normalise(pulsar["out"]), normalise(magnetar["out"]))
        if not diff:
            return "works", ""
        return "difference", "; ".join(diff[:6]) + (f"; and {len(diff) - 6} more" if len(diff) > 6 else "")
    if not magnetar["ok"] and not pulsar["ok"]:
        return "both fail", f"magnetar: {_error_line(magnetar)}; Pulsar: {_error_line(pulsar)}"
    if not magnetar["ok"]:
        routes = ", ".join(r for r in magnetar["routes"] if not r.endswith(("-> 200", "-> 204"))) or ", ".join(
            pulsar["routes"]
        )
        return "fails", f"{_error_line(magnetar)} (route: {routes or '?'})"
    return "difference", f"Pulsar refuses it ({_error_line(pulsar)}); magnetar accepts it"


_RANK = {"fails": 0, "difference": 1, "both fail": 2, "works": 3}
_WORDS = {
    "works": "works",
    "difference": "works with a difference",
    "fails": "**fails on magnetar**",
    "both fail": "fails on both (not for a standalone)",
}


def render(pulsar: list[dict] | None, magnetar: list[dict], header: str) -> str:
    """docs/PULSAR-ADMIN.md: one line per (group, verb), its worst outcome over the steps that ran it."""
    rows: dict[tuple[str, str], tuple[str, list[str], list[str]]] = {}
    for index, mine in enumerate(magnetar):
        theirs = pulsar[index] if pulsar is not None and index < len(pulsar) else None
        status, note = verdict(theirs, mine)
        key = (mine["group"], mine["verb"])
        routes = sorted({r.rsplit(" -> ", 1)[0] for r in (theirs or mine)["routes"]})
        old = rows.get(key)
        notes = ([] if old is None else old[1]) + ([f"`{' '.join(mine['args'])}`: {note}"] if note else [])
        worst = status if old is None or _RANK[status] < _RANK[old[0]] else old[0]
        rows[key] = (worst, notes, sorted(set((old[2] if old else []) + routes)))
    counts: dict[str, int] = {}
    for status, _, _ in rows.values():
        counts[status] = counts.get(status, 0) + 1
    lines = [header, ""]
    lines.append(", ".join(f"{_WORDS[s]}: {counts.get(s, 0)}" for s in _RANK) + f" (of {len(rows)} verbs)")
    group = None
    for (grp, verb), (status, notes, routes) in rows.items():
        if grp != group:
            group = grp
            lines += ["", f"## {grp}", "", "| verb | on magnetar | REST route(s) | notes |", "| --- | --- | --- | --- |"]
        route_text = "<br>".join(f"`{r}`" for r in routes)
        note_text = "<br>".join(n.replace("|", "\\|") for n in notes)
        lines.append(f"| {verb} | {_WORDS[status]} | {route_text} | {note_text} |")
    return "\n".join(lines) + "\n"


# -- the brokers ---------------------------------------------------------------------------------
def start_magnetar(work: Path):  # type: ignore[no-untyped-def]
    """A fresh magnetar (this tree's) on free ports."""
    sys.path.insert(0, str(REPO_ROOT / "src"))
    from magnetar.testing import BrokerProcess

    data = work / "magnetar-data"
    subprocess.run(["rm", "-rf", str(data)], check=True)
    env = {"PYTHONPATH": str(REPO_ROOT / "src"), "MAGNETAR_FSYNC": "never"}
    return BrokerProcess(data, env=env).start(timeout=120)  # a loaded machine (a JVM broker starting) is slow


def main(argv: list[str]) -> int:
    """Assemble, run the verbs on each broker, write the table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/magnetar-pulsar-admin"))
    parser.add_argument("--output", type=Path, default=REPO_ROOT / "docs" / "PULSAR-ADMIN.md")
    parser.add_argument("--only", choices=("pulsar", "magnetar"), help="run one side, reuse the other's last run")
    parser.add_argument("--pulsar-http", help="an Apache Pulsar already running: its http:// URL")
    parser.add_argument("--pulsar-service", help="... and its pulsar:// URL")
    parser.add_argument("--pulsar-lib", type=Path, default=Path("/tmp/magnetar-pulsar-reference/lib"))
    args = parser.parse_args(argv)
    work = args.work.resolve()
    work.mkdir(parents=True, exist_ok=True)
    classpath = assemble(work)
    if args.only != "magnetar":
        _run_pulsar(args, classpath, work)
    if args.only != "pulsar":
        broker = start_magnetar(work)
        try:
            run_side(classpath, broker.http_url, broker.service_url, work, "magnetar")
        finally:
            broker.stop()
    pulsar_file = work / "results-pulsar.json"
    pulsar = json.loads(pulsar_file.read_text()) if pulsar_file.exists() else None
    magnetar = json.loads((work / "results-magnetar.json").read_text())
    version = sorted((work / "lib").glob("pulsar-client-tools-*.jar"))[0].stem.rsplit("-", 1)[1]
    header = (
        "# pulsar-admin against magnetar\n\n"
        f"Generated by `tools/pulsar_admin_table.py` (`make pulsar-admin-table`) on "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}: the real pulsar-admin {version} "
        "(org.apache.pulsar:pulsar-client-tools from Maven Central, `PulsarAdminTool` with a client.conf) "
        "runs every verb below against a fresh magnetar and against Apache Pulsar standalone "
        "(`make reference`'s build), and compares the outputs once rates, times, addresses, ledger "
        "and entry ids, sizes and counts are masked. A verb that ran in several steps (set, get, "
        "remove, get) shows its worst one. 'fails on both' are verbs that need what a standalone "
        "Pulsar does not run either (BookKeeper rack groups, offloaders, resource groups, ...). "
        "The routes are those the CLI called on Pulsar."
    )
    args.output.write_text(render(pulsar, magnetar, header))
    log(f"wrote {args.output}")
    return 0


def _run_pulsar(args: argparse.Namespace, classpath: str, work: Path) -> None:
    if args.pulsar_http:
        run_side(classpath, args.pulsar_http, args.pulsar_service, work, "pulsar")
        return
    from pulsar_reference import PulsarStandalone

    pulsar = PulsarStandalone(args.pulsar_lib, work / "pulsar")
    log(f"starting Apache Pulsar standalone ({pulsar.http_url})")
    pulsar.start()
    try:
        run_side(classpath, pulsar.http_url, pulsar.service_url, work, "pulsar")
    finally:
        pulsar.stop()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main(sys.argv[1:]))
