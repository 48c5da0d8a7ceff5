"""The package structure, checked: layers, independence, no import cycles, module and function sizes.

The layer and independence contracts live in pyproject.toml (``[tool.importlinter]``) and are
checked by import-linter; the cycle check reads every import statement of every module, including
those under ``TYPE_CHECKING`` and inside functions.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from importlinter import api as importlinter_api
from importlinter.application import use_cases

SRC = Path(__file__).resolve().parents[1] / "src" / "magnetar"
PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"

MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80
#: functions allowed past the limit, each with the measurement that justifies it in a comment
LONG_FUNCTION_EXCEPTIONS: set[str] = set()


def test_import_contracts_are_kept() -> None:
    """Layers (cli, testing > admin, spark > broker, client > net > protocol, storage), siblings independent."""
    assert importlinter_api.read_configuration(str(PYPROJECT))["contracts_options"]
    passed = use_cases.lint_imports(config_filename=str(PYPROJECT), cache_dir=None)
    assert passed, "import-linter contracts are broken: run `.venv/bin/lint-imports` for details"


def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC.parent).with_suffix("")
    parts = list(rel.parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _import_edges() -> dict[str, set[str]]:
    """Module -> the project modules it imports (a ``from package import name`` counts both)."""
    paths = {_module_name(p): p for p in SRC.rglob("*.py")}
    edges: dict[str, set[str]] = {}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package.split(".")
                if node.level > 1:
                    base = base[: len(base) - node.level + 1]
                stem = ".".join(base + [node.module] if node.module else base) if node.level else node.module or ""
                targets = [stem] + [f"{stem}.{alias.name}" for alias in node.names]
            else:
                continue
            edges.setdefault(module, set()).update(t for t in targets if t in paths and t != module)
    return edges


def _cycles(edges: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def enter(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)

    for root in sorted(edges):
        if root in index:
            continue
        enter(root)
        work = [(root, iter(sorted(edges.get(root, ()))))]
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    enter(child)
                    work.append((child, iter(sorted(edges.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    components.append(component)
    return components


def test_no_import_cycles() -> None:
    """No module imports itself back through others, TYPE_CHECKING and function-local imports included."""
    cycles = _cycles(_import_edges())
    assert cycles == [], "import cycles: " + "; ".join(" ".join(sorted(c)) for c in cycles)


def _functions(tree: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]


def test_module_and_function_sizes() -> None:
    """Modules under 600 lines, functions under 80 (exceptions are listed with their measurement)."""
    too_big = []
    too_long = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        lines = text.count("\n") + 1
        rel = path.relative_to(SRC.parent)
        if lines > MAX_MODULE_LINES:
            too_big.append(f"{rel}: {lines} lines")
        for func in _functions(ast.parse(text)):
            length = (func.end_lineno or func.lineno) - func.lineno + 1
            name = f"{rel}:{func.name}"
            if length > MAX_FUNCTION_LINES and name not in LONG_FUNCTION_EXCEPTIONS:
                too_long.append(f"{name}: {length} lines")
    assert too_big == [] and too_long == [], "\n".join(too_big + too_long)


#: the client's layers, top first: a module imports only modules of its own part or of a lower layer;
#: parts of one layer are independent (the core carries schemas as objects, never importing them)
CLIENT_LAYERS: list[set[str]] = [
    {"tableview", "bulk"},  # public modules re-exporting the core's and the sync face's classes
    {"asyncio", "sync"},  # the faces: pulsar.asyncio and pulsar
    {"core", "schema"},  # the asyncio machinery; schemas, records, the Avro codec
    {"api"},  # messages, configurations, policies, authentication: no I/O
    {"exceptions"},  # the flat exception hierarchy (pulsar.exceptions)
]


def _client_part(module: str) -> str | None:
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["magnetar", "client"] else None


def test_client_layers() -> None:
    """Inside magnetar.client imports point down the layers (faces > core, schema > api > exceptions),
    TYPE_CHECKING and function-local imports included; the package __init__ alone gathers the names."""
    rank = {part: level for level, parts in enumerate(CLIENT_LAYERS) for part in parts}
    edges = _import_edges()
    parts = {_client_part(m) for m in edges if _client_part(m)}
    assert parts == set(rank), f"client parts without a layer: {sorted(parts - set(rank))}"
    wrong = []
    for module, targets in edges.items():
        here = _client_part(module)
        if here is None:
            continue
        for target in targets:
            there = _client_part(target)
            if target == "magnetar.client" or (there is not None and there != here and rank[there] <= rank[here]):
                wrong.append(f"{module} -> {target}")
    assert wrong == [], "client imports against its layers: " + "; ".join(sorted(wrong))
    core = [m for m in edges if _client_part(m) == "core"]
    assert core and all(_client_part(t) not in ("asyncio", "sync", "tableview", "bulk", "schema")
                        for m in core for t in edges[m])


#: a figure in a comment: "12 ms", "0.4 ms CPU", "35 MB"
_MEASURED = re.compile(r"\b\d+(?:[.,]\d+)?\s?(?:ms|MB)\b")


def _magnetar_targets(node: ast.AST) -> list[str]:
    """The magnetar modules an import statement names (a relative import counts as one)."""
    if isinstance(node, ast.ImportFrom):
        return ["magnetar (relative)"] if node.level else [node.module or ""]
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    return []


def _comment_above(lines: list[str], lineno: int) -> str:
    """The comments on an import's line and on the comment or import lines right above it (a comment
    heading a group of imports covers the group)."""
    found = [lines[lineno - 1].partition("#")[2]]
    row = lineno - 2
    while row >= 0:
        text = lines[row].strip()
        if text.startswith("#"):
            found.append(text)
        elif not (text.startswith(("from ", "import ")) or text.endswith((",", "(")) or text == ")"):
            break
        row -= 1
    return " ".join(found)


def function_local_imports() -> list[tuple[str, int, str, str]]:
    """Every import of a magnetar module inside a function: (module path, line, target, comments)."""
    found = []
    for path in sorted(SRC.rglob("*.py")):
        text = path.read_text()
        lines = text.splitlines()
        for func in _functions(ast.parse(text)):
            for node in ast.walk(func):
                for target in _magnetar_targets(node):
                    if target.startswith("magnetar"):
                        rel = str(path.relative_to(SRC.parent))
                        found.append((rel, node.lineno, target, _comment_above(lines, node.lineno)))
    return sorted(set(found))


def test_no_function_local_imports_of_magnetar_modules_in_the_client() -> None:
    """The client's imports read as they run: every import of a magnetar module is at module level
    (or under TYPE_CHECKING), none inside a function."""
    local = [f"{path}:{line} {target}" for path, line, target, _ in function_local_imports()
             if path.startswith("magnetar/client/")]
    assert local == [], "function-local imports of magnetar modules: " + "; ".join(local)


def test_function_local_imports_give_their_measured_reason() -> None:
    """Imports read as they run: a magnetar module is imported inside a function only to keep it off a
    start-up path (the broker's, a CLI command's, the pytest plugin's), and a comment on the import (or
    heading its group) gives the figure that justifies it (``12 ms CPU``)."""
    unexplained = [f"{path}:{line} {target}" for path, line, target, comment in function_local_imports()
                   if not _MEASURED.search(comment)]
    assert unexplained == [], "function-local imports without a measured reason: " + "; ".join(unexplained)


#: inside magnetar.broker, modules the packages above them use, which import none of those packages
#: (TYPE_CHECKING and function-local imports included): (module or package, packages it must not import)
BROKER_FOUNDATIONS = [
    ("magnetar.broker.policies", ("magnetar.broker.resources", "magnetar.broker.topics", "magnetar.broker.session")),
    ("magnetar.broker.config", ("magnetar.broker.schemas", "magnetar.broker.policies", "magnetar.broker.resources")),
    ("magnetar.broker.errors", ("magnetar.broker.resources", "magnetar.broker.policies")),
]


def test_broker_foundations_import_nothing_above_them() -> None:
    """The policies raise the admin's refusals without importing the admin resources; the configuration
    parses schema strategies without importing the schema registry (both from modules below them)."""
    edges = _import_edges()
    wrong = []
    for below, above in BROKER_FOUNDATIONS:
        for module, targets in edges.items():
            if module == below or module.startswith(below + "."):
                wrong += [f"{module} -> {t}" for t in targets if t.startswith(above)]
    assert wrong == [], "upward imports inside the broker: " + "; ".join(sorted(wrong))


def test_the_event_loop_neither_reads_segments_nor_fsyncs_metadata(tmp_path: Path) -> None:
    """A probe of the rule "the event loop never waits on the disk": a subscription catching up on
    entries out of the cache (none is kept) and an admin write, against a broker thread, while every
    Segment.read_span and every statement of the metadata store's write connection records its thread.
    No segment read runs on the loop; the namespace's creation and deletion run on the metadata thread,
    and so does the commit of every other admin write (a policy PUT, a namespace property, a cluster,
    a partitioned topic, a permission grant, and a partitioned topic auto-created by a client's
    PARTITIONED_METADATA), and the admin reads whose answer is not in memory
    query SQLite off the loop (tenants, clusters, namespaces, partitioned topics); no commit fsyncs under the write lock
    (synchronous=NORMAL, no automatic checkpoint: the fsync and the checkpoint are made after the lock
    is released)."""
    import threading

    from magnetar.broker.config import BrokerConfig
    from magnetar.client import Client
    from magnetar.storage.segment import Segment
    from magnetar.testing import BrokerThread
    from magnetar.testing.admin import Admin
    from magnetar.testing.ports import free_port

    reads: list[int] = []
    original = Segment.read_span

    def recording(self, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        reads.append(threading.get_ident())
        return original(self, *args, **kwargs)

    config = BrokerConfig(data_dir=tmp_path / "data", port=free_port(), http_port=free_port(), fsync="never",
                          entry_cache_max_bytes=0)
    topic = "persistent://public/default/catch-up"
    Segment.read_span = recording  # type: ignore[method-assign]
    try:
        with BrokerThread(config) as broker:
            loop_thread = broker._thread.ident
            statements: list[tuple[int | None, str]] = []
            conn = broker.server.service.metadata._conn

            def trace(sql: str) -> None:
                if sql.startswith(("COMMIT", "PRAGMA", "INSERT INTO namespaces", "DELETE FROM namespaces")):
                    statements.append((threading.get_ident(), sql))

            broker.call(conn.set_trace_callback, trace)
            client = Client(broker.service_url)
            try:
                client.subscribe(topic, "behind").close()
                producer = client.create_producer(topic, batching_enabled=False)
                for i in range(300):
                    producer.send(b"%03d" % i)
                consumer = client.subscribe(topic, "behind")
                got = []
                for _ in range(300):
                    msg = consumer.receive(30_000)  # a loaded machine
                    got.append(int(msg.data()))
                    consumer.acknowledge(msg)
                assert got == list(range(300))
            finally:
                client.close()
            admin = Admin(f"http://127.0.0.1:{config.http_port}")
            admin.create_namespace("public/probe")
            admin.delete_namespace("public/probe")
            admin_from = len(statements)
            admin.set_namespace_policy("public/default", "messageTTL", 60)
            admin.request("PUT", "namespaces/public/default/property/probe/1")
            admin.request("PUT", "clusters/probe-remote", {"serviceUrl": "http://127.0.0.1:1"})
            admin.create_partitioned_topic("persistent://public/default/probe-p", 2)
            admin.grant_permission("public/default", "probe-role", ["produce"])
            admin.set_namespace_policy("public/default", "autoTopicCreation", {
                "allowAutoTopicCreation": True, "topicType": "partitioned", "defaultNumPartitions": 2})
            client = Client(broker.service_url)
            try:  # PARTITIONED_METADATA auto-creates the partitioned topic
                client.create_producer("persistent://public/default/probe-auto").close()
            finally:
                client.close()
            assert admin.partitioned_topics("public/default") == [
                "persistent://public/default/probe-auto", "persistent://public/default/probe-p"]
            broker.call(conn.set_trace_callback, None)
            store = broker.server.service.metadata
            reader = store._reader
            sql_reads: list[int] = []
            store._reader = lambda: (sql_reads.append(threading.get_ident()), reader())[1]
            try:
                assert "public" in admin.tenants()
                assert "probe-remote" in admin.clusters()
                assert "public/default" in admin.namespaces("public")
                assert "persistent://public/default/probe-p" in admin.partitioned_topics("public/default")
                admin.request("GET", "clusters/probe-remote")
            finally:
                del store._reader
            settings = broker.call(lambda: [conn.execute(f"PRAGMA {name}").fetchone()[0]
                                            for name in ("synchronous", "wal_autocheckpoint")])
    finally:
        Segment.read_span = original  # type: ignore[method-assign]
    assert reads, "the catch-up read no segment: the probe saw nothing"
    assert loop_thread not in reads, "a segment was read on the event loop"
    namespace_writes = [thread for thread, sql in statements if "namespaces" in sql]
    assert len(namespace_writes) == 2  # the namespace's creation and deletion
    assert loop_thread not in namespace_writes, "an admin namespace write ran on the event loop"
    admin_commits = [thread for thread, sql in statements[admin_from:] if sql.startswith("COMMIT")]
    # policy, property, cluster, partitioned topic (its row, then each partition's), permission
    assert len(admin_commits) >= 5
    assert loop_thread not in admin_commits, "an admin write or an auto-creation committed on the event loop"
    # the cluster list, a tenant's namespaces, the partitioned topics, a cluster (tenants are in the store's memory)
    assert len(sql_reads) >= 4 and loop_thread not in sql_reads, "an admin read queried SQLite on the event loop"
    assert not [sql for _, sql in statements if sql.startswith("PRAGMA")], "the write connection's settings changed"
    assert settings == [1, 0]  # NORMAL, no automatic checkpoint


#: file operations the event loop still makes in the scenario of the test below, each with why it stays
#: (measured with tests/loop_file_probe.py and strace, docs/FEATURES.md row "No disk I/O on the event loop");
#: no SQLite statement is allowed: none is run on the loop in the scenario (measured 2026-11-29)
LOOP_FILE_ALLOWED: dict[str, str] = {
    # a roll-over opens (O_CREAT) and seeks the new segment within the append that needs it: a failed
    # creation refuses that one append (tests/storage/test_faults.py, tests/broker/topics/test_no_space.py);
    # creating it on the commit thread would fail the round and fence the ledger instead
    "magnetar/storage/segment_chain.py roll": "segment roll-over",
    # the first use of a lazily imported module reads its .pyc (once per process; each such import gives
    # its measured start-up reason, test_function_local_imports_give_their_measured_reason): measured, the
    # replication package at the first internal-stats (broker/service.py's replication)
    "<frozen importlib._bootstrap> _find_and_load": "first import of a lazily loaded module",
    # FastAPI (0.12x) asks inspect.getsourcefile / getsourcelines about the endpoint's module on every
    # admin request (fastapi/routing.py _extract_endpoint_context): a stat of a page-cached file
    "fastapi/routing.py _extract_endpoint_context": "FastAPI's endpoint context (admin/)",
}


def test_the_event_loop_opens_reads_and_writes_no_file(tmp_path: Path) -> None:
    """The rule "the event loop never waits on the disk", probed: every file operation Python makes on
    the broker's loop thread (open, read, write, sync, seek, stat, listdir, mkdir, unlink...; not sockets)
    while a scenario runs produce / consume (batched and not), a catch-up out of the files, redelivery,
    deduplication, segment roll-over and retention trimming, compaction and a read_compacted reader, a
    topic unloaded and reloaded (its compacted view opened again), transactions committed and aborted,
    admin reads and writes, topics and a namespace deleted; and every SQLite statement run on the loop
    thread while the scenario also registers schemas (a producer's, a consumer's, GET_OR_CREATE_SCHEMA,
    the REST API's post / delete / forced delete), updates and removes a dynamic setting, terminates a
    topic, looks topics up and lists a namespace's topics (binary and admin) and the light HTTP server's
    clusters, checks topics not loaded and a topic, a namespace and a tenant that do not exist (the
    answers as before: on the session-9 tree the loop ran 22 statements there), deletes a namespace
    with its stored topics. Only the file operations of LOOP_FILE_ALLOWED and no SQLite statement may appear, and the
    probe must have seen the roll-overs and a statement run on the loop on purpose (it works)."""
    from magnetar.testing import BrokerThread
    from magnetar.testing.ports import free_port
    from tests.loop_file_probe import LoopFileProbe
    from tests.loop_file_scenario import probe_config, run_scenario

    config = probe_config(tmp_path / "data", free_port(), free_port())
    with BrokerThread(config) as broker, LoopFileProbe(broker._thread.ident) as probe:  # type: ignore[arg-type]
        store = broker.server.service.metadata
        probe.trace_sqlite([store._conn, *store._readers])  # opened before the probe: the others it sees open
        seen = run_scenario(broker.service_url, f"http://127.0.0.1:{config.http_port}")
        broker.call(store.list_clusters)  # a read on the loop: the probe must see its statement (it works)
        assert probe.findings and probe.findings[-1][:2] == ("sqlite", repr("SELECT name FROM clusters ORDER BY name"))
        del probe.findings[-1]
    assert seen["consumed"] == 300 and seen["redelivered"] and not seen["dup_stored"]
    assert seen["compacted"] == [b"v55", b"v56", b"v57", b"v58", b"v59"] and seen["schema"] == "STRING"
    assert seen["binary"] == {"version": b"\x00" * 8, "partitions": 0, "listed": True}
    assert (seen["schema_deleted"], seen["dynamic"], seen["terminated"]) == (1, {"maxProducersPerTopic": "100"}, 0)
    assert seen["clusters"] == ["standalone"] and len(seen["namespace_topics"]) == 4 and seen["schema_forced"] == -1
    checks, absent = seen["not_loaded"], (404, "Namespace does not exist")
    gone = (404, f"Topic {checks['names']['missing']} not found")
    assert checks["stored"] == [{"partitions": 0}, None, {}, {}, None] and checks["missing"] == [gone, gone, gone, {}, gone]
    assert checks["parted"] == [f"{checks['names']['parted']}-partition-{i}" for i in range(2)]
    assert checks["namespaces"] == [absent, (404, "Tenant does not exist"), absent, absent, absent,
                                    (404, "Tenant does not exist"), absent, (404, "Tenant does not exist")]

    def allowed_by(stack: list[str]) -> str | None:
        frames = {" ".join((place.split(":", 1)[0].split("/site-packages/")[-1].split("/src/")[-1], name))
                  for place, _, name in (line.rpartition(" ") for line in stack)}
        return next((why for frame, why in LOOP_FILE_ALLOWED.items() if frame in frames), None)

    reasons = [allowed_by(stack) for _, _, stack in probe.findings]
    unexplained = [finding for finding, why in zip(probe.findings, reasons, strict=True) if why is None]
    assert not unexplained, "file operations on the event loop:\n" + LoopFileProbe(0).report_of(unexplained)
    assert "segment roll-over" in reasons  # the probe saw the loop's own file operations
