"""Dispatchers: which consumer of a subscription gets each entry."""

from magnetar.broker.subscriptions.dispatchers.base import Dispatcher
from magnetar.broker.subscriptions.dispatchers.key_shared import KeySharedDispatcher
from magnetar.broker.subscriptions.dispatchers.round_robin import RoundRobinDispatcher
from magnetar.broker.subscriptions.dispatchers.single_active import SingleActiveDispatcher

__all__ = ["Dispatcher", "KeySharedDispatcher", "RoundRobinDispatcher", "SingleActiveDispatcher"]
