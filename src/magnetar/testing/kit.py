"""The state of the pytest plugin in one test process: its options, the session broker, the brokers
a factory made, the namespaces waiting to be deleted and the data directories kept for inspection.

Kept apart from :mod:`magnetar.pytest_plugin` so that the plugin module, loaded by every
pytest run, imports none of this until a test asks for a fixture.
"""

from __future__ import annotations

import contextlib
import importlib
import queue
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field

from magnetar.testing.admin import Admin, AdminError
from magnetar.testing.broker import Broker, ExternalBroker


@dataclass
class KitOptions:
    """The plugin's options, command line over ini."""

    #: a broker that already runs: every fixture uses it, none is started
    service_url: str | None = None
    http_url: str | None = None
    #: the token of a superuser of that broker, when it authenticates
    token: str | None = None
    #: settings of the started brokers (``--pulsar-broker-arg NAME=VALUE``)
    broker_settings: dict[str, str] = field(default_factory=dict)
    #: keep the data directory of brokers whose tests failed
    keep_data: bool = False
    #: the tenant the namespaces of ``pulsar_namespace`` are made in
    tenant: str = "public"


class NamespaceDeleter:
    """Deletes namespaces (forced) on a thread of its own, so a test does not wait for its clean-up.

    Each namespace is unique, so a later test never sees one that is still being deleted.
    """

    def __init__(self) -> None:
        self._queue: queue.SimpleQueue[tuple[Admin, str] | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        #: namespaces that could not be deleted, with why
        self.errors: list[str] = []

    def delete_later(self, admin: Admin, namespace: str) -> None:
        """Queue ``namespace`` for deletion."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="magnetar-namespace-deleter", daemon=True)
            self._thread.start()
        self._queue.put((admin, namespace))

    def _run(self) -> None:
        while (job := self._queue.get()) is not None:
            admin, namespace = job
            try:
                admin.delete_namespace(namespace, force=True)
            except AdminError as exc:
                if exc.status != 404:  # the test deleted it itself
                    self.errors.append(f"{namespace}: {exc}")
            except OSError as exc:
                self.errors.append(f"{namespace}: {exc}")

    def drain(self) -> None:
        """Wait until every queued namespace is deleted; the thread ends."""
        if self._thread is not None:
            self._queue.put(None)
            self._thread.join(60)
            self._thread = None


def import_client() -> None:
    """Import what the first client fixture loads: the client, and the event loop its sync client's thread
    runs (uvloop, imported by ``Client()``: 7 ms, cProfile)."""
    importlib.import_module("magnetar.client")
    with contextlib.suppress(ImportError):
        importlib.import_module("uvloop")


class Kit:
    """What the plugin keeps for one test process (a pytest-xdist worker has its own)."""

    def __init__(self, options: KitOptions) -> None:
        self.options = options
        self.session_broker: Broker | ExternalBroker | None = None
        self.deleter = NamespaceDeleter()
        #: data directories kept for inspection (``--pulsar-keep-data`` and a failure)
        self.kept: list[str] = []
        #: namespaces of the running test, deleted once its fixtures are torn down; whether it failed
        self.namespaces: list[str] = []
        self.test_failed = False

    def new_broker(self, settings: Mapping[str, object] | None = None, *, token_auth: bool = False) -> Broker:
        """A broker (not started) with the ``--pulsar-broker-arg`` settings under ``settings``."""
        return Broker({**self.options.broker_settings, **(settings or {})}, token_auth=token_auth)

    def launch_session_broker(self) -> None:
        """Start the session broker's process now, without waiting (the fixture waits for it), and import
        the client meanwhile on a thread: the first test then finds both ready sooner."""
        if self.session_broker is None and self.options.service_url is None:
            self.session_broker = self.new_broker().launch()
            threading.Thread(target=import_client, daemon=True, name="magnetar-client-import").start()

    def start_session_broker(self) -> Broker | ExternalBroker:
        """The session broker, started (or the external one)."""
        if self.options.service_url is not None:
            if self.session_broker is None:
                self.session_broker = ExternalBroker(self.options.service_url, self.options.http_url or "",
                                                     self.options.token)
            return self.session_broker
        self.launch_session_broker()
        assert isinstance(self.session_broker, Broker)
        # the admin API is built when a fixture needs it or after the first test (warm_session_admin): a
        # first test with a client alone does not share the broker's CPU with that build
        return self.session_broker.start(warm_admin=False)

    def warm_session_admin(self) -> None:
        """Have the started session broker build its admin API now, unless it was asked to (later tests'
        ``pulsar_namespace`` then find it ready)."""
        if isinstance(self.session_broker, Broker) and self.session_broker.running:
            self.session_broker.warm_admin()

    def release_namespaces(self) -> None:
        """Hand the running test's namespaces to the deleter; a failed test's stay on a started broker whose
        data is kept (``--pulsar-keep-data``), for inspection."""
        namespaces, failed, self.namespaces, self.test_failed = self.namespaces, self.test_failed, [], False
        broker = self.session_broker
        if broker is None or (failed and self.options.keep_data and isinstance(broker, Broker)):
            return
        for namespace in namespaces:
            self.deleter.delete_later(broker.admin, namespace)

    def finish_broker(self, broker: Broker | ExternalBroker, failed: bool) -> None:
        """Stop ``broker``; keep its data directory when asked to and something failed."""
        if isinstance(broker, Broker):
            broker.keep_data = self.options.keep_data and failed
            if broker.keep_data and broker.directory is not None:
                self.kept.append(str(broker.directory))
        broker.stop()

    def finish_session_broker(self, failed: bool) -> None:
        """Delete the remaining namespaces, then stop the session broker (torn down with the last test,
        after that test's function-scoped fixtures: its namespaces are released here)."""
        self.release_namespaces()
        self.deleter.drain()
        if self.session_broker is not None:
            self.finish_broker(self.session_broker, failed)
            self.session_broker = None
