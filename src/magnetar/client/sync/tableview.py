"""``pulsar.TableView`` on the sync face (``Client.create_table_view``): an ``AsyncTableView``
used from other threads; its listeners run on the client's loop thread."""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any

from magnetar.client.core.tableview import AsyncTableView, TableListener


class TableView:
    """``pulsar.TableView``: an ``AsyncTableView`` used from other threads through the sync face."""

    def __init__(self, core: AsyncTableView, run: Callable[[Coroutine[Any, Any, Any]], Any]) -> None:
        self._core = core
        self._run = run

    @property
    def core(self) -> AsyncTableView:
        """The asyncio table view underneath."""
        return self._core

    def get(self, key: str) -> Any:
        """The value of ``key``, None when the view has no such key."""
        return self._core.get(key)

    def for_each(self, callback: TableListener) -> None:
        """Call ``callback(key, value)`` for each entry the view holds now (on this thread)."""
        for key, value in self._core.items():
            callback(key, value)

    def for_each_and_listen(self, callback: TableListener) -> None:
        """``for_each``, then call ``callback`` on the client's loop thread for every later change."""

        async def on_loop() -> None:
            self._core.for_each_and_listen(callback)

        self._run(on_loop())

    def close(self) -> None:
        """Stop following the topic and close the reader."""
        self._run(self._core.close())

    def __len__(self) -> int:
        return len(self._core)

    def __str__(self) -> str:
        return repr(self._core)

    def __repr__(self) -> str:
        return repr(self._core)


__all__ = ["TableView"]
