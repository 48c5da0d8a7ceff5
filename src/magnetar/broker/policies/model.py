"""The shape of a policy entry: :class:`Policy` and how it appears on each :class:`Scope`
(namespace, topic). The entries themselves are in :mod:`.registry` and :mod:`.stored`."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from magnetar.broker.config import BrokerConfig

NAMESPACE = "namespace"
TOPIC = "topic"


@dataclass(frozen=True)
class Scope:
    """How a policy appears on one scope: its REST path segment and its CLI commands."""

    #: path segment after /namespaces/{tenant}/{namespace}/ or after the topic
    path: str
    #: CLI command stem (``get-<cli>``, ``set-<cli>``, ``remove-<cli>``); None: no CLI commands
    cli: str | None = None
    #: what the policy is, for the CLI's help ("the message TTL (seconds)")
    help: str = ""
    #: the CLI set command's help
    set_help: str = ""
    #: the CLI option that takes the value: (long flag, short flag, help)
    option: tuple[str, str, str] | None = None
    #: the CLI sends the value as this query parameter instead of the body
    query: str | None = None
    #: GET / POST / DELETE routes are generated from this entry (False: hand-written routes)
    generic_routes: bool = True
    #: which CLI commands are generated: any of "get", "set", "remove"
    commands: tuple[str, ...] = ("get", "set", "remove")
    #: the HTTP methods of the generic set route (Pulsar sets some policies with PUT)
    set_methods: tuple[str, ...] = ("POST",)
    #: the path of the generic DELETE route when it differs from ``path``; "" for no DELETE route
    remove_path: str | None = None
    #: a set call whose body is empty or null removes the policy (pulsar-admin's remove verb does that)
    null_removes: bool = False


@dataclass(frozen=True)
class Policy:
    """One policy: Pulsar field name, value shape, validator, default and the scopes it is set on."""

    #: the field of Pulsar's Policies object (storage key and JSON field)
    name: str
    #: value shape: int, bool, seconds, str, retention, backlog_quotas, delayed_delivery, auto_topic_creation,
    #: clusters, publish_rate, dispatch_rate, subscribe_rate, inactive_topic_policies
    shape: str
    #: (value, the other policies of the same scope) -> the value normalized; raises a broker error
    validate: Callable[[Any, Mapping[str, Any]], Any]
    #: the value in force when neither the topic nor its namespace sets it
    default: Callable[[BrokerConfig], Any]
    namespace: Scope | None = None
    topic: Scope | None = None
    #: what a namespace GET returns while the policy is not set (Pulsar's Policies field default;
    #: None: null)
    unset: Callable[[BrokerConfig], Any] | None = None

    def scope(self, scope: str) -> Scope | None:
        """This policy on ``scope`` (NAMESPACE or TOPIC), None when it cannot be set there."""
        return self.namespace if scope == NAMESPACE else self.topic
