"""The coordinator and its durable log: states, refusals, and replay after a restart."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from magnetar.broker.errors import BrokerError
from magnetar.broker.transactions.coordinator import (
    ABORTING,
    COMMITTED,
    COMMITTING,
    OPEN,
    TransactionCoordinator,
)
from magnetar.broker.transactions.log import TransactionLog, read_records, replay
from magnetar.protocol.enums import ServerError
from magnetar.storage import ManagedLedger


class InstantCommitter:
    """Makes every append durable on the next loop iteration (the group committer's contract)."""

    def appended(self, topic) -> None:  # noqa: ANN001
        topic.ledger.flush()
        asyncio.get_running_loop().call_soon(topic.on_durable, topic.ledger.last_entry_id)


def _coordinator(directory: Path) -> TransactionCoordinator:
    ledger = ManagedLedger.open(directory, 1)
    replayed, highest = replay(read_records(ledger))
    coordinator = TransactionCoordinator(0, TransactionLog(0, ledger, InstantCommitter()), highest + 1)
    coordinator.restore(replayed)
    return coordinator


def test_states_and_refusals(tmp_path: Path) -> None:
    async def run() -> None:
        c = _coordinator(tmp_path / "log")
        first = await c.new_txn(60_000)
        second = await c.new_txn(60_000)
        assert (first, second) == ((0, 0), (0, 1))
        await c.add_partitions(first, ["persistent://public/default/a", "persistent://public/default/a"])
        await c.add_subscriptions(first, [("persistent://public/default/a", "s")])
        meta = c.get(first)
        assert (meta.state, meta.partitions, meta.subscriptions) == (
            OPEN, ["persistent://public/default/a"], [("persistent://public/default/a", "s")]
        )
        await c.begin_end(first, commit=True)
        with pytest.raises(BrokerError) as refused:
            await c.add_partitions(first, ["persistent://public/default/b"])
        assert refused.value.code == ServerError.InvalidTxnStatus
        with pytest.raises(BrokerError) as refused:
            await c.begin_end(first, commit=False)
        assert refused.value.code == ServerError.InvalidTxnStatus
        c.finish_end(c.get(first))
        with pytest.raises(BrokerError) as gone:
            c.get(first)
        assert gone.value.code == ServerError.TransactionNotFound
        assert c.final_state(first) == COMMITTED
        c.log.close()

    asyncio.run(run())


def test_replay_after_restart_keeps_every_state(tmp_path: Path) -> None:
    async def first_run() -> None:
        c = _coordinator(tmp_path / "log")
        committing = await c.new_txn(60_000)
        await c.add_partitions(committing, ["persistent://public/default/t"])
        await c.begin_end(committing, commit=True)  # the crash comes before the markers
        aborting = await c.new_txn(60_000)
        await c.begin_end(aborting, commit=False)
        await c.new_txn(1_000)  # left open
        done = await c.new_txn(60_000)
        await c.begin_end(done, commit=False)
        c.finish_end(c.get(done))
        c.log.ledger.sync()
        c.log.ledger.close()

    async def second_run() -> None:
        c = _coordinator(tmp_path / "log")
        assert {t: m.state for t, m in c.txns.items()} == {(0, 0): COMMITTING, (0, 1): ABORTING, (0, 2): OPEN}
        assert c.get((0, 0)).partitions == ["persistent://public/default/t"]
        assert c.final_state((0, 3)) == "ABORTED"
        # ids are never reused: the run before reserved 0..999 (its NEW_TXN records were not waited for)
        assert await c.new_txn(1_000) == (0, 1000)
        c.log.close()

    asyncio.run(first_run())
    asyncio.run(second_run())


def test_checkpoints_trim_the_log_and_replay_the_same(tmp_path: Path) -> None:
    directory = tmp_path / "log"

    def open_small() -> TransactionCoordinator:
        ledger = ManagedLedger.open(directory, 1, segment_max_bytes=400)
        replayed, highest = replay(read_records(ledger))
        coordinator = TransactionCoordinator(0, TransactionLog(0, ledger, InstantCommitter()), highest + 1)
        coordinator.restore(replayed)
        coordinator.checkpoint_every = 7
        return coordinator

    async def first_run() -> dict:
        c = open_small()
        for i in range(40):
            txn = await c.new_txn(60_000)
            await c.add_partitions(txn, [f"persistent://public/default/t{i % 3}"])
            if i % 4 == 0:
                continue  # left open
            meta = await c.begin_end(txn, commit=i % 4 != 1)
            if i % 4 != 3:
                c.finish_end(meta)  # i % 4 == 3: left COMMITTING
        await asyncio.sleep(0.05)  # the last checkpoint's task
        assert c.log.ledger.first_entry_id > 0, "the checkpoints trimmed nothing"
        state = {t: (m.state, m.partitions) for t, m in c.txns.items()}
        c.log.ledger.sync()
        c.log.ledger.close()
        return state

    async def second_run(expected: dict) -> None:
        c = open_small()
        assert {t: (m.state, m.partitions) for t, m in c.txns.items()} == expected
        assert c.final_state((0, 38)) == COMMITTED and c.final_state((0, 37)) == "ABORTED"
        assert await c.new_txn(1_000) == (0, 1000)  # after the block of ids the checkpoint says was reserved
        c.log.close()

    expected = asyncio.run(first_run())
    assert len(expected) == 20 and {s for s, _ in expected.values()} == {OPEN, COMMITTING}
    asyncio.run(second_run(expected))


def test_new_txn_answers_before_its_record_is_durable_and_ids_are_reserved_ahead(tmp_path: Path) -> None:
    class GatedCommitter:
        """Makes appends durable only when ``open`` is set."""

        def __init__(self) -> None:
            self.open = True
            self.logs: list = []

        def appended(self, topic) -> None:  # noqa: ANN001
            self.logs.append(topic)
            if self.open:
                topic.ledger.flush()
                asyncio.get_running_loop().call_soon(topic.on_durable, topic.ledger.last_entry_id)

    async def run() -> None:
        committer = GatedCommitter()
        ledger = ManagedLedger.open(tmp_path / "log", 1)
        c = TransactionCoordinator(0, TransactionLog(0, ledger, committer), 0)
        first = await c.new_txn(60_000)  # reserves 0..999 (durable), then opens (0, 0)
        assert first == (0, 0) and c.reserved == 999
        committer.open = False
        rounds = len(committer.logs)
        second = await asyncio.wait_for(c.new_txn(60_000), 1)  # no durable step at all
        assert second == (0, 1) and len(committer.logs) == rounds  # not even a sync round of its own
        assert c.get(second).state == OPEN
        adding = asyncio.ensure_future(c.add_partitions(second, ["persistent://public/default/a"]))
        await asyncio.sleep(0.05)
        assert not adding.done()  # ADD_PARTITION_TO_TXN waits for the disk
        c.log.ledger.flush()
        c.log.on_durable(c.log.ledger.last_entry_id)
        await adding
        c.log.close()

    asyncio.run(run())


def test_replay_counts_reserved_ids_and_keeps_a_transaction_whose_new_record_was_lost() -> None:
    records = [
        {"op": "reserve", "upto": 999},
        {"op": "new", "txn": [0, 0], "timeout_ms": 5000, "opened_ms": 1},
        # (0, 1)'s "new" record was lost to a failed sync; its later records were written
        {"op": "partitions", "txn": [0, 1], "partitions": ["persistent://public/default/p"]},
        {"op": "state", "txn": [0, 1], "state": COMMITTING},
    ]
    txns, highest = replay(records)
    assert highest == 999  # the next id after a restart is 1000: nothing handed out is given twice
    assert txns[(0, 0)]["state"] == OPEN
    assert (txns[(0, 1)]["state"], txns[(0, 1)]["partitions"]) == (COMMITTING, ["persistent://public/default/p"])


def test_replay_does_not_bring_back_a_forgotten_transaction_from_before_the_checkpoint() -> None:
    records = [
        {"op": "partitions", "txn": [0, 3], "partitions": ["persistent://public/default/p"]},  # kept by the trim
        {"op": "checkpoint", "next_sequence": 2000, "txns": [], "ended": []},
        {"op": "new", "txn": [0, 2000], "timeout_ms": 5000, "opened_ms": 1},
    ]
    txns, highest = replay(records)
    assert set(txns) == {(0, 2000)} and highest == 2000
