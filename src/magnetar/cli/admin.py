"""``magnetar admin``: the pulsar-admin verbs, over a broker's REST API.

Every command sends one (or a few) HTTP requests to ``--admin-url`` (default
http://localhost:8080) with the standard library, and prints the answer as rich tables, or as
JSON with ``--json``. A refused request prints one line, ``error: <status> <phrase>: <reason>``,
and exits with status 1.
"""

from __future__ import annotations

import base64
import http.client
import json
import re
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from http import HTTPStatus
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.table import Table

DEFAULT_ADMIN_URL = "http://localhost:8080"
_NO_BODY = object()


# ---------------------------------------------------------------------------------------
# HTTP
# ---------------------------------------------------------------------------------------
class AdminCliError(Exception):
    """A request that failed: refused by the broker, or the broker could not be reached."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass
class RawReply:
    """An answer whose body is not JSON (peeked messages)."""

    body: bytes
    headers: dict[str, str]


class AdminClient:
    """Requests to the admin REST API of one broker."""

    def __init__(self, base_url: str, timeout: float = 30.0) -> None:
        self.base_url = base_url.rstrip("/")
        self.timeout = timeout

    def request(self, method: str, path: str, body: Any = _NO_BODY, raw: bool = False) -> Any:
        data = None
        headers = {"Accept": "application/json"}
        if body is not _NO_BODY:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        url = self.base_url + path
        req = urllib.request.Request(url, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                payload = resp.read()
                if raw:
                    return RawReply(payload, {k: v for k, v in resp.headers.items()})
                if not payload:
                    return None
                try:
                    return json.loads(payload)
                except ValueError:
                    return payload.decode(errors="replace")
        except urllib.error.HTTPError as exc:
            raise AdminCliError(_describe_http_error(exc)) from None
        except urllib.error.URLError as exc:
            reason = exc.reason.strerror if isinstance(exc.reason, OSError) and exc.reason.strerror else exc.reason
            raise AdminCliError(f"cannot reach {self.base_url}: {reason}") from None
        except TimeoutError:
            raise AdminCliError(f"no answer from {self.base_url} within {self.timeout:.0f} s") from None
        except (http.client.HTTPException, ConnectionError) as exc:
            raise AdminCliError(f"broken answer from {self.base_url}: {exc}") from None

    def get(self, path: str, raw: bool = False) -> Any:
        return self.request("GET", path, raw=raw)

    def put(self, path: str, body: Any = _NO_BODY) -> Any:
        return self.request("PUT", path, body)

    def post(self, path: str, body: Any = _NO_BODY) -> Any:
        return self.request("POST", path, body)

    def delete(self, path: str) -> Any:
        return self.request("DELETE", path)


def _describe_http_error(exc: urllib.error.HTTPError) -> str:
    try:
        phrase = HTTPStatus(exc.code).phrase
    except ValueError:
        phrase = "Error"
    text = ""
    try:
        body = exc.read()
        data = json.loads(body) if body else None
        if isinstance(data, dict) and data.get("reason"):
            text = str(data["reason"])
        elif body:
            text = body.decode(errors="replace")
    except (ValueError, OSError):
        pass
    text = " ".join(text.split())
    return f"{exc.code} {phrase}: {text}" if text else f"{exc.code} {phrase}"


# ---------------------------------------------------------------------------------------
# context, output, argument parsing
# ---------------------------------------------------------------------------------------
@dataclass
class _State:
    client: AdminClient
    json: bool
    console: Console


def _state(ctx: typer.Context) -> _State:
    state = ctx.find_object(_State)
    if state is None:  # pragma: no cover - the callback always sets it
        state = _State(AdminClient(DEFAULT_ADMIN_URL), False, Console())
    return state


def _fail(message: str) -> None:
    typer.echo(f"error: {message}", err=True)
    raise typer.Exit(1)


def _call(fn, *args: Any, **kwargs: Any) -> Any:  # noqa: ANN001 - any client method
    try:
        return fn(*args, **kwargs)
    except AdminCliError as exc:
        _fail(exc.message)


def _cell(value: Any) -> str:
    if isinstance(value, dict | list):
        return json.dumps(value, separators=(",", ":"))
    if isinstance(value, float):
        return f"{value:.3f}"
    return "" if value is None else str(value)


def show(ctx: typer.Context, data: Any, title: str | None = None) -> None:
    """Print an answer: JSON with --json, else a table (lists, objects) or the plain value."""
    state = _state(ctx)
    if state.json:
        typer.echo(json.dumps(data, indent=2))
        return
    if isinstance(data, list):
        table = Table(title=title, show_header=bool(title))
        table.add_column(title or "value")
        for item in data:
            table.add_row(_cell(item))
        if title:
            state.console.print(table)
        else:
            for item in data:
                state.console.print(_cell(item), highlight=False, markup=False)
        return
    if isinstance(data, dict):
        table = Table(title=title)
        table.add_column("key", style="bold")
        table.add_column("value", overflow="fold")
        for key, value in data.items():
            table.add_row(str(key), _cell(value))
        state.console.print(table)
        return
    typer.echo("null" if data is None else (json.dumps(data) if isinstance(data, bool) else str(data)))


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _topic_path(topic: str) -> tuple[str, Any]:
    from magnetar.protocol.topic_name import InvalidTopicNameError, TopicName

    try:
        tn = TopicName.parse(topic)
    except InvalidTopicNameError as exc:
        _fail(str(exc))
    return f"/admin/v2/{tn.domain}/{_q(tn.tenant)}/{_q(tn.namespace_part)}/{_q(tn.local_name)}", tn


def _ns_path(namespace: str) -> str:
    parts = namespace.split("/")
    if len(parts) != 2 or not all(parts):
        _fail(f"invalid namespace {namespace!r}: expected tenant/namespace")
    return f"{_q(parts[0])}/{_q(parts[1])}"


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_SIZES = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}


def parse_seconds(text: str, default_unit: str = "s") -> int:
    """A duration like 90, 90s, 10m, 3h, 2d, 1w (-1 stays -1) in seconds."""
    value = text.strip().lower()
    if value == "-1":
        return -1
    m = re.fullmatch(r"(\d+)([smhdw]?)", value)
    if not m:
        _fail(f"invalid duration {text!r}: expected a number with an optional unit s, m, h, d or w")
    return int(m.group(1)) * _UNITS[m.group(2) or default_unit]


def parse_size_mb(text: str) -> int:
    """A size like 100M, 10G, 512K (-1 stays -1) in megabytes."""
    value = text.strip().lower()
    if value == "-1":
        return -1
    m = re.fullmatch(r"(\d+)([kmgt]?)b?", value)
    if not m:
        _fail(f"invalid size {text!r}: expected a number with an optional unit K, M, G or T")
    return int(int(m.group(1)) * _SIZES[m.group(2) or "m"])


def parse_bytes(text: str) -> int:
    """A size like 10M, 1G, 4096 in bytes (-1 stays -1)."""
    value = text.strip().lower()
    if value == "-1":
        return -1
    m = re.fullmatch(r"(\d+)([kmgt]?)b?", value)
    if not m:
        _fail(f"invalid size {text!r}: expected a number with an optional unit K, M, G or T")
    factor = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}[m.group(2)]
    return int(m.group(1)) * factor


def _message_id(text: str) -> dict[str, int]:
    value = text.strip().lower()
    if value == "earliest":
        return {"ledgerId": -1, "entryId": -1}
    if value == "latest":
        return {"ledgerId": (1 << 63) - 1, "entryId": (1 << 63) - 1}
    m = re.fullmatch(r"(-?\d+):(-?\d+)(?::(-?\d+))?(?::(-?\d+))?", value)
    if not m:
        _fail(f"invalid message id {text!r}: expected earliest, latest or ledgerId:entryId")
    out = {"ledgerId": int(m.group(1)), "entryId": int(m.group(2))}
    if m.group(3) is not None:
        out["partitionIndex"] = int(m.group(3))
    return out


def _split_csv(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for value in values or []:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


# ---------------------------------------------------------------------------------------
# the admin app
# ---------------------------------------------------------------------------------------
admin_app = typer.Typer(
    name="admin",
    help="Administer a broker over its REST API, like pulsar-admin.",
    no_args_is_help=True,
)
clusters_app = typer.Typer(help="Clusters.", no_args_is_help=True)
tenants_app = typer.Typer(help="Tenants.", no_args_is_help=True)
namespaces_app = typer.Typer(help="Namespaces and their policies.", no_args_is_help=True)
topics_app = typer.Typer(help="Topics, subscriptions, messages and topic policies.", no_args_is_help=True)
admin_app.add_typer(clusters_app, name="clusters")
admin_app.add_typer(tenants_app, name="tenants")
admin_app.add_typer(namespaces_app, name="namespaces")
admin_app.add_typer(topics_app, name="topics")


@admin_app.callback()
def _admin(
    ctx: typer.Context,
    admin_url: Annotated[
        str, typer.Option("--admin-url", envvar="MAGNETAR_ADMIN_URL", help="Broker HTTP URL")
    ] = DEFAULT_ADMIN_URL,
    json_output: Annotated[bool, typer.Option("--json", help="Print answers as JSON")] = False,
) -> None:
    """Administer a broker over its REST API, like pulsar-admin."""
    ctx.obj = _State(AdminClient(admin_url), json_output, Console(soft_wrap=False))


Name = Annotated[str, typer.Argument(help="Name")]
TopicArg = Annotated[str, typer.Argument(help="Topic: persistent://tenant/namespace/topic or a short name")]
NsArg = Annotated[str, typer.Argument(help="Namespace: tenant/namespace")]
SubOpt = Annotated[str, typer.Option("--subscription", "-s", help="Subscription name")]
ForceOpt = Annotated[bool, typer.Option("--force", "-f", help="Also when clients are connected / not empty")]


# -- clusters ------------------------------------------------------------------------------
@clusters_app.command("list")
def clusters_list(ctx: typer.Context) -> None:
    """List clusters."""
    show(ctx, _call(_state(ctx).client.get, "/admin/v2/clusters"))


@clusters_app.command("get")
def clusters_get(ctx: typer.Context, cluster: Name) -> None:
    """Show a cluster's URLs."""
    show(ctx, _call(_state(ctx).client.get, f"/admin/v2/clusters/{_q(cluster)}"))


@clusters_app.command("create")
def clusters_create(
    ctx: typer.Context,
    cluster: Name,
    url: Annotated[str | None, typer.Option("--url", help="HTTP service URL")] = None,
    broker_url: Annotated[str | None, typer.Option("--broker-url", help="pulsar:// service URL")] = None,
) -> None:
    """Create a cluster."""
    body = {k: v for k, v in (("serviceUrl", url), ("brokerServiceUrl", broker_url)) if v}
    _call(_state(ctx).client.put, f"/admin/v2/clusters/{_q(cluster)}", body)


# -- tenants -------------------------------------------------------------------------------
@tenants_app.command("list")
def tenants_list(ctx: typer.Context) -> None:
    """List tenants."""
    show(ctx, _call(_state(ctx).client.get, "/admin/v2/tenants"))


@tenants_app.command("get")
def tenants_get(ctx: typer.Context, tenant: Name) -> None:
    """Show a tenant's admin roles and allowed clusters."""
    show(ctx, _call(_state(ctx).client.get, f"/admin/v2/tenants/{_q(tenant)}"))


RolesOpt = Annotated[list[str] | None, typer.Option("--admin-roles", "-r", help="Admin roles (comma separated)")]
ClustersOpt = Annotated[
    list[str] | None, typer.Option("--allowed-clusters", "-c", help="Allowed clusters (comma separated; default: all)")
]


def _tenant_body(state: _State, roles: list[str] | None, clusters: list[str] | None) -> dict[str, Any]:
    allowed = _split_csv(clusters) or _call(state.client.get, "/admin/v2/clusters")
    return {"adminRoles": _split_csv(roles), "allowedClusters": allowed}


@tenants_app.command("create")
def tenants_create(ctx: typer.Context, tenant: Name, admin_roles: RolesOpt = None, allowed_clusters: ClustersOpt = None) -> None:
    """Create a tenant."""
    state = _state(ctx)
    _call(state.client.put, f"/admin/v2/tenants/{_q(tenant)}", _tenant_body(state, admin_roles, allowed_clusters))


@tenants_app.command("update")
def tenants_update(ctx: typer.Context, tenant: Name, admin_roles: RolesOpt = None, allowed_clusters: ClustersOpt = None) -> None:
    """Replace a tenant's admin roles and allowed clusters."""
    state = _state(ctx)
    _call(state.client.post, f"/admin/v2/tenants/{_q(tenant)}", _tenant_body(state, admin_roles, allowed_clusters))


@tenants_app.command("delete")
def tenants_delete(ctx: typer.Context, tenant: Name, force: ForceOpt = False) -> None:
    """Delete a tenant (with --force, also its namespaces and topics)."""
    suffix = "?force=true" if force else ""
    _call(_state(ctx).client.delete, f"/admin/v2/tenants/{_q(tenant)}{suffix}")


# -- namespaces ----------------------------------------------------------------------------
@namespaces_app.command("list")
def namespaces_list(ctx: typer.Context, tenant: Name) -> None:
    """List the namespaces of a tenant."""
    show(ctx, _call(_state(ctx).client.get, f"/admin/v2/namespaces/{_q(tenant)}"))


@namespaces_app.command("create")
def namespaces_create(ctx: typer.Context, namespace: NsArg) -> None:
    """Create a namespace."""
    _call(_state(ctx).client.put, f"/admin/v2/namespaces/{_ns_path(namespace)}")


@namespaces_app.command("delete")
def namespaces_delete(ctx: typer.Context, namespace: NsArg, force: ForceOpt = False) -> None:
    """Delete a namespace (with --force, also its topics)."""
    suffix = "?force=true" if force else ""
    _call(_state(ctx).client.delete, f"/admin/v2/namespaces/{_ns_path(namespace)}{suffix}")


@namespaces_app.command("policies")
def namespaces_policies(ctx: typer.Context, namespace: NsArg) -> None:
    """Show every policy of a namespace."""
    show(ctx, _call(_state(ctx).client.get, f"/admin/v2/namespaces/{_ns_path(namespace)}"))


@namespaces_app.command("topics")
def namespaces_topics(
    ctx: typer.Context,
    namespace: NsArg,
    mode: Annotated[str, typer.Option("--mode", help="PERSISTENT, NON_PERSISTENT or ALL")] = "ALL",
) -> None:
    """List the topics of a namespace (partitions individually)."""
    show(ctx, _call(_state(ctx).client.get, f"/admin/v2/namespaces/{_ns_path(namespace)}/topics?mode={_q(mode.upper())}"))


def _ns_getter(path: str, help_text: str) -> Callable[..., None]:
    def get(ctx: typer.Context, namespace: NsArg) -> None:
        show(ctx, _call(_state(ctx).client.get, f"/admin/v2/namespaces/{_ns_path(namespace)}/{path}"))

    get.__doc__ = help_text
    return get


def _ns_remover(path: str, help_text: str) -> Callable[..., None]:
    def remove(ctx: typer.Context, namespace: NsArg) -> None:
        _call(_state(ctx).client.delete, f"/admin/v2/namespaces/{_ns_path(namespace)}/{path}")

    remove.__doc__ = help_text
    return remove


for _name, _path, _what in [
    ("retention", "retention", "the retention policy"),
    ("message-ttl", "messageTTL", "the message TTL (seconds)"),
    ("deduplication", "deduplication", "whether deduplication is enabled"),
    ("max-producers-per-topic", "maxProducersPerTopic", "the maximum producers per topic"),
    ("max-consumers-per-subscription", "maxConsumersPerSubscription", "the maximum consumers per subscription"),
    ("max-unacked-messages-per-consumer", "maxUnackedMessagesPerConsumer", "the maximum unacked messages per consumer"),
    ("subscription-expiration-time", "subscriptionExpirationTime", "the subscription expiration time (minutes)"),
    ("delayed-delivery", "delayedDelivery", "the delayed delivery policy"),
    ("auto-topic-creation", "autoTopicCreation", "the auto topic creation policy"),
]:
    namespaces_app.command(f"get-{_name}")(_ns_getter(_path, f"Show {_what}."))
    namespaces_app.command(f"remove-{_name}")(_ns_remover(_path, f"Remove {_what} (back to the broker default)."))
namespaces_app.command("get-backlog-quotas")(_ns_getter("backlogQuotaMap", "Show the backlog quotas."))
namespaces_app.command("get-schema-compatibility-strategy")(
    _ns_getter("schemaCompatibilityStrategy", "Show the schema compatibility strategy.")
)


def _ns_post(ctx: typer.Context, namespace: str, path: str, body: Any) -> None:
    _call(_state(ctx).client.post, f"/admin/v2/namespaces/{_ns_path(namespace)}/{path}", body)


TimeOpt = Annotated[str, typer.Option("--time", "-t", help="Time: 10m, 3h, 2d, 1w or -1 for no limit")]
SizeOpt = Annotated[str, typer.Option("--size", "-s", help="Size: 100M, 10G or -1 for no limit")]


@namespaces_app.command("set-retention")
def ns_set_retention(ctx: typer.Context, namespace: NsArg, time_: TimeOpt, size: SizeOpt) -> None:
    """Set the retention policy (time in minutes, size in MB; -1 for no limit)."""
    seconds = parse_seconds(time_, "m")
    minutes = -1 if seconds == -1 else seconds // 60
    _ns_post(ctx, namespace, "retention", {"retentionTimeInMinutes": minutes, "retentionSizeInMB": parse_size_mb(size)})


@namespaces_app.command("set-message-ttl")
def ns_set_ttl(
    ctx: typer.Context,
    namespace: NsArg,
    ttl: Annotated[str, typer.Option("--ttl", "-t", help="TTL: seconds, or 10m, 3h, 2d")],
) -> None:
    """Set the message TTL."""
    _ns_post(ctx, namespace, "messageTTL", parse_seconds(ttl))


EnableOpt = Annotated[bool, typer.Option("--enable", "-e", help="Enable")]
DisableOpt = Annotated[bool, typer.Option("--disable", "-d", help="Disable")]


def _enabled(enable: bool, disable: bool) -> bool:
    if enable == disable:
        _fail("give exactly one of --enable or --disable")
    return enable


@namespaces_app.command("set-deduplication")
def ns_set_dedup(ctx: typer.Context, namespace: NsArg, enable: EnableOpt = False, disable: DisableOpt = False) -> None:
    """Enable or disable deduplication."""
    _ns_post(ctx, namespace, "deduplication", _enabled(enable, disable))


@namespaces_app.command("set-max-producers-per-topic")
def ns_set_max_producers(
    ctx: typer.Context,
    namespace: NsArg,
    value: Annotated[int, typer.Option("--max-producers-per-topic", "-p", help="Maximum producers per topic")],
) -> None:
    """Set the maximum producers per topic."""
    _ns_post(ctx, namespace, "maxProducersPerTopic", value)


@namespaces_app.command("set-max-consumers-per-subscription")
def ns_set_max_consumers(
    ctx: typer.Context,
    namespace: NsArg,
    value: Annotated[int, typer.Option("--max-consumers-per-subscription", "-c", help="Maximum consumers per subscription")],
) -> None:
    """Set the maximum consumers per subscription."""
    _ns_post(ctx, namespace, "maxConsumersPerSubscription", value)


@namespaces_app.command("set-max-unacked-messages-per-consumer")
def ns_set_max_unacked(
    ctx: typer.Context,
    namespace: NsArg,
    value: Annotated[int, typer.Option("--max-unacked-messages-per-consumer", "-c", help="Maximum unacked messages")],
) -> None:
    """Set the maximum unacknowledged messages per consumer."""
    _ns_post(ctx, namespace, "maxUnackedMessagesPerConsumer", value)


@namespaces_app.command("set-subscription-expiration-time")
def ns_set_sub_expiry(
    ctx: typer.Context,
    namespace: NsArg,
    value: Annotated[int, typer.Option("--time", "-t", help="Minutes without consumers before a subscription expires")],
) -> None:
    """Set the subscription expiration time (minutes)."""
    _ns_post(ctx, namespace, "subscriptionExpirationTime", value)


@namespaces_app.command("set-delayed-delivery")
def ns_set_delayed(
    ctx: typer.Context,
    namespace: NsArg,
    enable: EnableOpt = False,
    disable: DisableOpt = False,
    tick: Annotated[str, typer.Option("--time", "-t", help="Tick time: 1s, 500 (ms)")] = "1s",
) -> None:
    """Enable or disable delayed delivery."""
    text = tick.strip().lower()
    tick_ms = int(text) if text.isdigit() else parse_seconds(text) * 1000
    _ns_post(ctx, namespace, "delayedDelivery", {"active": _enabled(enable, disable), "tickTime": tick_ms})


@namespaces_app.command("set-auto-topic-creation")
def ns_set_auto_topic(
    ctx: typer.Context,
    namespace: NsArg,
    enable: EnableOpt = False,
    disable: DisableOpt = False,
    topic_type: Annotated[str, typer.Option("--type", "-t", help="partitioned or non-partitioned")] = "non-partitioned",
    partitions: Annotated[int | None, typer.Option("--num-partitions", "-n", help="Partitions of auto-created topics")] = None,
) -> None:
    """Set whether (and how) topics are created on first use."""
    body: dict[str, Any] = {"allowAutoTopicCreation": _enabled(enable, disable)}
    if body["allowAutoTopicCreation"]:
        body["topicType"] = topic_type
        if partitions is not None:
            body["defaultNumPartitions"] = partitions
    _ns_post(ctx, namespace, "autoTopicCreation", body)


@namespaces_app.command("set-schema-compatibility-strategy")
def ns_set_schema_strategy(
    ctx: typer.Context,
    namespace: NsArg,
    strategy: Annotated[str, typer.Option("--compatibility", "-c", help="e.g. FULL, BACKWARD, ALWAYS_COMPATIBLE")],
) -> None:
    """Set the schema compatibility strategy."""
    _call(_state(ctx).client.put, f"/admin/v2/namespaces/{_ns_path(namespace)}/schemaCompatibilityStrategy", strategy.upper())


QuotaTypeOpt = Annotated[str, typer.Option("--type", "-t", help="destination_storage or message_age")]


@namespaces_app.command("set-backlog-quota")
def ns_set_backlog_quota(
    ctx: typer.Context,
    namespace: NsArg,
    limit: Annotated[str, typer.Option("--limit", "-l", help="Size limit: 10M, 1G (-1 for none)")] = "-1",
    limit_time: Annotated[str, typer.Option("--limitTime", "-lt", help="Age limit: 60, 10m, 1h (-1 for none)")] = "-1",
    policy: Annotated[
        str, typer.Option("--policy", "-p", help="producer_request_hold, producer_exception or consumer_backlog_eviction")
    ] = "producer_request_hold",
    quota_type: QuotaTypeOpt = "destination_storage",
) -> None:
    """Set a backlog quota."""
    body = {"limitSize": parse_bytes(limit), "limitTime": parse_seconds(limit_time), "policy": policy}
    _ns_post(ctx, namespace, f"backlogQuota?backlogQuotaType={_q(quota_type)}", body)


@namespaces_app.command("remove-backlog-quota")
def ns_remove_backlog_quota(ctx: typer.Context, namespace: NsArg, quota_type: QuotaTypeOpt = "destination_storage") -> None:
    """Remove a backlog quota."""
    _call(
        _state(ctx).client.delete,
        f"/admin/v2/namespaces/{_ns_path(namespace)}/backlogQuota?backlogQuotaType={_q(quota_type)}",
    )


# -- topics --------------------------------------------------------------------------------
@topics_app.command("list")
def topics_list(ctx: typer.Context, namespace: NsArg) -> None:
    """List the persistent topics of a namespace (partitions individually)."""
    show(ctx, _call(_state(ctx).client.get, f"/admin/v2/persistent/{_ns_path(namespace)}"))


@topics_app.command("list-partitioned-topics")
def topics_list_partitioned(ctx: typer.Context, namespace: NsArg) -> None:
    """List the partitioned topics of a namespace."""
    show(ctx, _call(_state(ctx).client.get, f"/admin/v2/persistent/{_ns_path(namespace)}/partitioned"))


@topics_app.command("create")
def topics_create(ctx: typer.Context, topic: TopicArg) -> None:
    """Create a non-partitioned topic."""
    path, _ = _topic_path(topic)
    _call(_state(ctx).client.put, path)


PartitionsOpt = Annotated[int, typer.Option("--partitions", "-p", help="Number of partitions")]


@topics_app.command("create-partitioned-topic")
def topics_create_partitioned(ctx: typer.Context, topic: TopicArg, partitions: PartitionsOpt) -> None:
    """Create a partitioned topic."""
    path, _ = _topic_path(topic)
    _call(_state(ctx).client.put, path + "/partitions", partitions)


@topics_app.command("update-partitioned-topic")
def topics_update_partitioned(ctx: typer.Context, topic: TopicArg, partitions: PartitionsOpt) -> None:
    """Increase the partitions of a partitioned topic."""
    path, _ = _topic_path(topic)
    _call(_state(ctx).client.post, path + "/partitions", partitions)


@topics_app.command("get-partitioned-topic-metadata")
def topics_partitioned_metadata(ctx: typer.Context, topic: TopicArg) -> None:
    """Show the number of partitions (0 for a non-partitioned topic)."""
    path, _ = _topic_path(topic)
    show(ctx, _call(_state(ctx).client.get, path + "/partitions"))


@topics_app.command("delete")
def topics_delete(ctx: typer.Context, topic: TopicArg, force: ForceOpt = False) -> None:
    """Delete a topic (--force: disconnect its producers and consumers first)."""
    path, _ = _topic_path(topic)
    _call(_state(ctx).client.delete, path + ("?force=true" if force else ""))


@topics_app.command("delete-partitioned-topic")
def topics_delete_partitioned(ctx: typer.Context, topic: TopicArg, force: ForceOpt = False) -> None:
    """Delete a partitioned topic and its partitions."""
    path, _ = _topic_path(topic)
    _call(_state(ctx).client.delete, path + "/partitions" + ("?force=true" if force else ""))


def _show_stats(ctx: typer.Context, stats: dict[str, Any]) -> None:
    state = _state(ctx)
    if state.json:
        show(ctx, stats)
        return
    summary = Table(title="topic")
    summary.add_column("metric", style="bold")
    summary.add_column("value", justify="right")
    for key in (
        "msgRateIn", "msgThroughputIn", "msgRateOut", "msgThroughputOut", "msgInCounter", "bytesInCounter",
        "msgOutCounter", "bytesOutCounter", "storageSize", "backlogSize",
    ):
        summary.add_row(key, _cell(stats.get(key)))
    state.console.print(summary)
    if stats.get("publishers"):
        pubs = Table(title="publishers")
        for col in ("producerName", "msgRateIn", "msgThroughputIn", "address"):
            pubs.add_column(col)
        for p in stats["publishers"]:
            pubs.add_row(*(_cell(p.get(c)) for c in ("producerName", "msgRateIn", "msgThroughputIn", "address")))
        state.console.print(pubs)
    if stats.get("subscriptions"):
        subs = Table(title="subscriptions")
        cols = ("type", "msgBacklog", "msgRateOut", "unackedMessages", "consumers")
        subs.add_column("name", style="bold")
        for col in cols:
            subs.add_column(col)
        for name, s in stats["subscriptions"].items():
            subs.add_row(name, *(_cell(len(s["consumers"]) if c == "consumers" else s.get(c)) for c in cols))
        state.console.print(subs)


@topics_app.command("stats")
def topics_stats(ctx: typer.Context, topic: TopicArg) -> None:
    """Show a topic's statistics."""
    path, _ = _topic_path(topic)
    _show_stats(ctx, _call(_state(ctx).client.get, path + "/stats"))


@topics_app.command("partitioned-stats")
def topics_partitioned_stats(
    ctx: typer.Context,
    topic: TopicArg,
    per_partition: Annotated[bool, typer.Option("--per-partition", help="Include each partition's statistics")] = False,
) -> None:
    """Show a partitioned topic's statistics, summed over its partitions."""
    path, _ = _topic_path(topic)
    stats = _call(_state(ctx).client.get, path + f"/partitioned-stats?perPartition={'true' if per_partition else 'false'}")
    _show_stats(ctx, stats)
    if per_partition and not _state(ctx).json:
        for name, part in stats.get("partitions", {}).items():
            _state(ctx).console.print(f"[bold]{name}[/bold]")
            _show_stats(ctx, part)


@topics_app.command("stats-internal")
def topics_stats_internal(ctx: typer.Context, topic: TopicArg) -> None:
    """Show storage-level statistics: ledger and cursors."""
    path, _ = _topic_path(topic)
    show(ctx, _call(_state(ctx).client.get, path + "/internalStats"))


@topics_app.command("last-message-id")
def topics_last_message_id(ctx: typer.Context, topic: TopicArg) -> None:
    """Show the id of the last message."""
    path, _ = _topic_path(topic)
    show(ctx, _call(_state(ctx).client.get, path + "/lastMessageId"))


@topics_app.command("lookup")
def topics_lookup(ctx: typer.Context, topic: TopicArg) -> None:
    """Show which broker serves a topic."""
    _, tn = _topic_path(topic)
    path = f"/lookup/v2/topic/{tn.domain}/{_q(tn.tenant)}/{_q(tn.namespace_part)}/{_q(tn.local_name)}"
    show(ctx, _call(_state(ctx).client.get, path))


@topics_app.command("subscriptions")
def topics_subscriptions(ctx: typer.Context, topic: TopicArg) -> None:
    """List a topic's subscriptions."""
    path, _ = _topic_path(topic)
    show(ctx, _call(_state(ctx).client.get, path + "/subscriptions"))


def _sub_path(topic: str, sub: str) -> str:
    path, _ = _topic_path(topic)
    return f"{path}/subscription/{_q(sub)}"


@topics_app.command("create-subscription")
def topics_create_subscription(
    ctx: typer.Context,
    topic: TopicArg,
    subscription: SubOpt,
    message_id: Annotated[str, typer.Option("--messageId", "-m", help="latest, earliest or ledgerId:entryId")] = "latest",
) -> None:
    """Create a subscription at a message id."""
    _call(_state(ctx).client.put, _sub_path(topic, subscription), _message_id(message_id))


@topics_app.command("unsubscribe")
def topics_unsubscribe(ctx: typer.Context, topic: TopicArg, subscription: SubOpt, force: ForceOpt = False) -> None:
    """Delete a subscription (--force: disconnect its consumers first)."""
    _call(_state(ctx).client.delete, _sub_path(topic, subscription) + ("?force=true" if force else ""))


@topics_app.command("skip")
def topics_skip(
    ctx: typer.Context,
    topic: TopicArg,
    subscription: SubOpt,
    count: Annotated[int, typer.Option("--count", "-n", help="Messages to skip")],
) -> None:
    """Skip the next messages of a subscription."""
    _call(_state(ctx).client.post, _sub_path(topic, subscription) + f"/skip/{count}")


@topics_app.command("clear-backlog")
def topics_clear_backlog(ctx: typer.Context, topic: TopicArg, subscription: SubOpt) -> None:
    """Skip every message of a subscription's backlog."""
    _call(_state(ctx).client.post, _sub_path(topic, subscription) + "/skip_all")


ExpireOpt = Annotated[str, typer.Option("--expireTime", "-t", help="Age: seconds, or 10m, 3h")]


@topics_app.command("expire-messages")
def topics_expire(ctx: typer.Context, topic: TopicArg, subscription: SubOpt, expire_time: ExpireOpt) -> None:
    """Acknowledge the messages of a subscription older than the given age."""
    _call(_state(ctx).client.post, _sub_path(topic, subscription) + f"/expireMessages/{parse_seconds(expire_time)}")


@topics_app.command("expire-messages-all-subscriptions")
def topics_expire_all(ctx: typer.Context, topic: TopicArg, expire_time: ExpireOpt) -> None:
    """Acknowledge the messages older than the given age on every subscription."""
    path, _ = _topic_path(topic)
    _call(_state(ctx).client.post, path + f"/all_subscription/expireMessages/{parse_seconds(expire_time)}")


@topics_app.command("reset-cursor")
def topics_reset_cursor(
    ctx: typer.Context,
    topic: TopicArg,
    subscription: SubOpt,
    time_: Annotated[str | None, typer.Option("--time", "-t", help="Go back this long: 10m, 3h, 2d")] = None,
    message_id: Annotated[str | None, typer.Option("--messageId", "-m", help="ledgerId:entryId, earliest, latest")] = None,
) -> None:
    """Move a subscription back (or forward) to a time or a message id."""
    if (time_ is None) == (message_id is None):
        _fail("give exactly one of --time or --messageId")
    if time_ is not None:
        timestamp = int(time.time() * 1000) - parse_seconds(time_, "m") * 1000
        _call(_state(ctx).client.post, _sub_path(topic, subscription) + f"/resetcursor/{timestamp}")
    else:
        _call(_state(ctx).client.post, _sub_path(topic, subscription) + "/resetcursor", _message_id(message_id or ""))


def _messages_of(reply: RawReply) -> list[dict[str, Any]]:
    """Split a peeked entry into its messages (a batch holds several)."""
    from magnetar.protocol.batch import decode_batch
    from magnetar.protocol.framing import ProtocolError

    headers = {k.lower(): v for k, v in reply.headers.items()}
    msg_id = headers.get("x-pulsar-message-id", "")
    props = {k[len("x-pulsar-property-"):]: v for k, v in reply.headers.items() if k.lower().startswith("x-pulsar-property-")}
    base = {"publishTime": headers.get("x-pulsar-publish-time"), "producerName": headers.get("x-pulsar-producer-name")}
    count = headers.get("x-pulsar-num-batch-message")
    if count is not None and headers.get("x-pulsar-is-encrypted") != "true":
        try:
            parts = decode_batch(reply.body, int(count))
        except (ProtocolError, ValueError):
            parts = None
        if parts is not None:
            return [
                {"messageId": f"{msg_id}:{i}", **base,
                 "properties": {kv.key: kv.value for kv in meta.properties},
                 "key": meta.partition_key if meta.HasField("partition_key") else None,
                 "payload": payload}
                for i, (meta, payload) in enumerate(parts)
            ]
    return [{"messageId": msg_id, **base, "properties": props, "key": headers.get("x-pulsar-partition-key"),
             "payload": reply.body}]


def _print_messages(ctx: typer.Context, messages: list[dict[str, Any]]) -> None:
    state = _state(ctx)
    if state.json:
        out = []
        for m in messages:
            payload: bytes = m["payload"]
            try:
                text, encoding = payload.decode("utf-8"), "utf-8"
            except UnicodeDecodeError:
                text, encoding = base64.b64encode(payload).decode(), "base64"
            out.append({**{k: v for k, v in m.items() if k != "payload"}, "payload": text, "encoding": encoding})
        typer.echo(json.dumps(out, indent=2))
        return
    for m in messages:
        table = Table(show_header=False, title=f"Message ID: {m['messageId']}")
        table.add_column("field", style="bold")
        table.add_column("value", overflow="fold")
        table.add_row("publish time", m.get("publishTime") or "")
        if m.get("key"):
            table.add_row("key", m["key"])
        for k, v in (m.get("properties") or {}).items():
            table.add_row(f"property {k}", v)
        payload = m["payload"]
        try:
            shown = payload.decode("utf-8")
        except UnicodeDecodeError:
            shown = payload.hex(" ")
        table.add_row("payload", shown)
        state.console.print(table)


@topics_app.command("peek-messages")
def topics_peek(
    ctx: typer.Context,
    topic: TopicArg,
    subscription: SubOpt,
    count: Annotated[int, typer.Option("--count", "-n", help="Messages to show")] = 1,
) -> None:
    """Show the next messages of a subscription without acknowledging them."""
    client = _state(ctx).client
    messages: list[dict[str, Any]] = []
    position = 1
    while len(messages) < count:
        try:
            reply = client.get(_sub_path(topic, subscription) + f"/position/{position}", raw=True)
        except AdminCliError as exc:
            if messages and exc.message.startswith("404"):
                break
            _fail(exc.message)
        messages.extend(_messages_of(reply))
        position += 1
    _print_messages(ctx, messages[:count])


@topics_app.command("examine-message")
def topics_examine(
    ctx: typer.Context,
    topic: TopicArg,
    initial_position: Annotated[str, typer.Option("--initialPosition", "-i", help="earliest or latest")] = "latest",
    position: Annotated[int, typer.Option("--messagePosition", "-m", help="1 is the first (or last) message")] = 1,
) -> None:
    """Show the n-th message from the earliest or the latest one."""
    path, _ = _topic_path(topic)
    query = f"?initialPosition={_q(initial_position)}&messagePosition={position}"
    reply = _call(_state(ctx).client.get, path + "/examinemessage" + query, raw=True)
    _print_messages(ctx, _messages_of(reply))


@topics_app.command("terminate")
def topics_terminate(ctx: typer.Context, topic: TopicArg) -> None:
    """Terminate a topic (not supported by the broker yet)."""
    path, _ = _topic_path(topic)
    show(ctx, _call(_state(ctx).client.post, path + "/terminate"))


@topics_app.command("compact")
def topics_compact(ctx: typer.Context, topic: TopicArg) -> None:
    """Request compaction of a topic."""
    path, _ = _topic_path(topic)
    _call(_state(ctx).client.put, path + "/compaction")


@topics_app.command("compaction-status")
def topics_compaction_status(ctx: typer.Context, topic: TopicArg) -> None:
    """Show the compaction status of a topic."""
    path, _ = _topic_path(topic)
    show(ctx, _call(_state(ctx).client.get, path + "/compaction"))


# -- topic policies ------------------------------------------------------------------------
AppliedOpt = Annotated[bool, typer.Option("--applied", "-a", help="The effective value (namespace or broker default)")]


def _topic_getter(path: str, help_text: str) -> Callable[..., None]:
    def get(ctx: typer.Context, topic: TopicArg, applied: AppliedOpt = False) -> None:
        base, _ = _topic_path(topic)
        show(ctx, _call(_state(ctx).client.get, f"{base}/{path}" + ("?applied=true" if applied else "")))

    get.__doc__ = help_text
    return get


def _topic_remover(path: str, help_text: str) -> Callable[..., None]:
    def remove(ctx: typer.Context, topic: TopicArg) -> None:
        base, _ = _topic_path(topic)
        _call(_state(ctx).client.delete, f"{base}/{path}")

    remove.__doc__ = help_text
    return remove


for _name, _path, _what in [
    ("retention", "retention", "the topic's retention policy"),
    ("message-ttl", "messageTTL", "the topic's message TTL (seconds)"),
    ("deduplication", "deduplicationEnabled", "whether deduplication is enabled on the topic"),
    ("max-producers", "maxProducers", "the topic's maximum producers"),
]:
    topics_app.command(f"get-{_name}")(_topic_getter(_path, f"Show {_what}."))
    topics_app.command(f"remove-{_name}")(_topic_remover(_path, f"Remove {_what}."))


@topics_app.command("set-retention")
def topic_set_retention(ctx: typer.Context, topic: TopicArg, time_: TimeOpt, size: SizeOpt) -> None:
    """Set the topic's retention policy."""
    base, _ = _topic_path(topic)
    seconds = parse_seconds(time_, "m")
    body = {"retentionTimeInMinutes": -1 if seconds == -1 else seconds // 60, "retentionSizeInMB": parse_size_mb(size)}
    _call(_state(ctx).client.post, base + "/retention", body)


@topics_app.command("set-message-ttl")
def topic_set_ttl(
    ctx: typer.Context, topic: TopicArg, ttl: Annotated[str, typer.Option("--ttl", "-t", help="TTL: seconds, or 10m, 3h")]
) -> None:
    """Set the topic's message TTL."""
    base, _ = _topic_path(topic)
    _call(_state(ctx).client.post, base + f"/messageTTL?messageTTL={parse_seconds(ttl)}")


@topics_app.command("set-deduplication")
def topic_set_dedup(ctx: typer.Context, topic: TopicArg, enable: EnableOpt = False, disable: DisableOpt = False) -> None:
    """Enable or disable deduplication on the topic."""
    base, _ = _topic_path(topic)
    _call(_state(ctx).client.post, base + "/deduplicationEnabled", _enabled(enable, disable))


@topics_app.command("set-max-producers")
def topic_set_max_producers(
    ctx: typer.Context, topic: TopicArg, value: Annotated[int, typer.Option("--max-producers", "-p", help="Maximum producers")]
) -> None:
    """Set the topic's maximum producers."""
    base, _ = _topic_path(topic)
    _call(_state(ctx).client.post, base + "/maxProducers", value)

