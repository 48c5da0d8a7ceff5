"""HTTP answers to writes leave once the metadata they changed is durable.

A request that may write (any method but GET, HEAD and OPTIONS) runs within
:func:`~magnetar.storage.metadata.deferring_sync`: its metadata commits are made on the loop
without their fsync, which the metadata thread runs (:mod:`magnetar.broker.metadata_sync`). The
response is held until that fsync covered them, so the event loop never waits on the disk for an
admin call and no answer says done before it is durable. A failed fsync answers 500.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from magnetar.admin.security import AsgiApp, Receive, Scope, Send
from magnetar.storage.metadata import deferring_sync

if TYPE_CHECKING:
    from magnetar.broker.service import BrokerService

#: methods that never write metadata: answered as they are
_READS = frozenset({"GET", "HEAD", "OPTIONS"})


class DurableResponses:
    """ASGI middleware: a write request's answer waits for the metadata sync of its writes."""

    def __init__(self, app: AsgiApp, service: BrokerService) -> None:
        self.app = app
        self.service = service

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the request; for a write, hold its response until its metadata is durable."""
        sync = getattr(self.service, "metadata_sync", None)
        if scope.get("type") != "http" or scope.get("method") in _READS or sync is None:
            await self.app(scope, receive, send)
            return

        failed = False

        async def send_when_durable(message: dict) -> None:
            nonlocal failed
            if failed:
                return
            if message.get("type") == "http.response.start":
                try:
                    await sync.durable()
                except OSError as exc:
                    failed = True
                    body = json.dumps({"reason": f"the metadata write was not made durable: {exc}"}).encode()
                    await send({"type": "http.response.start", "status": 500,
                                "headers": [(b"content-type", b"application/json"),
                                            (b"content-length", str(len(body)).encode())]})
                    await send({"type": "http.response.body", "body": body})
                    return
            await send(message)

        with deferring_sync():
            await self.app(scope, receive, send_when_durable)
