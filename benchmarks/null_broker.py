"""A broker that only answers, and only feeds: the ceilings any real broker is measured against.

It speaks just enough of the protocol for producers and consumers, using the same sans-IO codec as
magnetar, so a benchmark against it measures the client and the loop:

- produce: CONNECT, lookups, PRODUCER, SEND, CLOSE_PRODUCER, PING; every SEND gets its receipt at
  once and nothing is stored;
- consume: SUBSCRIBE is answered, and every FLOW is answered with MESSAGE frames of one pre-built
  batch entry (each frame only gets a new command header: consumer id and entry id), as many
  as the permits allow; ACKs are ignored. The batch's layout comes from the topic name: a topic
  whose name contains ``-s<size>-b<count>`` gets batches of ``count`` messages of ``size`` bytes
  (default 100 B, 1000 messages, capped at 128 KiB as a batching producer caps them), each with
  its sequence id, as the official producer writes the batches magnetar then serves; ``-b0``:
  plain entries of one message each (unbatched).
"""

from __future__ import annotations

import argparse
import asyncio
import re

from magnetar.protocol.batch import BatchMessage, build_entry
from magnetar.protocol.enums import CommandType, LookupType
from magnetar.protocol.framing import FrameDecoder, ProtocolError, crc32c, encode_command, encode_entry_header
from magnetar.protocol.schema import BaseCommand, MessageMetadata

_LAYOUT = re.compile(r"-s(\d+)-b(\d+)")
#: the batch size a batching producer stops at (the official clients' default)
MAX_BATCH_BYTES = 128 * 1024
#: the first sequence id of the pre-built batch: a producer past its first 16,384 messages, as in
#: the bulk of a topic (the ids of a batch of up to 1,000 then have varints of one length; a batch
#: from id 0 crosses from one to two bytes at 128, which only a producer's first batch does)
FIRST_SEQUENCE = 20_000


def batch_layout(topic: str) -> tuple[int, int]:
    """(message bytes, messages per batch) that the consume mode feeds on ``topic`` (0 messages
    per batch, from ``-b0``: plain entries of one message each, as an unbatched producer writes)."""
    found = _LAYOUT.search(topic)
    size, count = (int(found.group(1)), int(found.group(2))) if found else (100, 1000)
    if count == 0:
        return size, 0
    return size, max(1, min(count, MAX_BATCH_BYTES // max(1, size)))


def prebuilt_entry(size: int, count: int) -> tuple[bytes, int]:
    """One batch entry of ``count`` messages of ``size`` bytes, as the official producer builds it
    (each message's SingleMessageMetadata carries its sequence id besides its size), and its CRC32C.

    The layout matters: consumers decode a metadata of only ``payload_size`` faster than one with a
    sequence id too, so a null broker feeding the lighter layout measured a client's decoding of
    other bytes than the ones magnetar serves (magnetar.client: 720k against 520k msg/s, 100 B).
    """
    meta = MessageMetadata(producer_name="null-broker", sequence_id=FIRST_SEQUENCE, publish_time=1)
    if count == 0:  # a plain entry: one message, not batched
        entry = build_entry(meta, b"x" * size)
        return entry, crc32c(entry)
    entry = build_entry(meta, [BatchMessage(b"x" * size, sequence_id=FIRST_SEQUENCE + i) for i in range(count)])
    return entry, crc32c(entry)


class FedConsumer:
    """A consumer of the consume mode: its permits and the pre-built batch it is fed."""

    __slots__ = ("consumer_id", "permits", "entry", "crc", "messages")

    def __init__(self, consumer_id: int, topic: str) -> None:
        self.consumer_id = consumer_id
        self.permits = 0
        size, count = batch_layout(topic)
        self.entry, self.crc = prebuilt_entry(size, count)
        #: permits one entry takes
        self.messages = max(1, count)


class NullBrokerConnection(asyncio.Protocol):
    """Answers every request; SEND gets its receipt immediately, FLOW gets pre-built batches."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.decoder = FrameDecoder(6 * 1024 * 1024)
        self.entry_id = 0
        self.consumers: dict[int, FedConsumer] = {}
        self.writable = True

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def pause_writing(self) -> None:
        self.writable = False

    def resume_writing(self) -> None:
        self.writable = True
        out: list[bytes] = []
        for consumer in self.consumers.values():
            self.feed(consumer, out)
        if out:
            self.transport.writelines(out)

    def data_received(self, data: bytes) -> None:
        try:
            frames = self.decoder.feed(data)
        except ProtocolError:
            self.transport.close()
            return
        out: list[bytes] = []
        for frame in frames:
            cmd = frame.command
            if cmd.type == CommandType.FLOW:
                consumer = self.consumers.get(cmd.flow.consumer_id)
                if consumer is not None:
                    consumer.permits += cmd.flow.message_permits
                    self.feed(consumer, out)
                continue
            if cmd.type == CommandType.ACK and not cmd.ack.HasField("request_id"):
                continue
            reply = self.answer(cmd)
            if reply is not None:
                out.append(encode_command(reply))
        if out:
            self.transport.writelines(out)

    def feed(self, consumer: FedConsumer, out: list[bytes]) -> None:
        """Queue MESSAGE frames of the pre-built batch while the consumer has permits."""
        entry, crc, size = consumer.entry, consumer.crc, len(consumer.entry)
        while consumer.permits > 0 and self.writable:
            cmd = BaseCommand(type=CommandType.MESSAGE)
            cmd.message.consumer_id = consumer.consumer_id
            cmd.message.message_id.ledger_id = 1
            cmd.message.message_id.entry_id = self.entry_id
            self.entry_id += 1
            out.append(encode_entry_header(cmd, size, crc))
            out.append(entry)
            consumer.permits -= consumer.messages

    def answer(self, cmd: BaseCommand) -> BaseCommand | None:  # noqa: C901 - one branch per command
        """The reply to one command (None: no reply)."""
        t = cmd.type
        r = BaseCommand()
        if t == CommandType.SEND:
            r.type = CommandType.SEND_RECEIPT
            r.send_receipt.producer_id = cmd.send.producer_id
            r.send_receipt.sequence_id = cmd.send.sequence_id
            r.send_receipt.message_id.ledger_id = 1
            r.send_receipt.message_id.entry_id = self.entry_id
            self.entry_id += 1
        elif t == CommandType.CONNECT:
            r.type = CommandType.CONNECTED
            r.connected.server_version = "null-broker"
            r.connected.protocol_version = 20
            r.connected.max_message_size = 5 * 1024 * 1024
        elif t == CommandType.PARTITIONED_METADATA:
            r.type = CommandType.PARTITIONED_METADATA_RESPONSE
            r.partition_metadata_response.request_id = cmd.partition_metadata.request_id
            r.partition_metadata_response.partitions = 0
            r.partition_metadata_response.response = 0
        elif t == CommandType.LOOKUP:
            r.type = CommandType.LOOKUP_RESPONSE
            r.lookup_topic_response.request_id = cmd.lookup_topic.request_id
            r.lookup_topic_response.response = LookupType.Connect
            r.lookup_topic_response.broker_service_url = f"pulsar://127.0.0.1:{self.port}"
            r.lookup_topic_response.authoritative = True
        elif t == CommandType.PRODUCER:
            r.type = CommandType.PRODUCER_SUCCESS
            r.producer_success.request_id = cmd.producer.request_id
            r.producer_success.producer_name = cmd.producer.producer_name or "null-producer"
            r.producer_success.last_sequence_id = -1
        elif t == CommandType.SUBSCRIBE:
            self.consumers[cmd.subscribe.consumer_id] = FedConsumer(cmd.subscribe.consumer_id, cmd.subscribe.topic)
            r.type = CommandType.SUCCESS
            r.success.request_id = cmd.subscribe.request_id
        elif t in (CommandType.CLOSE_PRODUCER, CommandType.CLOSE_CONSUMER, CommandType.UNSUBSCRIBE):
            request = cmd.close_producer if t == CommandType.CLOSE_PRODUCER else (
                cmd.close_consumer if t == CommandType.CLOSE_CONSUMER else cmd.unsubscribe
            )
            if t != CommandType.CLOSE_PRODUCER:
                self.consumers.pop(request.consumer_id, None)
            r.type = CommandType.SUCCESS
            r.success.request_id = request.request_id
        elif t == CommandType.ACK:
            r.type = CommandType.ACK_RESPONSE
            r.ack_response.consumer_id = cmd.ack.consumer_id
            r.ack_response.request_id = cmd.ack.request_id
        elif t == CommandType.PING:
            r.type = CommandType.PONG
            r.pong.SetInParent()
        else:
            return None
        return r


async def serve(port: int) -> None:
    """Run the null broker on 127.0.0.1:port forever."""
    loop = asyncio.get_running_loop()
    server = await loop.create_server(lambda: NullBrokerConnection(port), "127.0.0.1", port)
    async with server:
        await server.serve_forever()


def main() -> None:
    """Command line: null_broker.py --port P."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    try:
        import uvloop

        uvloop.run(serve(args.port))
    except ImportError:
        asyncio.run(serve(args.port))


if __name__ == "__main__":
    main()
