"""Dispatchers: which consumer of a subscription gets each entry.

:mod:`.base` (``Dispatcher``), :mod:`.single_active` (``SingleActiveDispatcher``: Exclusive, Failover),
:mod:`.round_robin` (``RoundRobinDispatcher``: Shared), :mod:`.key_shared` (``KeySharedDispatcher``).
Nothing is re-exported here: the session imports ``key_shared``'s checks at start-up, the other
dispatchers load with the first subscription.
"""
