"""A broker that only answers: the ceiling any real broker is measured against.

It speaks just enough of the protocol for a producer (CONNECT, lookups, PRODUCER, SEND,
CLOSE_PRODUCER, PING) and acknowledges every SEND at once without storing anything, using the
same sans-IO codec as magnetar, so a benchmark against it measures the client and the loop.
"""

from __future__ import annotations

import argparse
import asyncio

from magnetar.protocol.enums import CommandType, LookupType
from magnetar.protocol.framing import FrameDecoder, ProtocolError, encode_command
from magnetar.protocol.schema import BaseCommand


class NullBrokerConnection(asyncio.Protocol):
    """Answers every request; SEND gets its receipt immediately."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.decoder = FrameDecoder(6 * 1024 * 1024)
        self.entry_id = 0

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        try:
            frames = self.decoder.feed(data)
        except ProtocolError:
            self.transport.close()
            return
        out = []
        for frame in frames:
            cmd = frame.command
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
            elif t == CommandType.CLOSE_PRODUCER:
                r.type = CommandType.SUCCESS
                r.success.request_id = cmd.close_producer.request_id
            elif t == CommandType.PING:
                r.type = CommandType.PONG
                r.pong.SetInParent()
            else:
                continue
            out.append(encode_command(r))
        if out:
            self.transport.writelines(out)


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
