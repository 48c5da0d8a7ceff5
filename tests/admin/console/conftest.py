"""Fixtures of the console tests: a live broker process, and Debian's chromium driven by Playwright.

The browser is never downloaded: the tests launch /usr/bin/chromium (installed by the project's
set-up) and fail with a clear message when it or Playwright is missing.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pulsar
import pytest

from magnetar.broker.security.tokens import create_token, generate_secret_key
from magnetar.testing import BrokerProcess

from ..admin_http import Http

CHROMIUM = Path(os.environ.get("MAGNETAR_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
#: screenshots are written into docs/console/ only when this variable is 1
SCREENSHOTS = os.environ.get("MAGNETAR_SCREENSHOTS") == "1"
DOCS_DIR = Path(__file__).resolve().parents[3] / "docs" / "console"


@pytest.fixture(scope="package")
def console_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    """A broker process shared by the console tests."""
    proc = BrokerProcess(tmp_path_factory.mktemp("console-broker") / "data", args=("--fsync", "never")).start()
    yield proc
    proc.stop()


@pytest.fixture
def rest(console_broker: BrokerProcess) -> Http:
    """Admin REST requests to the console's broker."""
    return Http(console_broker.http_url)


@pytest.fixture
def pulsar_client(console_broker: BrokerProcess) -> Iterator[pulsar.Client]:
    """An official client of the console's broker."""
    client = pulsar.Client(console_broker.service_url, operation_timeout_seconds=10,
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    yield client
    client.close()


@pytest.fixture
def unique() -> str:
    """A name no other test uses."""
    return uuid.uuid4().hex[:10]


@pytest.fixture(scope="package")
def browser_context(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A chromium with a fresh user data dir, driven by Playwright."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        pytest.fail("the console tests need Playwright for Python: pip install -e '.[test]'", pytrace=False)
    if not CHROMIUM.exists():
        pytest.fail(
            f"the console tests need Debian's chromium at {CHROMIUM}: apt-get install -y chromium "
            "(the tests never download a browser)", pytrace=False,
        )
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(tmp_path_factory.mktemp("chromium-profile")), executable_path=str(CHROMIUM), args=CHROMIUM_ARGS,
            headless=True, viewport={"width": 1280, "height": 860}, color_scheme="light",
        )
        yield context
        context.close()


def _tab(browser_context: Any, base: str) -> Iterator[Any]:
    tab = browser_context.new_page()
    tab.set_default_timeout(10_000)
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    tab.base = base  # type: ignore[attr-defined]
    yield tab
    tab.close()
    assert not errors, f"script errors in the console: {errors}"


@pytest.fixture
def page(browser_context: Any, console_broker: BrokerProcess) -> Iterator[Any]:
    """A new tab of the console's origin; fails the test on any uncaught script error."""
    yield from _tab(browser_context, console_broker.http_url)


#: the secured broker's superuser role
SUPER_USER = "superUser"
SECURED_CONF = """# a magnetar secured as Pulsar users secure theirs (Pulsar's standalone.conf format)
authenticationEnabled=true
authenticationProviders=org.apache.pulsar.broker.authentication.AuthenticationProviderToken
authorizationEnabled=true
superUserRoles={super_user}
tokenSecretKey=file://{key}
"""


@dataclass
class SecuredConsoleBroker:
    """A broker with token authentication and authorization on, and the key that signs its tokens."""

    proc: BrokerProcess
    secret: bytes

    def token(self, role: str) -> str:
        """A token for ``role``."""
        return create_token(self.secret, role)

    def rest(self, method: str, path: str, body: Any = None, role: str = SUPER_USER) -> tuple[int, Any]:
        """One REST call as ``role`` (the superuser by default): status and JSON body (None when empty)."""
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Authorization": f"Bearer {self.token(role)}", "Content-Type": "application/json"}
        req = urllib.request.Request(self.proc.http_url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                status, raw = resp.status, resp.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        return status, json.loads(raw) if raw else None


@pytest.fixture(scope="package")
def secured_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecuredConsoleBroker]:
    """A broker that asks every admin request for a token and checks the role's permissions."""
    directory = tmp_path_factory.mktemp("secured-console-broker")
    secret = generate_secret_key()
    (directory / "secret.key").write_bytes(secret)
    conf = directory / "standalone.conf"
    conf.write_text(SECURED_CONF.format(super_user=SUPER_USER, key=directory / "secret.key"))
    proc = BrokerProcess(directory / "data", args=("--config", str(conf), "--fsync", "never")).start()
    yield SecuredConsoleBroker(proc, secret)
    proc.stop()


@pytest.fixture
def secured_page(browser_context: Any, secured_broker: SecuredConsoleBroker) -> Iterator[Any]:
    """A new tab of the secured broker's console (no credentials yet)."""
    yield from _tab(browser_context, secured_broker.proc.http_url)


@pytest.fixture
def screenshot() -> Callable[[Any, str], None]:
    """Save a full-page screenshot as docs/console/<name>.png when MAGNETAR_SCREENSHOTS=1."""

    def take(tab: Any, name: str) -> None:
        if SCREENSHOTS:
            DOCS_DIR.mkdir(parents=True, exist_ok=True)
            tab.wait_for_timeout(300)
            tab.screenshot(path=str(DOCS_DIR / f"{name}.png"), full_page=True)

    return take
