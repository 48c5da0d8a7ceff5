"""Dispatchers: which consumer of a subscription gets each entry."""

from .base import Dispatcher
from .key_shared import KeySharedDispatcher
from .round_robin import RoundRobinDispatcher
from .single_active import SingleActiveDispatcher

__all__ = ["Dispatcher", "KeySharedDispatcher", "RoundRobinDispatcher", "SingleActiveDispatcher"]
