"""The pytest plugin of magnetar: Pulsar fixtures on a broker started for the test session.

Registered by the ``pytest11`` entry point of the magnetar package, it does nothing until a test asks
for one of its fixtures. ``pulsar_broker`` (session): a started magnetar broker (or, with
``--pulsar-service-url`` / ``--pulsar-http-url``, one that already runs); ``pulsar_namespace``: a fresh
namespace per test, deleted after it; ``pulsar_topic``: a topic name in it; ``pulsar_client`` /
``async_pulsar_client``: a :class:`magnetar.client.Client` / ``AsyncClient`` closed after the test;
``pulsar_broker_factory``: more brokers with their own settings. See docs/TESTING.md.

This module is imported by every pytest run of an environment where magnetar is installed, so it
imports only pytest and the standard library: the broker, the admin helper and the client are imported
by the fixtures that use them.
"""

from __future__ import annotations

import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from magnetar.client import AsyncClient, Authentication, Client
    from magnetar.testing.broker import Broker, ExternalBroker
    from magnetar.testing.kit import Kit

#: the fixtures that use the session broker (a test asking for one starts it early)
SESSION_BROKER_FIXTURES = frozenset({"pulsar_broker", "pulsar_namespace", "pulsar_topic", "pulsar_client",
                                     "async_pulsar_client"})

_KIT = pytest.StashKey["Kit"]()
_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()
_BROKERS = pytest.StashKey[list["Broker"]]()
_WORKER_KEPT = pytest.StashKey[list[str]]()
_MARKED = pytest.StashKey[Callable[..., Any]]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """The options, each with its ini equivalent."""
    group = parser.getgroup("magnetar", "Pulsar fixtures (magnetar)")
    group.addoption("--pulsar-service-url", metavar="URL",
                    help="run the Pulsar fixtures against this broker (pulsar://...) instead of starting one; "
                         "needs --pulsar-http-url (ini: pulsar_service_url)")
    group.addoption("--pulsar-http-url", metavar="URL",
                    help="the admin API of that broker (http://...) (ini: pulsar_http_url)")
    group.addoption("--pulsar-token", metavar="TOKEN",
                    help="a superuser's token for that broker, when it authenticates: the admin helper and the "
                         "client fixtures use it (ini: pulsar_token; 'file:PATH' reads it from a file)")
    group.addoption("--pulsar-broker-arg", action="append", default=[], metavar="NAME=VALUE",
                    help="a setting of the started brokers, by its magnetar name (fsync=always, "
                         "max_message_size=1048576); repeatable (ini: pulsar_broker_args)")
    group.addoption("--pulsar-keep-data", action="store_true", default=False,
                    help="keep the data directory of brokers used by failed tests; the path is in the report "
                         "(ini: pulsar_keep_data)")
    parser.addini("pulsar_service_url", "pulsar:// URL of a broker that already runs (no broker is started)")
    parser.addini("pulsar_http_url", "http:// URL of that broker's admin API")
    parser.addini("pulsar_token", "a superuser's token for that broker ('file:PATH': from a file)")
    parser.addini("pulsar_broker_args", "NAME=VALUE settings of the started brokers, one a line", type="linelist")
    parser.addini("pulsar_keep_data", "keep the data directory of brokers used by failed tests", type="bool",
                  default=False)
    parser.addini("pulsar_tenant", "the tenant of the pulsar_namespace namespaces", default="public")


def _option(config: pytest.Config, name: str) -> Any:
    """The command-line value of ``name``, else its ini value."""
    value = config.getoption(name)
    return value if value not in (None, [], False) else config.getini(name if name != "pulsar_broker_arg"
                                                                        else "pulsar_broker_args")


def broker_settings(args: list[str]) -> dict[str, str]:
    """``NAME=VALUE`` strings as settings; a malformed one is a usage error."""
    settings = {}
    for arg in args:
        name, sep, value = arg.partition("=")
        if not sep or not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name.strip()):
            raise pytest.UsageError(f"--pulsar-broker-arg takes NAME=VALUE (fsync=always), not {arg!r}")
        settings[name.strip()] = value.strip()
    return settings


def pytest_configure(config: pytest.Config) -> None:
    """Check the options (nothing starts here)."""
    service_url, http_url = _option(config, "pulsar_service_url"), _option(config, "pulsar_http_url")
    if bool(service_url) != bool(http_url):
        raise pytest.UsageError("--pulsar-service-url and --pulsar-http-url go together (the fixtures need both "
                                "the broker and its admin API)")
    broker_settings(_option(config, "pulsar_broker_arg"))


def _kit(config: pytest.Config) -> Kit:
    """The plugin's state, made on first use."""
    kit = config.stash.get(_KIT, None)
    if kit is None:
        # magnetar.testing.kit imports the broker launcher and the admin helper (http.client, json,
        # subprocess): 12 ms with python -X importtime, which a run without these fixtures never pays
        from magnetar.testing.kit import Kit, KitOptions

        options = KitOptions(
            service_url=_option(config, "pulsar_service_url") or None,
            http_url=_option(config, "pulsar_http_url") or None,
            token=_token(_option(config, "pulsar_token")),
            broker_settings=broker_settings(_option(config, "pulsar_broker_arg")),
            keep_data=bool(_option(config, "pulsar_keep_data")),
            tenant=config.getini("pulsar_tenant") or "public",
        )
        kit = config.stash[_KIT] = Kit(options)
    return kit


def _token(value: str | None) -> str | None:
    """The ``--pulsar-token`` value: the token, or read from ``file:PATH`` (as Pulsar's token parameters)."""
    if not value:
        return None
    if value.startswith("file:"):
        path = value.removeprefix("file:").removeprefix("//")
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise pytest.UsageError(f"--pulsar-token: cannot read {path}: {exc.strerror}") from None
    return value


def _uses_session_broker(item: pytest.Item) -> bool:
    """Whether ``item`` asks for this plugin's session broker (not a conftest fixture of the same name)."""
    info = getattr(item, "_fixtureinfo", None)
    if info is None or "pulsar_broker" not in info.name2fixturedefs:
        return False
    return info.name2fixturedefs["pulsar_broker"][-1].func.__module__ == __name__


def _launch_session_broker(config: pytest.Config) -> None:
    """Start the session broker's process without waiting for it (the fixture waits, and reports an error)."""
    try:
        _kit(config).launch_session_broker()
    except Exception:  # noqa: BLE001 - the fixture launches again and reports it as the tests' error
        pass


def _selected_as_collected(config: pytest.Config) -> bool:
    """Whether every collected test runs: no --collect-only, and nothing that deselects tests afterwards."""
    option = config.option
    return not (option.collectonly or getattr(option, "keyword", "") or getattr(option, "markexpr", "")
                or getattr(option, "deselect", None) or getattr(option, "lf", False))


def pytest_itemcollected(item: pytest.Item) -> None:
    """The first collected test that uses the session broker launches its process while collection goes on,
    when every collected test will run (else :func:`pytest_collection_finish` does, once tests are selected)."""
    config = item.config
    if config.stash.get(_KIT, None) is None and _selected_as_collected(config) and _uses_session_broker(item):
        _launch_session_broker(config)


def pytest_collection_finish(session: pytest.Session) -> None:
    """When a selected test uses the session broker, start its process now (if collection has not): it gets
    ready meanwhile."""
    if session.config.option.collectonly:
        return
    if any(_uses_session_broker(item) for item in session.items):
        _launch_session_broker(session.config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[Any]:
    """Keep each phase's report on the item; a failed test's report says where broker data was kept."""
    report: pytest.TestReport = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    kit = item.config.stash.get(_KIT, None)
    if report.failed and kit is not None:
        kit.test_failed = True
    if report.failed and kit is not None and kit.options.keep_data:
        directories = [broker.directory for broker in item.stash.get(_BROKERS, [])]
        if kit.session_broker is not None and _uses_session_broker(item):
            directories.append(kit.session_broker.directory)
        kept = [str(directory) for directory in directories if directory is not None]
        if kept:
            report.sections.append(("magnetar", "broker data kept in " + ", ".join(kept)))
    return report


def _failed(node: pytest.Item | pytest.Session) -> bool:
    """Whether the test (or, for the session, any test) failed so far."""
    if isinstance(node, pytest.Session):
        return node.testsfailed > 0
    return any(report.failed for report in node.stash.get(_REPORTS, {}).values())


@pytest.hookimpl(wrapper=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Once the test's fixtures are finalized (its clients closed), its namespaces go to the deleter, and the
    session broker builds its admin API if no fixture asked for it yet."""
    try:
        return (yield)
    finally:
        marked = item.stash.get(_MARKED, None)
        if marked is not None:
            marked.__dict__.pop("_force_asyncio_fixture", None)
        kit = item.config.stash.get(_KIT, None)
        if kit is not None:
            kit.release_namespaces()
            kit.warm_session_admin()


def pytest_terminal_summary(terminalreporter: Any, config: pytest.Config) -> None:
    """The kept data directories, and namespaces that could not be deleted."""
    kit = config.stash.get(_KIT, None)
    kept = list(kit.kept if kit is not None else []) + list(config.stash.get(_WORKER_KEPT, []))
    for directory in kept:
        terminalreporter.write_line(f"magnetar: broker data kept in {directory}")
    for error in kit.deleter.errors if kit is not None else []:
        terminalreporter.write_line(f"magnetar: namespace not deleted: {error}")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop a session broker no test used after all (-x, an interrupt); a pytest-xdist worker hands its
    kept directories to the controller's summary."""
    kit = session.config.stash.get(_KIT, None)
    if kit is not None:
        kit.finish_session_broker(_failed(session))
    workeroutput = getattr(session.config, "workeroutput", None)
    if kit is not None and workeroutput is not None:
        workeroutput["magnetar_kept"] = list(kit.kept)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist's controller: collect what a worker kept."""
    kept = getattr(node, "workeroutput", {}).get("magnetar_kept", [])
    node.config.stash.setdefault(_WORKER_KEPT, []).extend(kept)


def _slug(name: str, limit: int = 40) -> str:
    """``name`` with only the characters Pulsar allows in names (a test id may have any)."""
    return re.sub(r"[^A-Za-z0-9_.=-]+", "-", name)[:limit].strip("-") or "test"


def _authentication(broker: Broker | ExternalBroker) -> Authentication | None:
    token = broker.admin_token
    if token is None:
        return None
    # magnetar.client loads the whole client (protocol, schemas, asyncio): 110 ms with
    # python -X importtime, paid by the first test that asks for a client, never at plugin load
    from magnetar.client import AuthenticationToken

    return AuthenticationToken(token)


@pytest.fixture(scope="session")
def pulsar_broker(request: pytest.FixtureRequest) -> Iterator[Broker | ExternalBroker]:
    """The session's broker: magnetar on free ports with its data in a temporary directory (or the broker
    of ``--pulsar-service-url``); ``service_url``, ``http_url``, ``admin``, ``restart()``, ``kill()``."""
    kit = _kit(request.config)
    broker = kit.start_session_broker()
    yield broker
    kit.finish_session_broker(_failed(request.session))


@pytest.fixture
def pulsar_namespace(pulsar_broker: Broker | ExternalBroker, request: pytest.FixtureRequest) -> Iterator[str]:
    """A namespace made for this test (``tenant/name``), deleted with everything in it after the test."""
    kit = _kit(request.config)
    namespace = f"{kit.options.tenant}/{_slug(request.node.name)}-{uuid.uuid4().hex[:8]}"
    pulsar_broker.admin.create_namespace(namespace)
    kit.namespaces.append(namespace)
    yield namespace


@pytest.fixture
def pulsar_topic(pulsar_namespace: str, request: pytest.FixtureRequest) -> str:
    """A persistent topic name in this test's namespace (the topic is made by its first use)."""
    return f"persistent://{pulsar_namespace}/{_slug(request.node.originalname, 60)}"


@pytest.fixture
def pulsar_client(pulsar_broker: Broker | ExternalBroker) -> Iterator[Client]:
    """A :class:`magnetar.client.Client` on the session broker, closed (with its producers and consumers)
    after the test."""
    # the client's import (110 ms, python -X importtime) is paid at the first test that asks for one
    from magnetar.client import Client

    client = Client(pulsar_broker.service_url, authentication=_authentication(pulsar_broker))
    yield client
    client.close()


@pytest.fixture
async def async_pulsar_client(pulsar_broker: Broker | ExternalBroker) -> AsyncIterator[AsyncClient]:
    """A :class:`magnetar.client.AsyncClient` on the test's event loop (pytest-asyncio or anyio), closed
    after the test."""
    # the client's import (110 ms, python -X importtime) is paid at the first test that asks for one
    from magnetar.client import AsyncClient

    client = AsyncClient(pulsar_broker.service_url, authentication=_authentication(pulsar_broker))
    try:
        yield client
    finally:
        await client.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest) -> Iterator[Any]:
    """In pytest-asyncio's strict mode, run ``async_pulsar_client`` as an asyncio fixture for asyncio tests.

    anyio takes async fixtures of tests that use its ``anyio_backend``; pytest-asyncio's auto mode takes
    every other; its strict mode only those marked by its decorator, which would also take them from
    anyio's tests: so the mark is put on for the setup of a test that is not anyio's.
    """
    func = fixturedef.func
    if (fixturedef.argname != "async_pulsar_client" or func.__module__ != __name__
            or "anyio_backend" in request.fixturenames or not request.config.pluginmanager.has_plugin("asyncio")):
        return (yield)
    # pytest-asyncio's mark; it stays on until the test's teardown (pytest-asyncio looks again at the call)
    func._force_asyncio_fixture = True  # type: ignore[attr-defined]
    request.node.stash[_MARKED] = func
    return (yield)


@pytest.fixture
def pulsar_broker_factory(request: pytest.FixtureRequest) -> Iterator[Callable[..., Broker]]:
    """``make(settings=None, *, token_auth=False)``: a started magnetar broker with its own settings,
    stopped after the test (its data kept with ``--pulsar-keep-data`` when the test fails)."""
    kit = _kit(request.config)
    made: list[Broker] = []

    def make(settings: dict[str, object] | None = None, *, token_auth: bool = False) -> Broker:
        broker = kit.new_broker(settings, token_auth=token_auth)
        made.append(broker)
        request.node.stash.setdefault(_BROKERS, []).append(broker)
        return broker.start()

    yield make
    for broker in made:
        kit.finish_broker(broker, _failed(request.node))
