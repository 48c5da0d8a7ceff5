"""FramedProtocol against an in-memory transport: framing in, batched writes out, flow control."""

from __future__ import annotations

import asyncio

from magnetar.net.transport import FramedProtocol, flushed_at_exit
from magnetar.protocol import commands
from magnetar.protocol.enums import CommandType
from magnetar.protocol.framing import Frame, ProtocolError, encode_command


class RecordingTransport(asyncio.Transport):
    """Records writelines calls and how the connection was ended."""

    def __init__(self) -> None:
        super().__init__()
        self.writes: list[list[bytes]] = []
        self.ended: str | None = None

    def writelines(self, list_of_data) -> None:  # noqa: ANN001 - asyncio's signature
        self.writes.append(list(list_of_data))

    def close(self) -> None:
        self.ended = "close"

    def abort(self) -> None:
        self.ended = "abort"


class Recorder(FramedProtocol):
    """Keeps every frame and protocol error it is handed."""

    def __init__(self, max_frame_size: int = 1 << 20) -> None:
        super().__init__(max_frame_size)
        self.frames: list[Frame] = []
        self.errors: list[ProtocolError] = []

    def frame_received(self, frame: Frame) -> None:
        self.frames.append(frame)
        if frame.type == CommandType.PING:
            self.close()

    def protocol_error(self, exc: ProtocolError) -> None:
        self.errors.append(exc)
        super().protocol_error(exc)


def _connected() -> tuple[Recorder, RecordingTransport]:
    proto, transport = Recorder(), RecordingTransport()
    proto.connection_made(transport)
    return proto, transport


def test_frames_split_across_reads_arrive_whole_and_in_order() -> None:
    proto, _ = _connected()
    data = encode_command(commands.flow(1, 10)) + encode_command(commands.success(7))
    proto.data_received(data[:5])
    assert proto.frames == []
    proto.data_received(data[5:])
    assert [f.type for f in proto.frames] == [CommandType.FLOW, CommandType.SUCCESS]
    assert proto.frames[1].command.success.request_id == 7


def test_frames_after_close_are_not_handled() -> None:
    proto, transport = _connected()
    proto.data_received(commands.PING_FRAME + commands.PONG_FRAME)
    assert [f.type for f in proto.frames] == [CommandType.PING]
    assert proto.closed and transport.ended == "close"


def test_malformed_input_aborts_by_default() -> None:
    proto, transport = _connected()
    proto.data_received(b"\x00\x00\x00\x08\x00\x00\x00\x09garbage!")
    assert len(proto.errors) == 1 and proto.frames == []
    assert proto.closed and transport.ended == "abort"


def test_writes_of_one_loop_iteration_go_out_in_one_writelines() -> None:
    async def main() -> list[list[bytes]]:
        proto, transport = _connected()
        proto.write(b"a")
        proto.write_entry_frame(b"header", b"entry")
        proto.send_command(commands.ping())
        assert transport.writes == []
        await asyncio.sleep(0)
        proto.write(b"b")
        await asyncio.sleep(0)
        return transport.writes

    writes = asyncio.run(main())
    assert writes == [[b"a", b"header", b"entry", commands.PING_FRAME], [b"b"]]


def test_writes_within_flushed_at_exit_go_out_as_it_exits_connection_by_connection() -> None:
    async def main() -> None:
        (first, first_out), (second, second_out) = _connected(), _connected()
        with flushed_at_exit():
            second.write(b"s1")
            first.write(b"f1")
            second.write(b"s2")
            assert first_out.writes == [] and second_out.writes == []
        # at once, in the same callback: no loop iteration ran in between
        assert second_out.writes == [[b"s1", b"s2"]] and first_out.writes == [[b"f1"]]
        first.write(b"after")  # outside the block: the loop's next iteration, as before
        assert first_out.writes == [[b"f1"]]
        await asyncio.sleep(0)
        assert first_out.writes == [[b"f1"], [b"after"]] and second_out.writes == [[b"s1", b"s2"]]

    asyncio.run(main())


def test_flushed_at_exit_is_per_context_and_nests() -> None:
    async def main() -> None:
        proto, transport = _connected()
        with flushed_at_exit():
            with flushed_at_exit():
                proto.write(b"inner")
            assert transport.writes == [[b"inner"]]
            proto.write(b"outer")
            assert transport.writes == [[b"inner"]]
        assert transport.writes == [[b"inner"], [b"outer"]]
        other, other_out = _connected()
        with flushed_at_exit():
            # a callback the loop runs later is outside the block: written in its own iteration
            asyncio.get_running_loop().call_soon(other.write, b"later")
        await asyncio.sleep(0)
        assert other_out.writes == []
        await asyncio.sleep(0)
        assert other_out.writes == [[b"later"]]

    asyncio.run(main())


def test_close_flushes_and_abort_drops_queued_bytes() -> None:
    async def main() -> None:
        proto, transport = _connected()
        proto.write(b"queued")
        proto.close()
        assert transport.writes == [[b"queued"]] and transport.ended == "close"
        proto.write(b"late")
        await asyncio.sleep(0)
        assert transport.writes == [[b"queued"]]

        proto, transport = _connected()
        proto.write(b"queued")
        proto.abort()
        await asyncio.sleep(0)
        assert transport.writes == [] and transport.ended == "abort"

    asyncio.run(main())


def test_writable_follows_pause_and_resume() -> None:
    proto, _ = _connected()
    assert proto.writable
    proto.pause_writing()
    assert not proto.writable
    proto.resume_writing()
    assert proto.writable
    proto.connection_lost(None)
    assert proto.closed
