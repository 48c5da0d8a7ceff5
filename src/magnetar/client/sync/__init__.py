"""The sync face (``pulsar``): the asyncio core driven from a background loop thread.

:class:`~magnetar.client.sync.client.Client` (with its ``Consumer`` and ``Reader``),
:class:`~magnetar.client.sync.producer.Producer`
and :class:`~magnetar.client.sync.tableview.TableView`, :class:`~magnetar.client.sync.transaction.Transaction` are what ``import magnetar.client as pulsar``
code gets; ``delivery`` hands messages to waiting threads, ``loop_thread`` owns the loop.
"""

from magnetar.client.sync.client import Client, Consumer, Reader
from magnetar.client.sync.producer import Producer
from magnetar.client.sync.tableview import TableView
from magnetar.client.sync.transaction import Transaction

__all__ = ["Client", "Consumer", "Producer", "Reader", "TableView", "Transaction"]
