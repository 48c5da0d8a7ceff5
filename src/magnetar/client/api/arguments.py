"""Argument checks made where the official Python client makes them, with its exception types.

The official client refuses an argument of the wrong type with a ValueError before anything
happens; magnetar's client raises :class:`InvalidArgument`, which is both that ValueError and
magnetar's own InvalidConfiguration (a PulsarError whose ``error()`` is
``Result.InvalidConfiguration``), so code catching either runs unchanged.
"""

from __future__ import annotations

from enum import IntEnum
from typing import Any, TypeVar

from magnetar.client.exceptions import InvalidArgument

E = TypeVar("E", bound=IntEnum)


def _type_names(expected: type | tuple[type, ...]) -> str:
    kinds = expected if isinstance(expected, tuple) else (expected,)
    return " or ".join(f"'{kind.__name__}'" for kind in kinds)


def check_type(value: Any, expected: type | tuple[type, ...], name: str) -> None:
    """Refuse ``value`` unless it is an instance of ``expected`` (a bool counts as an int, as in
    the official client)."""
    if not isinstance(value, expected):
        raise InvalidArgument(
            f"Argument {name} is expected to be of type {_type_names(expected)} and not '{type(value).__name__}'"
        )


def check_optional(value: Any, expected: type | tuple[type, ...], name: str) -> None:
    """Refuse ``value`` unless it is None or an instance of ``expected``."""
    if value is not None and not isinstance(value, expected):
        raise InvalidArgument(
            f"Argument {name} is expected to be either None or of type {_type_names(expected)}"
            f" and not '{type(value).__name__}'"
        )


def check_types(values: dict[str, Any], expected: dict[str, type | tuple[type, ...]],
                optional: dict[str, type | tuple[type, ...]]) -> None:
    """Check every name of ``expected`` (required) and of ``optional`` (None allowed) in ``values``."""
    for name, kind in expected.items():
        check_type(values[name], kind, name)
    for name, kind in optional.items():
        check_optional(values[name], kind, name)


def check_enum(enum: type[E], value: Any, name: str) -> E:
    """``value`` as a member of ``enum``: its members, plain ints and the official client's enum
    values (anything ``int()`` turns into a member's value) are accepted; None, strings and
    floats are not."""
    if value is None or isinstance(value, (str, bytes, float)):
        raise InvalidArgument(f"Argument {name} is expected to be of type '{enum.__name__}' and not '{type(value).__name__}'")
    try:
        return enum(int(value))
    except (TypeError, ValueError):
        raise InvalidArgument(f"Argument {name}: {value!r} is not a {enum.__name__}") from None


__all__ = ["InvalidArgument", "check_enum", "check_optional", "check_type", "check_types"]
