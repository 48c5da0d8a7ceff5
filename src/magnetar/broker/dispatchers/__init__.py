"""Dispatchers: which consumer of a subscription gets each entry."""

from .base import Dispatcher
from .round_robin import RoundRobinDispatcher
from .single_active import SingleActiveDispatcher

__all__ = ["Dispatcher", "RoundRobinDispatcher", "SingleActiveDispatcher"]
