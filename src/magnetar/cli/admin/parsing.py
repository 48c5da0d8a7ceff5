"""Parsing of ``magnetar admin`` arguments: names to REST paths, durations, sizes, message ids."""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from magnetar.cli.admin.context import fail


def q(part: str) -> str:
    """A path segment, URL-quoted."""
    return urllib.parse.quote(part, safe="")


def topic_path(topic: str) -> tuple[str, Any]:
    """A topic's REST path (/admin/v2/<domain>/<tenant>/<ns>/<topic>) and its parsed name."""
    # the topic commands' only use of the protocol package, which tenants or clusters commands never
    # load: 2-3 ms CPU (python -X importtime)
    from magnetar.protocol.topic_name import InvalidTopicNameError, TopicName

    try:
        tn = TopicName.parse(topic)
    except InvalidTopicNameError as exc:
        fail(str(exc))
    return f"/admin/v2/{tn.domain}/{q(tn.tenant)}/{q(tn.namespace_part)}/{q(tn.local_name)}", tn


def ns_path(namespace: str) -> str:
    """``tenant/namespace`` URL-quoted, after checking its shape."""
    parts = namespace.split("/")
    if len(parts) != 2 or not all(parts):
        fail(f"invalid namespace {namespace!r}: expected tenant/namespace")
    return f"{q(parts[0])}/{q(parts[1])}"


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
_SIZES = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}


def parse_seconds(text: str, default_unit: str = "s") -> int:
    """A duration like 90, 90s, 10m, 3h, 2d, 1w (-1 stays -1) in seconds."""
    value = text.strip().lower()
    if value == "-1":
        return -1
    m = re.fullmatch(r"(\d+)([smhdw]?)", value)
    if not m:
        fail(f"invalid duration {text!r}: expected a number with an optional unit s, m, h, d or w")
    return int(m.group(1)) * _UNITS[m.group(2) or default_unit]


def parse_size_mb(text: str) -> int:
    """A size like 100M, 10G, 512K (-1 stays -1) in megabytes."""
    value = text.strip().lower()
    if value == "-1":
        return -1
    m = re.fullmatch(r"(\d+)([kmgt]?)b?", value)
    if not m:
        fail(f"invalid size {text!r}: expected a number with an optional unit K, M, G or T")
    return int(int(m.group(1)) * _SIZES[m.group(2) or "m"])


def parse_bytes(text: str) -> int:
    """A size like 10M, 1G, 4096 in bytes (-1 stays -1)."""
    value = text.strip().lower()
    if value == "-1":
        return -1
    m = re.fullmatch(r"(\d+)([kmgt]?)b?", value)
    if not m:
        fail(f"invalid size {text!r}: expected a number with an optional unit K, M, G or T")
    factor = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3, "t": 1024**4}[m.group(2)]
    return int(m.group(1)) * factor


def parse_message_id(text: str) -> dict[str, int]:
    """A message id for the REST API from earliest, latest or ledgerId:entryId[:partition]."""
    value = text.strip().lower()
    if value == "earliest":
        return {"ledgerId": -1, "entryId": -1}
    if value == "latest":
        return {"ledgerId": (1 << 63) - 1, "entryId": (1 << 63) - 1}
    m = re.fullmatch(r"(-?\d+):(-?\d+)(?::(-?\d+))?(?::(-?\d+))?", value)
    if not m:
        fail(f"invalid message id {text!r}: expected earliest, latest or ledgerId:entryId")
    out = {"ledgerId": int(m.group(1)), "entryId": int(m.group(2))}
    if m.group(3) is not None:
        out["partitionIndex"] = int(m.group(3))
    return out


def split_csv(values: list[str] | None) -> list[str]:
    """Values of a repeatable option, each possibly comma separated, as one list."""
    out: list[str] = []
    for value in values or []:
        out.extend(v.strip() for v in value.split(",") if v.strip())
    return out


def parse_pairs(values: list[str] | None) -> dict[str, str]:
    """``k=v`` pairs (repeated or comma separated) as a dict; one line of error for a bad pair."""
    out: dict[str, str] = {}
    for pair in split_csv(values):
        key, sep, value = pair.partition("=")
        if not sep or not key:
            fail(f"invalid property {pair!r}: expected key=value")
        out[key] = value
    return out
