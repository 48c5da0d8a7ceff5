"""How ``magnetar admin namespaces|topics set-<rate>`` and ``set-inactive-topic-policies`` read their
flags: pulsar-admin's flags (``-m/-b``, ``-md/-bd/-dt/-rp``, ``-sr/-st``, ``-e/-d -t -m``) into
Pulsar's PublishRate, DispatchRate, SubscribeRate and InactiveTopicPolicies objects.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any

import typer

from magnetar.broker.policies.registry import Scope
from magnetar.cli.admin.context import fail
from magnetar.cli.admin.parsing import parse_seconds

_P = inspect.Parameter
Reader = tuple[list[inspect.Parameter], Callable[..., Any]]


def _param(name: str, kind: Any, default: Any, *flags: str, help_text: str) -> inspect.Parameter:
    return _P(name, _P.KEYWORD_ONLY, annotation=Annotated[kind, typer.Option(*flags, help=help_text)], default=default)


def _publish_rate(scope: Scope) -> Reader:
    params = [
        _param("msgs", int, -1, "--msg-publish-rate", "-m", help_text="Messages per second (-1: no limit)"),
        _param("size", int, -1, "--byte-publish-rate", "-b", help_text="Bytes per second (-1: no limit)"),
    ]

    def read(msgs: int, size: int) -> dict[str, int]:
        return {"publishThrottlingRateInMsg": msgs, "publishThrottlingRateInByte": size}

    return params, read


def _dispatch_rate(scope: Scope) -> Reader:
    params = [
        _param("msgs", int, -1, "--msg-dispatch-rate", "-md", help_text="Messages per period (-1: no limit)"),
        _param("size", int, -1, "--byte-dispatch-rate", "-bd", help_text="Bytes per period (-1: no limit)"),
        _param("period", int, 1, "--dispatch-rate-period", "-dt", help_text="The period in seconds"),
        _param("relative", bool, False, "--relative-to-publish-rate", "-rp", help_text="Relative to the publish rate"),
    ]

    def read(msgs: int, size: int, period: int, relative: bool) -> dict[str, Any]:
        return {
            "dispatchThrottlingRateInMsg": msgs,
            "dispatchThrottlingRateInByte": size,
            "ratePeriodInSecond": period,
            "relativeToPublishRate": relative,
        }

    return params, read


def _subscribe_rate(scope: Scope) -> Reader:
    params = [
        _param("rate", int, -1, "--subscribe-rate", "-sr", help_text="Subscribes per consumer per period (-1: no limit)"),
        _param("period", int, 30, "--subscribe-rate-period", "-st", help_text="The period in seconds"),
    ]

    def read(rate: int, period: int) -> dict[str, int]:
        return {"subscribeThrottlingRatePerConsumer": rate, "ratePeriodInSecond": period}

    return params, read


def _inactive_topic_policies(scope: Scope) -> Reader:
    params = [
        _param("enable", bool, False, "--enable-delete-while-inactive", "-e", help_text="Delete the topic while inactive"),
        _param("disable", bool, False, "--disable-delete-while-inactive", "-d", help_text="Keep the topic while inactive"),
        _param("duration", str, "", "--max-inactive-duration", "-t", help_text="Inactive this long: 60s, 10m, 1h"),
        _param(
            "mode", str, "", "--delete-mode", "-m",
            help_text="delete_when_no_subscriptions or delete_when_subscriptions_caught_up",
        ),
    ]

    def read(enable: bool, disable: bool, duration: str, mode: str) -> dict[str, Any]:
        if enable == disable:
            fail("give exactly one of --enable-delete-while-inactive or --disable-delete-while-inactive")
        if not duration:
            fail("--max-inactive-duration is required")
        if mode not in ("delete_when_no_subscriptions", "delete_when_subscriptions_caught_up"):
            fail("--delete-mode must be delete_when_no_subscriptions or delete_when_subscriptions_caught_up")
        return {
            "inactiveTopicDeleteMode": mode,
            "maxInactiveDurationSeconds": parse_seconds(duration),
            "deleteWhileInactive": enable,
        }

    return params, read


#: the set commands' readers of the rate and inactive-topic shapes (merged into policies.SETTERS)
RATE_SETTERS: dict[str, Callable[[Scope], Reader]] = {
    "publish_rate": _publish_rate,
    "dispatch_rate": _dispatch_rate,
    "subscribe_rate": _subscribe_rate,
    "inactive_topic_policies": _inactive_topic_policies,
}
