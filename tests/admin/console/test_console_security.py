"""The console against a broker with token authentication and authorization on, in chromium.

A superuser signs in and sees and changes everything; role ``reader``, which may only consume on
``acme/shop``, sees only that namespace, finds what it may not do disabled (with the broker's reason)
or refused with the broker's 403, and nothing changes on the broker. Credentials travel only as an
``Authorization`` header: no cookie is ever set.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pulsar
import pytest
from playwright.sync_api import expect

from .conftest import SUPER_USER, SecuredConsoleBroker

READER = "reader"
TENANT_ADMIN_REFUSAL = "Don't have permission to administrate resources on this tenant"
SUPER_USER_REFUSAL = "This operation requires super-user access"
#: the paths of the REST API the console calls (the rest is its own pages and assets)
API_PREFIXES = ("/admin/", "/magnetar/", "/topics/", "/metrics")
#: what the broker serves without credentials, as Pulsar does (asked before the user signed in)
OPEN_PATHS = ("/metrics", "/admin/v2/brokers/health", "/admin/v2/brokers/ready")


@pytest.fixture(scope="module")
def acme(secured_broker: SecuredConsoleBroker) -> SecuredConsoleBroker:
    """Tenant acme with namespaces shop (reader may consume) and other, a topic with a backlog in each."""
    rest = secured_broker.rest
    assert rest("PUT", "/admin/v2/tenants/acme", {"adminRoles": ["acme-admin"], "allowedClusters": ["standalone"]})[0] == 204
    for namespace in ("shop", "other"):
        assert rest("PUT", f"/admin/v2/namespaces/acme/{namespace}")[0] == 204
    assert rest("POST", f"/admin/v2/namespaces/acme/shop/permissions/{READER}", ["consume"])[0] == 204
    client = pulsar.Client(secured_broker.proc.service_url, operation_timeout_seconds=10,
                           authentication=pulsar.AuthenticationToken(secured_broker.token(SUPER_USER)),
                           logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        for topic, count in (("persistent://acme/shop/orders", 3), ("persistent://acme/other/ledger", 2)):
            client.subscribe(topic, "s").close()
            producer = client.create_producer(topic, batching_enabled=False)
            for i in range(count):
                producer.send(f"message {i}".encode())
            producer.close()
    finally:
        client.close()
    return secured_broker


@dataclass
class ApiLog:
    """Every API request the page made: path, Authorization header, status."""

    base: str
    calls: list[tuple[str, str | None, int]] = field(default_factory=list)

    def record(self, response: Any) -> None:
        path = response.url.removeprefix(self.base).split("?")[0]
        if path.startswith(API_PREFIXES):
            self.calls.append((path, response.request.headers.get("authorization"), response.status))

    def check(self, token: str) -> None:
        """Signed in, every call carried the token; before, the broker answered 401 to all but its open paths."""
        signed = [c for c in self.calls if c[1] is not None]
        assert signed, "no request carried credentials"
        assert all(auth == f"Bearer {token}" for _, auth, _ in signed), signed
        first = self.calls.index(signed[0])
        assert all(auth is not None for _, auth, _ in self.calls[first:]), self.calls[first:]
        assert all(status == 401 or path in OPEN_PATHS for path, _, status in self.calls[:first]), self.calls[:first]


def _sign_in(page: Any, path: str, token: str) -> ApiLog:
    log = ApiLog(page.base)
    page.on("response", log.record)
    page.goto(page.base + path)
    dialog = page.locator("#login-dialog")
    expect(dialog).to_be_visible()
    dialog.get_by_label("Token", exact=True).fill(token)
    dialog.get_by_role("button", name="Sign in").click()
    expect(dialog).to_be_hidden()
    return log


def _backlog(broker: SecuredConsoleBroker, topic: str) -> int:
    status, stats = broker.rest("GET", f"/admin/v2/persistent/{topic}/stats")
    assert status == 200, stats
    return int(stats["subscriptions"]["s"]["msgBacklog"])


def test_a_superuser_signs_in_sees_everything_and_acts(
    secured_page: Any, acme: SecuredConsoleBroker, screenshot: Callable[[Any, str], None]
) -> None:
    page = secured_page
    token = acme.token(SUPER_USER)
    log = _sign_in(page, "/console/tenants", token)
    expect(page.locator("main h1")).to_have_text("Tenants")
    expect(page.locator("main").get_by_role("link", name="acme", exact=True)).to_be_visible()
    page.get_by_role("button", name="Expand acme", exact=True).click()
    tree = page.locator("#tree")
    for name in ("shop", "other"):
        expect(tree.get_by_role("link", name=name, exact=True)).to_be_visible()
    expect(page.locator("#identity")).to_have_text("token set")
    screenshot(page, "signed-in-superuser")
    page.goto(page.base + "/console/tenants/acme")
    page.get_by_label("Namespace name").fill("made-by-super")
    page.get_by_role("button", name="Create namespace").click()
    expect(page.get_by_role("link", name="acme/made-by-super")).to_be_visible()
    assert "acme/made-by-super" in acme.rest("GET", "/admin/v2/namespaces/acme")[1]
    page.goto(page.base + "/console/topics/persistent/acme/other/ledger?tab=subscriptions")
    expect(page.locator('[data-backlog="s"]')).to_have_text("2")
    expect(page.locator("[data-access]")).to_have_count(0)
    sub = page.locator('[data-subscription="s"]')
    sub.get_by_label("Messages to skip").fill("1")
    sub.get_by_role("button", name="Skip", exact=True).click()
    page.locator("#confirm-ok").click()
    expect(page.locator('[data-backlog="s"]')).to_have_text("1")
    assert _backlog(acme, "acme/other/ledger") == 1
    assert acme.rest("POST", "/admin/v2/persistent/acme/other/ledger/subscription/s/resetcursor/0")[0] == 204
    assert page.context.cookies() == []
    log.check(token)


def test_a_role_that_may_only_consume_sees_its_namespace_and_is_refused_the_rest(
    secured_page: Any, acme: SecuredConsoleBroker, screenshot: Callable[[Any, str], None]
) -> None:
    page = secured_page
    token = acme.token(READER)
    before = {path: acme.rest("GET", path)[1] for path in (
        "/admin/v2/tenants", "/admin/v2/namespaces/acme", "/admin/v2/persistent/acme/shop")}
    other_backlog = _backlog(acme, "acme/other/ledger")
    log = _sign_in(page, "/console", token)
    expect(page.locator("main h1")).to_have_text("Overview")
    tree = page.locator("#tree")
    expect(tree.locator("[data-access]")).to_contain_text(SUPER_USER_REFUSAL)
    expect(tree.get_by_role("link")).to_have_count(0)
    tree.get_by_label("Open a namespace").fill("acme/shop")
    tree.get_by_role("button", name="Open").click()
    expect(page.locator("main h1")).to_have_text("Namespace acme/shop")
    expect(page.locator("main").get_by_role("link", name="orders")).to_be_visible()
    page.get_by_role("button", name="Expand acme/shop").click()
    expect(tree.get_by_role("link")).to_have_text(["acme", "shop", "orders"])

    # what only the tenant's admins may do: disabled, with the broker's reason on the page
    expect(page.locator("main [data-access]")).to_contain_text(TENANT_ADMIN_REFUSAL)
    expect(page.get_by_role("button", name="Delete namespace")).to_be_disabled()
    expect(page.get_by_role("button", name="Create topic")).to_be_disabled()
    expect(page.get_by_role("button", name="Delete topic orders")).to_be_disabled()
    screenshot(page, "role-namespace")

    # what consume allows: clearing the backlog of its own topic works
    page.locator("main").get_by_role("link", name="orders").click()
    page.locator("nav.tabs").get_by_role("link", name="Subscriptions").click()
    expect(page.locator('[data-backlog="s"]')).to_have_text("3")
    expect(page.get_by_role("button", name="Delete topic", exact=True)).to_be_disabled()
    page.locator('[data-subscription="s"]').get_by_role("button", name="Clear backlog").click()
    page.locator("#confirm-ok").click()
    expect(page.locator('[data-backlog="s"]')).to_have_text("0")
    assert _backlog(acme, "acme/shop/orders") == 0
    screenshot(page, "role-topic-subscriptions")
    page.locator("nav.tabs").get_by_role("link", name="Storage").click()
    expect(page.get_by_role("button", name="Terminate topic")).to_be_disabled()
    expect(page.get_by_role("button", name="Trigger compaction")).to_be_disabled()

    # produce is not granted: the broker's 403 is shown and nothing is published
    page.locator("nav.tabs").get_by_role("link", name="Messages").click()
    page.get_by_label("Value", exact=True).fill("not allowed")
    page.get_by_role("button", name="Publish").click()
    expect(page.locator("#toasts")).to_contain_text("Message published failed: 403 Unauthorized to validateTopicOperation")

    # a topic of another namespace, and the tenants: refused with the broker's 403
    page.goto(page.base + "/console/topics/persistent/acme/other/ledger?tab=subscriptions")
    expect(page.locator("main [role=alert]")).to_contain_text("403: Unauthorized to validateTopicOperation")
    expect(page.get_by_role("button", name="Clear backlog")).to_have_count(0)
    screenshot(page, "role-refused")
    page.goto(page.base + "/console/tenants")
    expect(page.locator("main [role=alert]")).to_contain_text(f"403: {SUPER_USER_REFUSAL}")
    expect(page.get_by_role("button", name="Create tenant")).to_have_count(0)

    assert {path: acme.rest("GET", path)[1] for path in before} == before
    assert _backlog(acme, "acme/other/ledger") == other_backlog
    assert acme.rest("GET", "/admin/v2/persistent/acme/shop/orders/stats")[1]["msgInCounter"] == 3
    assert page.context.cookies() == []
    log.check(token)
