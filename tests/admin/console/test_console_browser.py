"""The console end to end in chromium against a live broker: every check reads the page a user sees
and, for actions, the REST API the console calls."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pulsar
from playwright.sync_api import expect

from ..admin_http import Http

NS = "public/default"


def _produce(client: pulsar.Client, topic: str, values: list[str], subscription: str | None = "s") -> Any:
    consumer = client.subscribe(f"persistent://{NS}/{topic}", subscription) if subscription else None
    producer = client.create_producer(f"persistent://{NS}/{topic}", batching_enabled=False)
    for value in values:
        producer.send(value.encode(), partition_key="key-1", properties={"origin": "test"})
    producer.close()
    return consumer


def _open(page: Any, path: str) -> None:
    page.goto(page.base + path)
    expect(page.locator("main h1")).to_be_visible()


def _confirm(page: Any) -> None:
    page.locator("#confirm-ok").click()


def test_navigate_the_tree_to_a_topic_and_peek(
    page: Any, pulsar_client: pulsar.Client, unique: str, screenshot: Callable[[Any, str], None]
) -> None:
    topic = f"tree-{unique}"
    _produce(pulsar_client, topic, ["first message", "second message"])
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(page.base) else None)
    _open(page, "/console")
    expect(page.locator('[data-card="Version"]')).not_to_have_text("")
    page.get_by_role("button", name="Expand public", exact=True).click()
    page.get_by_role("button", name="Expand public/default").click()
    page.locator("#tree").get_by_role("link", name=topic).click()
    expect(page).to_have_url(f"{page.base}/console/topics/persistent/{NS}/{topic}")
    expect(page.locator("main h1")).to_contain_text(topic)
    expect(page.locator('[data-card="Backlog"]')).to_have_text("2")
    screenshot(page, "topic-overview")
    page.locator("nav.tabs").get_by_role("link", name="Messages").click()
    page.get_by_label("Read", exact=True).select_option("peek")
    page.get_by_label("Subscription", exact=True).select_option("s")
    page.get_by_role("button", name="Show messages").click()
    expect(page).to_have_url(f"{page.base}/console/topics/persistent/{NS}/{topic}?tab=messages&count=10&sub=s")
    messages = page.locator("#messages article")
    expect(messages).to_have_count(2)
    expect(messages.first.locator("[data-text]")).to_have_text("first message")
    expect(messages.first.locator("[data-key]")).to_have_text("key-1")
    expect(messages.first.locator('[data-property="origin"]')).to_have_text("origin=test")
    screenshot(page, "topic-messages")
    page.get_by_label("Find tenant, namespace or topic").fill(unique)
    expect(page.locator("#tree").get_by_role("link", name=topic)).to_be_visible()
    expect(page.locator("#tree li li li")).to_have_count(1)
    page.get_by_label("Find tenant, namespace or topic").fill("no-such-name")
    expect(page.locator("#tree")).to_have_text("Nothing matches.")
    assert not outside, f"the console fetched from elsewhere: {outside}"


def test_backlog_falls_after_skip_reset_and_clear(
    page: Any, rest: Http, pulsar_client: pulsar.Client, unique: str, screenshot: Callable[[Any, str], None]
) -> None:
    topic = f"backlog-{unique}"
    _produce(pulsar_client, topic, [f"m{i}" for i in range(5)])
    _open(page, f"/console/topics/persistent/{NS}/{topic}?tab=subscriptions")
    backlog = page.locator('[data-backlog="s"]')
    expect(backlog).to_have_text("5")
    screenshot(page, "topic-subscriptions")
    sub = page.locator('[data-subscription="s"]')
    sub.get_by_label("Messages to skip").fill("2")
    sub.get_by_role("button", name="Skip", exact=True).click()
    expect(page.locator("#confirm-text")).to_contain_text("Skip 2 message(s) of s?")
    _confirm(page)
    expect(backlog).to_have_text("3")
    last = rest.get(f"/admin/v2/persistent/{NS}/{topic}/lastMessageId").json()
    sub = page.locator('[data-subscription="s"]')
    sub.get_by_label("Reset to a time or message id").fill(f"{last['ledgerId']}:{last['entryId']}")
    sub.get_by_role("button", name="Reset cursor").click()
    _confirm(page)
    expect(backlog).to_have_text("1")
    page.locator('[data-subscription="s"]').get_by_role("button", name="Clear backlog").click()
    _confirm(page)
    expect(backlog).to_have_text("0")
    assert rest.get(f"/admin/v2/persistent/{NS}/{topic}/stats").json()["subscriptions"]["s"]["msgBacklog"] == 0


def test_create_and_delete_a_namespace(page: Any, rest: Http, unique: str, screenshot: Callable[[Any, str], None]) -> None:
    namespace = f"ns-{unique}"
    _open(page, "/console/tenants/public")
    page.get_by_label("Namespace name").fill("bad name!")
    page.get_by_role("button", name="Create namespace").click()
    expect(page.locator("#main .error-text").first).to_contain_text("letters, digits")
    page.get_by_label("Namespace name").fill(namespace)
    page.get_by_role("button", name="Create namespace").click()
    expect(page.get_by_role("link", name=f"public/{namespace}")).to_be_visible()
    assert f"public/{namespace}" in rest.get("/admin/v2/namespaces/public").json()
    screenshot(page, "tenant")
    page.get_by_role("button", name=f"Delete namespace public/{namespace}").click()
    _confirm(page)
    expect(page.get_by_role("link", name=f"public/{namespace}")).to_have_count(0)
    assert f"public/{namespace}" not in rest.get("/admin/v2/namespaces/public").json()


def test_edit_a_policy_and_see_the_rest_value_change(
    page: Any, rest: Http, unique: str, screenshot: Callable[[Any, str], None]
) -> None:
    namespace = f"pol-{unique}"
    assert rest.put(f"/admin/v2/namespaces/public/{namespace}").status == 204
    _open(page, f"/console/namespaces/public/{namespace}?tab=policies")
    ttl = page.locator('[data-policy="messageTTL"]')
    ttl.get_by_label("TTL (seconds)").fill("-5")
    ttl.get_by_role("button", name="Save").click()
    expect(ttl.locator(".error-text").first).to_have_text("Must be 0 or more.")
    assert rest.get(f"/admin/v2/namespaces/public/{namespace}/messageTTL").json() is None
    ttl.get_by_label("TTL (seconds)").fill("120")
    ttl.get_by_role("button", name="Save").click()
    expect(page.locator('[data-current="messageTTL"]')).to_have_text("120")
    assert rest.get(f"/admin/v2/namespaces/public/{namespace}/messageTTL").json() == 120
    retention = page.locator('[data-policy="retention"]')
    retention.get_by_label("Time (minutes)").fill("60")
    retention.get_by_label("Size (MB)").fill("-1")
    retention.get_by_role("button", name="Save").click()
    expect(page.locator('[data-current="retention"]')).to_contain_text('"retentionTimeInMinutes":60')
    assert rest.get(f"/admin/v2/namespaces/public/{namespace}/retention").json() == {
        "retentionTimeInMinutes": 60, "retentionSizeInMB": -1}
    screenshot(page, "namespace-policies")
    page.locator('[data-policy="messageTTL"]').get_by_role("button", name="Remove").click()
    expect(page.locator('[data-current="messageTTL"]')).to_have_text("not set")
    assert rest.get(f"/admin/v2/namespaces/public/{namespace}/messageTTL").json() is None


def test_produce_a_test_message_from_the_page(page: Any, rest: Http, unique: str) -> None:
    topic = f"produce-{unique}"
    assert rest.put(f"/admin/v2/persistent/{NS}/{topic}").status == 204
    _open(page, f"/console/topics/persistent/{NS}/{topic}?tab=messages")
    page.get_by_label("Key (optional)").fill("k-42")
    page.get_by_label("Properties (one name=value a line)").fill("source=console\nbad line")
    page.get_by_label("Value", exact=True).fill("hello from the page")
    page.get_by_role("button", name="Publish").click()
    expect(page.locator("#main .error-text").filter(has_text="is not name=value")).to_be_visible()
    page.get_by_label("Properties (one name=value a line)").fill("source=console")
    page.get_by_role("button", name="Publish").click()
    expect(page.locator("#toasts")).to_contain_text("Message published")
    card = page.locator("#messages article").first
    expect(card.locator("[data-text]")).to_have_text("hello from the page")
    expect(card.locator("[data-key]")).to_have_text("k-42")
    examined = rest.get(f"/admin/v2/persistent/{NS}/{topic}/examinemessage?initialPosition=latest&messagePosition=1")
    assert examined.body == b"hello from the page"
    assert json.loads(examined.header("X-Pulsar-PROPERTY") or "{}") == {"source": "console"}


def test_pages_have_their_own_urls_and_themes(
    page: Any, rest: Http, pulsar_client: pulsar.Client, unique: str, screenshot: Callable[[Any, str], None]
) -> None:
    topic = f"pages-{unique}"
    _produce(pulsar_client, topic, ["x"])
    _open(page, "/console/tenants")
    expect(page.get_by_role("link", name="public", exact=True).first).to_be_visible()
    screenshot(page, "tenants")
    _open(page, f"/console/namespaces/{NS}")
    expect(page.locator("main").get_by_role("link", name=topic)).to_be_visible()
    screenshot(page, "namespace")
    for tab, name in (("storage", "Ledgers"), ("schema", None), ("policies", "Retention"), ("producers", None)):
        _open(page, f"/console/topics/persistent/{NS}/{topic}?tab={tab}")
        expect(page.locator("nav.tabs [aria-current=page]")).to_have_count(1)
        if name:
            expect(page.locator("main").get_by_text(name, exact=True).first).to_be_visible()
        screenshot(page, f"topic-{tab}")
    _open(page, "/console")
    page.wait_for_timeout(3500)
    screenshot(page, "overview")
    page.get_by_role("button", name="Switch to dark theme").click()
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    screenshot(page, "overview-dark")
    page.set_viewport_size({"width": 900, "height": 800})
    _open(page, f"/console/topics/persistent/{NS}/{topic}?tab=subscriptions")
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= 900, f"the page is {width} px wide in a 900 px window"
    screenshot(page, "topic-subscriptions-narrow-dark")
    page.get_by_role("button", name="Switch to light theme").click()
    _open(page, "/console/tenants")
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.textContent") == "Skip to content"


def test_avro_messages_are_shown_as_json_with_their_schema(
    page: Any, pulsar_client: pulsar.Client, unique: str, screenshot: Callable[[Any, str], None]
) -> None:
    from pulsar.schema import AvroSchema, Integer, Record, String

    class Reading(Record):
        sensor = String()
        value = Integer()

    topic = f"avro-{unique}"
    producer = pulsar_client.create_producer(f"persistent://{NS}/{topic}", schema=AvroSchema(Reading))
    producer.send(Reading(sensor="thermo-1", value=21))
    _open(page, f"/console/topics/persistent/{NS}/{topic}?tab=messages&start=earliest")
    value = page.locator("#messages article [data-value]").first
    expect(value).to_contain_text('"sensor": "thermo-1"')
    expect(value).to_contain_text('"value": 21')
    expect(page.locator("#messages article").first).to_contain_text("avro (schema v0)")
    screenshot(page, "topic-messages-avro")
    _open(page, f"/console/topics/persistent/{NS}/{topic}?tab=schema")
    expect(page.locator("main pre").first).to_contain_text('"name": "Reading"')
    screenshot(page, "topic-schema")


def test_create_and_delete_a_partitioned_topic(page: Any, rest: Http, unique: str, screenshot: Callable[[Any, str], None]) -> None:
    topic = f"parts-{unique}"
    _open(page, f"/console/namespaces/{NS}")
    page.get_by_label("Topic name").fill(topic)
    page.get_by_label("Partitions (0: not partitioned)").fill("3")
    page.get_by_role("button", name="Create topic").click()
    expect(page).to_have_url(f"{page.base}/console/topics/persistent/{NS}/{topic}")
    assert rest.get(f"/admin/v2/persistent/{NS}/{topic}/partitions").json() == {"partitions": 3}
    page.locator("nav.tabs").get_by_role("link", name="Partitions (3)").click()
    expect(page.locator("main table tbody tr")).to_have_count(3)
    screenshot(page, "topic-partitions")
    page.get_by_role("button", name="Delete topic").click()
    _confirm(page)
    expect(page).to_have_url(f"{page.base}/console/namespaces/{NS}")
    assert f"persistent://{NS}/{topic}" not in rest.get(f"/admin/v2/persistent/{NS}/partitioned").json()


def test_expire_unsubscribe_compact_and_terminate(page: Any, rest: Http, pulsar_client: pulsar.Client, unique: str) -> None:
    topic = f"actions-{unique}"
    consumer = _produce(pulsar_client, topic, ["a", "b", "c"])
    consumer.close()
    _open(page, f"/console/topics/persistent/{NS}/{topic}?tab=subscriptions")
    sub = page.locator('[data-subscription="s"]')
    sub.get_by_label("Expire older than (s)").fill("0")
    sub.get_by_role("button", name="Expire").click()
    _confirm(page)
    expect(page.locator('[data-backlog="s"]')).to_have_text("0")
    page.locator('[data-subscription="s"]').get_by_role("button", name="Unsubscribe").click()
    _confirm(page)
    expect(page.locator('[data-subscription="s"]')).to_have_count(0)
    assert rest.get(f"/admin/v2/persistent/{NS}/{topic}/subscriptions").json() == []
    _open(page, f"/console/topics/persistent/{NS}/{topic}?tab=storage")
    page.get_by_role("button", name="Trigger compaction").click()
    _confirm(page)
    expect(page.locator("#toasts")).to_contain_text("Compaction started")
    page.get_by_role("button", name="Terminate topic").click()
    _confirm(page)
    expect(page.locator("#toasts")).to_contain_text("Topic terminated")
    refused = rest.post(f"/topics/persistent/{NS}/{topic}", {"messages": [{"payload": "late"}]})
    assert refused.status == 409, refused.body
