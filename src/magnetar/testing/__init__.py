"""Brokers for tests: :class:`Broker` (a child process, as a context manager or its async form), the
admin helper, free ports, and the pytest plugin's fixtures (:mod:`magnetar.testing.pytest_plugin`).

Names load on first use (the one lazy package left, with magnetar.protocol): the pytest plugin, registered
by its entry point ``magnetar.testing.pytest_plugin`` for every pytest run, imports this package, and a
test run that uses none of its fixtures must not pay for a broker's imports. Explicit imports here would
cost every pytest run 250-300 ms CPU after pytest (python -X importtime on a loaded machine: ``thread``
250 ms, it imports the broker; ``broker`` 60 ms; ``process`` 30 ms; ``admin`` 20 ms). Moving the plugin
out of this package (a ``magnetar.pytest_plugin`` module) would let this package import explicitly, at
the price of a new entry point (a re-install of every environment).
"""

from magnetar.lazy_names import lazy_names

_MODULES = {
    "Admin": "admin",
    "AdminError": "admin",
    "Broker": "broker",
    "BrokerStartError": "broker",
    "BrokerProcess": "process",
    "BrokerThread": "thread",
    "free_port": "ports",
    "wait_for_port": "ports",
}

__all__ = sorted(_MODULES)

__getattr__, __dir__ = lazy_names(__name__, _MODULES)
