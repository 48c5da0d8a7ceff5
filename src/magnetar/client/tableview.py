"""Table views (``pulsar.TableView``): the latest value of every key of a topic, kept up to date
in the client. ``AsyncTableView`` is the asyncio core's (:mod:`magnetar.client.core.tableview`),
``TableView`` the sync face's (:mod:`magnetar.client.sync.tableview`)."""

from magnetar.client.core.tableview import AsyncTableView, TableListener
from magnetar.client.sync.tableview import TableView

__all__ = ["AsyncTableView", "TableListener", "TableView"]
