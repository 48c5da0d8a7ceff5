"""Brokers for tests: :class:`Broker` (a child process, as a context manager or its async form), the
admin helper, free ports, and the project's own test brokers (:class:`BrokerProcess`,
:class:`BrokerThread`). The pytest plugin's fixtures live in :mod:`magnetar.pytest_plugin`, outside this
package, so that a pytest run that uses none of them never imports it.
"""

from magnetar.testing.admin import Admin, AdminError
from magnetar.testing.broker import Broker, BrokerStartError
from magnetar.testing.ports import free_port, wait_for_port
from magnetar.testing.process import BrokerProcess
from magnetar.testing.thread import BrokerThread

__all__ = ["Admin", "AdminError", "Broker", "BrokerProcess", "BrokerStartError", "BrokerThread", "free_port",
           "wait_for_port"]
