"""The acknowledgement grouping tracker on its own: what reaches the wire, and when."""

from __future__ import annotations

import asyncio

import pytest

from magnetar.client.api.message import MessageId
from magnetar.client.core.acks import AckGroupingTracker
from magnetar.protocol.enums import AckType
from magnetar.protocol.framing import FrameDecoder
from magnetar.protocol.schema import BaseCommand

from ..conftest import run


class Recorder:
    """The tracker's callbacks, recorded (ACKs as commands, or as frames written by hand when
    ``encoded``, as the consumer has them sent)."""

    encoded = False

    def __init__(self) -> None:
        self.sent: list[tuple[AckType, list[tuple[int, int, list[int]]]]] = []
        self.connected = True
        self.acked: list[tuple[int, int]] = []
        self.through: list[tuple[int, int]] = []

    def send(self, command: BaseCommand) -> None:
        ack = command.ack
        self.sent.append((AckType(ack.ack_type), [(m.ledger_id, m.entry_id, list(m.ack_set)) for m in ack.message_id]))

    def send_frame(self, frame: bytes) -> None:
        (decoded,) = FrameDecoder(1 << 20).feed(frame)
        self.send(decoded.command)

    def tracker(self, group_ms: int = 0, batch_index_acks: bool = False) -> AckGroupingTracker:
        return AckGroupingTracker(
            group_ms, batch_index_acks, self.send, lambda: self.connected, self.acked.append, self.through.append,
            send_frame=self.send_frame if self.encoded else None,
        )


@pytest.fixture(autouse=True, params=["commands", "frames"])
def _ack_encoding(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every test runs with the ACKs sent as commands and as frames written by hand."""
    monkeypatch.setattr(Recorder, "encoded", request.param == "frames")


def test_a_batch_entry_is_acknowledged_once_all_its_messages_are() -> None:
    async def main() -> None:
        rec = Recorder()
        acks = rec.tracker()
        acks.track_batch((1, 5), {0, 1})
        acks.acknowledge(MessageId(1, 5, 0, -1, 2))
        assert rec.sent == []
        acks.acknowledge(MessageId(1, 5, 1, -1, 2))
        assert rec.sent == [(AckType.Individual, [(1, 5, [])])] and rec.acked == [(1, 5)]

    run(main())


def test_acks_wait_for_the_group_time_and_for_a_connection() -> None:
    async def main() -> None:
        rec = Recorder()
        acks = rec.tracker(group_ms=20)
        rec.connected = False
        acks.acknowledge(MessageId(1, 1))
        acks.acknowledge(MessageId(1, 2))
        await asyncio.sleep(0.05)
        assert rec.sent == [] and acks.has_pending()
        rec.connected = True
        acks.schedule_flush()
        await asyncio.sleep(0.05)
        assert rec.sent == [(AckType.Individual, [(1, 1, []), (1, 2, [])])] and not acks.has_pending()

    run(main())


def test_cumulative_ack_inside_a_batch_stops_before_its_entry() -> None:
    async def main() -> None:
        rec = Recorder()
        acks = rec.tracker()
        acks.track_batch((1, 7), {0, 1, 2})
        acks.acknowledge_cumulative(MessageId(1, 7, 1, -1, 3))
        assert rec.sent == [(AckType.Cumulative, [(1, 6, [])])] and rec.through == [(1, 6)]
        assert acks.batch_remaining == {(1, 7): {2}}

    run(main())


def test_batch_index_acks_send_the_remaining_ack_set() -> None:
    async def main() -> None:
        rec = Recorder()
        acks = rec.tracker(batch_index_acks=True)
        acks.acknowledge(MessageId(2, 3, 1, -1, 4))
        assert rec.sent == [(AckType.Individual, [(2, 3, [0b1101])])] and rec.acked == []

    run(main())


def test_more_than_a_frame_of_ids_goes_in_frames_of_1000_in_order() -> None:
    async def main() -> None:
        rec = Recorder()
        acks = rec.tracker(group_ms=20)
        for i in range(2500):
            acks.acknowledge(MessageId(3, i))
        acks.flush()
        assert [len(ids) for _, ids in rec.sent] == [1000, 1000, 500]
        assert [ids for _, frame in rec.sent for ids in frame] == [(3, i, []) for i in range(2500)]

    run(main())


def test_acks_sent_before_a_connection_loss_go_again_with_their_ack_sets() -> None:
    async def main() -> None:
        rec = Recorder()
        acks = rec.tracker(batch_index_acks=True)
        acks.acknowledge(MessageId(1, 1))
        acks.acknowledge(MessageId(1, 2, 0, -1, 3))
        acks.acknowledge_cumulative(MessageId(1, 0))
        sent = list(rec.sent)
        assert sent == [
            (AckType.Individual, [(1, 1, [])]),
            (AckType.Individual, [(1, 2, [0b110])]),
            (AckType.Cumulative, [(1, 0, [])]),
        ]
        rec.connected = False
        acks.connection_lost()
        acks.acknowledge(MessageId(1, 2, 1, -1, 3))  # pending (its own ack set): it wins over the one sent
        rec.connected = True
        rec.sent.clear()
        acks.flush()
        assert rec.sent == [(AckType.Cumulative, [(1, 0, [])]), (AckType.Individual, [(1, 2, [0b101]), (1, 1, [])])]

    run(main())
