"""Moving a client between clusters: :class:`ServiceSwitch` runs an ``AutoClusterFailover``'s
probes (or listens to a ``ServiceInfoProvider``) and tells its client to move.

The probe is a TCP connection to the service URL's first address within the check interval (as
the official clients' AutoClusterFailover). Moving (``client._use_service``) points the lookups at
the new URL and closes every connection: producers and consumers reconnect, through a lookup of
the new cluster, as after any lost connection.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from magnetar.client.api.arguments import InvalidArgument
from magnetar.client.api.failover import AutoClusterFailover, ServiceInfo, ServiceInfoProvider
from magnetar.client.core.lookup import ServiceUrl

log = logging.getLogger("magnetar.client")

#: seconds a provider's update from another thread waits for the client to move
MOVE_TIMEOUT = 30.0


class SwitchingClient(Protocol):
    """What a ServiceSwitch needs of its client."""

    async def _use_service(self, info: ServiceInfo) -> None: ...  # noqa: D102


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


async def reachable(info: ServiceInfo, timeout: float) -> bool:
    """Whether the first address of ``info``'s service URL accepts a TCP connection in time."""
    host, port = ServiceUrl.parse(info.service_url).hosts[0]
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except (OSError, TimeoutError):
        return False
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return True


class ServiceSwitch:
    """The service a client uses, and what moves it (an AutoClusterFailover or a ServiceInfoProvider)."""

    def __init__(self, config: AutoClusterFailover | ServiceInfoProvider) -> None:
        self.config = config
        self.current = config.primary if isinstance(config, AutoClusterFailover) else config.initial_service_info()
        if not isinstance(self.current, ServiceInfo):
            raise InvalidArgument(f"the service info provider's initial service is a {type(self.current).__name__},"
                                  " not a ServiceInfo")
        self._task: asyncio.Task | None = None
        self._client: SwitchingClient | None = None
        self._failures = 0
        self._successes = 0

    def start(self, client: SwitchingClient) -> None:
        """Start probing (or listening) on the running loop; once."""
        if self._client is not None:
            return
        self._client = client
        loop = asyncio.get_running_loop()
        if isinstance(self.config, AutoClusterFailover):
            self._task = loop.create_task(self._probe_loop(self.config))
        else:
            def update(info: ServiceInfo) -> None:
                if not isinstance(info, ServiceInfo):
                    raise InvalidArgument(f"a service info update must be a ServiceInfo, not {type(info).__name__}")
                previous, self.current = self.current, info  # get_service_info() says so at once
                moved = asyncio.run_coroutine_threadsafe(self._move(info, previous), loop)
                if _running_loop() is not loop:  # another thread: back once the connections are moved
                    moved.result(MOVE_TIMEOUT)
            self.config.initialize(update)

    def close(self) -> None:
        """Stop probing; a provider is closed."""
        if self._task is not None:
            self._task.cancel()
        if isinstance(self.config, ServiceInfoProvider):
            self.config.close()

    async def _move(self, info: ServiceInfo, previous: ServiceInfo | None = None) -> None:
        previous = previous or self.current
        if info is previous or self._client is None:
            return
        log.warning("cluster failover: moving from %s to %s", previous.service_url, info.service_url)
        self.current = info
        self._failures = self._successes = 0
        await self._client._use_service(info)

    async def _probe_loop(self, config: AutoClusterFailover) -> None:
        interval = config.check_interval_ms / 1000.0
        while True:
            await asyncio.sleep(interval)
            try:
                await self.check(config, interval)
            except Exception:  # a failed probe round must not end failover
                log.exception("cluster failover: probe failed")

    async def check(self, config: AutoClusterFailover, timeout: float) -> None:
        """One probe round: move away from a failing service, or back to the primary."""
        if self.current is config.primary:
            if await reachable(config.primary, timeout):
                self._failures = 0
                return
            self._failures += 1
            if self._failures >= config.failover_threshold:
                await self._move_to_secondary(config, timeout)
            return
        if await reachable(config.primary, timeout):
            self._successes += 1
            if self._successes >= config.switch_back_threshold:
                await self._move(config.primary)
            return
        self._successes = 0
        if not await reachable(self.current, timeout):
            self._failures += 1
            if self._failures >= config.failover_threshold:
                await self._move_to_secondary(config, timeout)

    async def _move_to_secondary(self, config: AutoClusterFailover, timeout: float) -> None:
        for info in config.secondary:
            if info is not self.current and await reachable(info, timeout):
                await self._move(info)
                return
