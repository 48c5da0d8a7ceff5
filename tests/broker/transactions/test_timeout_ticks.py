"""The transaction timeout checks: no wake-up while no transaction is open (an idle broker's CPU is
mostly its wake-ups), and an open transaction still times out and is aborted."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from magnetar.broker.service import BrokerService
from magnetar.broker.transactions.coordinator import ABORTED
from tests.broker.service_runner import run_service


def test_the_timeout_checks_sleep_until_a_transaction_opens_then_abort_it_on_time(tmp_path: Path) -> None:
    async def body(service: BrokerService) -> None:
        txns = service.transactions
        assert txns is not None
        coordinator = txns.coordinator(0)
        checks: list[int] = []
        expired = coordinator.expired
        coordinator.expired = lambda now_ms: (checks.append(now_ms), expired(now_ms))[1]  # type: ignore[method-assign]
        await asyncio.sleep(1.3)  # more than a tick of 1 s with nothing open
        assert checks == []
        txn = await txns.new_txn(0, 300)
        started = time.monotonic()
        while coordinator.final_state(txn) != ABORTED and time.monotonic() - started < 5:
            await asyncio.sleep(0.05)
        assert coordinator.final_state(txn) == ABORTED
        assert 1 <= len(checks) <= 3  # the first tick after it opened found it expired

    run_service(tmp_path, body)
