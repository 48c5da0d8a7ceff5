"""asyncio I/O helpers shared by the broker and the client.

The one place where sockets meet the sans-IO protocol package: it may import
:mod:`magnetar.protocol`, never the broker or the client.
"""

from __future__ import annotations

from magnetar.net.transport import FramedProtocol

__all__ = ["FramedProtocol"]
