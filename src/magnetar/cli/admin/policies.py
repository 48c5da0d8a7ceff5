"""``magnetar admin namespaces|topics get-/set-/remove-<policy>``: generated from the broker's policy
registry (:mod:`magnetar.broker.policies.registry`), plus the backlog quota commands.

A registry entry's scope names the CLI stem, the help and the option that takes the value; the
entry's value shape picks how the set command reads its flags (:data:`SETTERS`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer

from magnetar.broker.policies.registry import NAMESPACE, POLICIES, TOPIC, Policy, Scope
from magnetar.cli.admin.context import NsArg, TopicArg, call, fail, namespaces_app, show, state, topics_app
from magnetar.cli.admin.parsing import ns_path, parse_bytes, parse_seconds, parse_size_mb, q, topic_path
from magnetar.cli.admin.rate_policies import RATE_SETTERS

TimeOpt = Annotated[str, typer.Option("--time", "-t", help="Time: 10m, 3h, 2d, 1w or -1 for no limit")]
SizeOpt = Annotated[str, typer.Option("--size", "-s", help="Size: 100M, 10G or -1 for no limit")]
EnableOpt = Annotated[bool, typer.Option("--enable", "-e", help="Enable")]
DisableOpt = Annotated[bool, typer.Option("--disable", "-d", help="Disable")]
AppliedOpt = Annotated[bool, typer.Option("--applied", "-a", help="The effective value (namespace or broker default)")]
QuotaTypeOpt = Annotated[str, typer.Option("--type", "-t", help="destination_storage or message_age")]

_P = inspect.Parameter


def _enabled(enable: bool, disable: bool) -> bool:
    if enable == disable:
        fail("give exactly one of --enable or --disable")
    return enable


def _base(scope: str, target: str) -> str:
    """The REST path of a namespace or topic, under which its policies live."""
    if scope == NAMESPACE:
        return f"/admin/v2/namespaces/{ns_path(target)}"
    return topic_path(target)[0]


def _option(scope: Scope, kind: type) -> list[inspect.Parameter]:
    assert scope.option is not None, "a policy read from one option names it in its scope"
    long, short, help_text = scope.option
    return [_P("value", _P.KEYWORD_ONLY, annotation=Annotated[kind, typer.Option(long, short, help=help_text)])]


# -- value readers: (the set command's option parameters, kwargs -> value) -----------------------
def _retention(scope: Scope) -> tuple[list[inspect.Parameter], Callable[..., Any]]:
    def read(time_: str, size: str) -> dict[str, int]:
        seconds = parse_seconds(time_, "m")
        return {"retentionTimeInMinutes": -1 if seconds == -1 else seconds // 60, "retentionSizeInMB": parse_size_mb(size)}

    return [_P("time_", _P.KEYWORD_ONLY, annotation=TimeOpt), _P("size", _P.KEYWORD_ONLY, annotation=SizeOpt)], read


def _switch_params() -> list[inspect.Parameter]:
    return [
        _P("enable", _P.KEYWORD_ONLY, annotation=EnableOpt, default=False),
        _P("disable", _P.KEYWORD_ONLY, annotation=DisableOpt, default=False),
    ]


def _bool(scope: Scope) -> tuple[list[inspect.Parameter], Callable[..., Any]]:
    return _switch_params(), _enabled


def _seconds(scope: Scope) -> tuple[list[inspect.Parameter], Callable[..., Any]]:
    return _option(scope, str), lambda value: parse_seconds(value)


def _int(scope: Scope) -> tuple[list[inspect.Parameter], Callable[..., Any]]:
    return _option(scope, int), lambda value: value


def _strategy(scope: Scope) -> tuple[list[inspect.Parameter], Callable[..., Any]]:
    return _option(scope, str), lambda value: value.upper()


def _delayed_delivery(scope: Scope) -> tuple[list[inspect.Parameter], Callable[..., Any]]:
    tick = Annotated[str, typer.Option("--time", "-t", help="Tick time: 1s, 500 (ms)")]

    def read(enable: bool, disable: bool, tick: str) -> dict[str, Any]:
        text = tick.strip().lower()
        tick_ms = int(text) if text.isdigit() else parse_seconds(text) * 1000
        return {"active": _enabled(enable, disable), "tickTime": tick_ms}

    return [*_switch_params(), _P("tick", _P.KEYWORD_ONLY, annotation=tick, default="1s")], read


def _auto_topic_creation(scope: Scope) -> tuple[list[inspect.Parameter], Callable[..., Any]]:
    kind = Annotated[str, typer.Option("--type", "-t", help="partitioned or non-partitioned")]
    count = Annotated[int | None, typer.Option("--num-partitions", "-n", help="Partitions of auto-created topics")]

    def read(enable: bool, disable: bool, topic_type: str, partitions: int | None) -> dict[str, Any]:
        body: dict[str, Any] = {"allowAutoTopicCreation": _enabled(enable, disable)}
        if body["allowAutoTopicCreation"]:
            body["topicType"] = topic_type
            if partitions is not None:
                body["defaultNumPartitions"] = partitions
        return body

    params = [
        *_switch_params(),
        _P("topic_type", _P.KEYWORD_ONLY, annotation=kind, default="non-partitioned"),
        _P("partitions", _P.KEYWORD_ONLY, annotation=count, default=None),
    ]
    return params, read


def _clusters(scope: Scope) -> tuple[list[inspect.Parameter], Callable[..., Any]]:
    def read(value: str) -> list[str]:
        clusters = [c.strip() for c in value.split(",") if c.strip()]
        if not clusters:
            fail("--clusters needs at least one cluster name")
        return clusters

    return _option(scope, str), read


#: how the set command of each value shape reads its value
SETTERS: dict[str, Callable[[Scope], tuple[list[inspect.Parameter], Callable[..., Any]]]] = {
    "retention": _retention,
    "bool": _bool,
    "seconds": _seconds,
    "int": _int,
    "str": _strategy,
    "delayed_delivery": _delayed_delivery,
    "auto_topic_creation": _auto_topic_creation,
    "clusters": _clusters,
    **RATE_SETTERS,
}


def _target_param(scope: str) -> inspect.Parameter:
    if scope == NAMESPACE:
        return _P("namespace", _P.POSITIONAL_OR_KEYWORD, annotation=NsArg)
    return _P("topic", _P.POSITIONAL_OR_KEYWORD, annotation=TopicArg)


def _setter(scope: str, policy: Policy, where: Scope) -> Callable[..., None]:
    params, read = SETTERS[policy.shape](where)
    target_name = "namespace" if scope == NAMESPACE else "topic"
    method = "put" if policy.shape == "str" else "post"

    def set_policy(**kwargs: Any) -> None:
        ctx = kwargs.pop("ctx")
        base = _base(scope, kwargs.pop(target_name))
        value = read(**kwargs)
        client = state(ctx).client
        if where.query:
            call(client.post, f"{base}/{where.path}?{where.query}={value}")
        else:
            call(getattr(client, method), f"{base}/{where.path}", value)

    ctx_param = _P("ctx", _P.POSITIONAL_OR_KEYWORD, annotation=typer.Context)
    signature = inspect.Signature([ctx_param, _target_param(scope), *params], return_annotation=None)
    set_policy.__signature__ = signature  # type: ignore[attr-defined]
    set_policy.__annotations__ = {p.name: p.annotation for p in signature.parameters.values()}
    set_policy.__doc__ = where.set_help
    return set_policy


def _getter(scope: str, where: Scope, help_text: str) -> Callable[..., None]:
    if scope == NAMESPACE:

        def get(ctx: typer.Context, namespace: NsArg) -> None:
            show(ctx, call(state(ctx).client.get, f"{_base(scope, namespace)}/{where.path}"))

    else:

        def get(ctx: typer.Context, topic: TopicArg, applied: AppliedOpt = False) -> None:  # type: ignore[misc]
            url = f"{_base(scope, topic)}/{where.path}" + ("?applied=true" if applied else "")
            show(ctx, call(state(ctx).client.get, url))

    get.__doc__ = help_text
    return get


def _remover(scope: str, where: Scope, help_text: str) -> Callable[..., None]:
    if scope == NAMESPACE:

        def remove(ctx: typer.Context, namespace: NsArg) -> None:
            call(state(ctx).client.delete, f"{_base(scope, namespace)}/{where.path}")

    else:

        def remove(ctx: typer.Context, topic: TopicArg) -> None:  # type: ignore[misc]
            call(state(ctx).client.delete, f"{_base(scope, topic)}/{where.path}")

    remove.__doc__ = help_text
    return remove


def register(app: typer.Typer, scope: str) -> None:
    """Add the get-, remove- and set- commands of every policy of ``scope`` to ``app``."""
    entries = [(p, p.scope(scope)) for p in POLICIES if p.scope(scope) is not None and p.scope(scope).cli]  # type: ignore[union-attr]
    # pulsar-admin's order: get/remove pairs, then read-only getters, then the setters
    remove_help = " (back to the broker default)." if scope == NAMESPACE else "."
    for _, where in entries:
        if "get" in where.commands and "remove" in where.commands:
            app.command(f"get-{where.cli}")(_getter(scope, where, f"Show {where.help}."))
            app.command(f"remove-{where.cli}")(_remover(scope, where, f"Remove {where.help}{remove_help}"))
    for _, where in entries:
        if "get" in where.commands and "remove" not in where.commands:
            app.command(f"get-{where.cli}")(_getter(scope, where, f"Show {where.help}."))
    for policy, where in entries:
        if "set" in where.commands:
            app.command(f"set-{where.cli}")(_setter(scope, policy, where))


register(namespaces_app, NAMESPACE)


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
    call(state(ctx).client.post, f"{_base(NAMESPACE, namespace)}/backlogQuota?backlogQuotaType={q(quota_type)}", body)


@namespaces_app.command("remove-backlog-quota")
def ns_remove_backlog_quota(ctx: typer.Context, namespace: NsArg, quota_type: QuotaTypeOpt = "destination_storage") -> None:
    """Remove a backlog quota."""
    call(state(ctx).client.delete, f"{_base(NAMESPACE, namespace)}/backlogQuota?backlogQuotaType={q(quota_type)}")


register(topics_app, TOPIC)
