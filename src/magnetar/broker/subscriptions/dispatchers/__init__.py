"""Dispatchers: which consumer of a subscription gets each entry.

Names load on first use (PEP 562): importing one submodule does not load its siblings.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from magnetar.broker.subscriptions.dispatchers.base import Dispatcher
    from magnetar.broker.subscriptions.dispatchers.key_shared import KeySharedDispatcher
    from magnetar.broker.subscriptions.dispatchers.round_robin import RoundRobinDispatcher
    from magnetar.broker.subscriptions.dispatchers.single_active import SingleActiveDispatcher

#: public name -> the module of this package that defines it
_MODULES = {
    "Dispatcher": "base",
    "KeySharedDispatcher": "key_shared",
    "RoundRobinDispatcher": "round_robin",
    "SingleActiveDispatcher": "single_active",
}

__all__ = ["Dispatcher", "KeySharedDispatcher", "RoundRobinDispatcher", "SingleActiveDispatcher"]


def __getattr__(name: str) -> Any:
    """Import the module defining ``name`` on first use, and keep the name here."""
    module = _MODULES.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The package's names, loaded or not."""
    return sorted({*globals(), *_MODULES})
