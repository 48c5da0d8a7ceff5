"""Dispatchers: which consumer of a subscription gets each entry.

Names load on first use (PEP 562): importing one submodule does not load its siblings.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from magnetar.lazy_names import lazy_names

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


__getattr__, __dir__ = lazy_names(__name__, _MODULES)
