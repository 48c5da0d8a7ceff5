"""Brokers for tests: :class:`Broker` (a child process, as a context manager or its async form), the
admin helper, free ports, and the pytest plugin's fixtures (:mod:`magnetar.testing.pytest_plugin`).

Names load on first use: the pytest plugin, registered for every pytest run, imports this package,
and a test run that uses none of its fixtures must not pay for a broker's imports.
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
