"""Regenerate official_client_entries.json: what the official Python client sends, per codec.

Not a test (it opens sockets): run it by hand with ``.venv/bin/python
tests/protocol/data/capture_official_client.py [--write]``. It starts a stub broker built on
magnetar.protocol, produces single and batched messages with every compression codec through
the official ``pulsar`` client, checks that magnetar opens each SEND entry to the payloads the
client was given, then delivers entries built by magnetar to an official consumer and checks it
receives them. With ``--write`` (and everything agreeing) it rewrites the JSON fixture.
"""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from pathlib import Path

import pulsar

from magnetar.protocol.batch import BatchMessage, build_entry, open_entry
from magnetar.protocol.enums import CommandType, CompressionType, LookupType
from magnetar.protocol.framing import FrameDecoder, encode_command, encode_payload_command, sub_command
from magnetar.protocol.schema import BaseCommand, MessageMetadata

OUTPUT = Path(__file__).with_name("official_client_entries.json")


class StubBroker:
    """Just enough of a broker for one producer or consumer at a time."""

    def __init__(self) -> None:
        self.sends: list[dict[str, object]] = []
        self.to_deliver: list[bytes] = []
        self.streams: list[bytearray] = []
        self._server = socket.create_server(("127.0.0.1", 0))
        self.url = f"pulsar://127.0.0.1:{self._server.getsockname()[1]}"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            conn, _ = self._server.accept()
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _reply(
        self, frame_command: BaseCommand, conn: socket.socket, state: dict[str, int]
    ) -> BaseCommand | None:
        t = frame_command.type
        sub = sub_command(frame_command)
        out = BaseCommand()
        if t == CommandType.CONNECT:
            out.type = CommandType.CONNECTED
            out.connected.server_version = "stub"
            out.connected.protocol_version = 20
            out.connected.max_message_size = 5 * 1024 * 1024
        elif t == CommandType.PARTITIONED_METADATA:
            out.type = CommandType.PARTITIONED_METADATA_RESPONSE
            out.partition_metadata_response.request_id = sub.request_id
            out.partition_metadata_response.partitions = 0
            out.partition_metadata_response.response = 0
        elif t == CommandType.LOOKUP:
            out.type = CommandType.LOOKUP_RESPONSE
            out.lookup_topic_response.request_id = sub.request_id
            out.lookup_topic_response.response = LookupType.Connect
            out.lookup_topic_response.broker_service_url = self.url
            out.lookup_topic_response.authoritative = True
        elif t == CommandType.PRODUCER:
            out.type = CommandType.PRODUCER_SUCCESS
            out.producer_success.request_id = sub.request_id
            out.producer_success.producer_name = "stub-producer"
            out.producer_success.last_sequence_id = -1
        elif t == CommandType.SEND:
            out.type = CommandType.SEND_RECEIPT
            out.send_receipt.producer_id = sub.producer_id
            out.send_receipt.sequence_id = sub.sequence_id
            out.send_receipt.message_id.ledger_id = 1
            out.send_receipt.message_id.entry_id = state["entry_id"]
            state["entry_id"] += 1
        elif t == CommandType.SUBSCRIBE:
            state["consumer_id"] = sub.consumer_id
            out.type = CommandType.SUCCESS
            out.success.request_id = sub.request_id
        elif t == CommandType.FLOW:
            for i, entry in enumerate(self.to_deliver):
                message = BaseCommand(type=CommandType.MESSAGE)
                message.message.consumer_id = state["consumer_id"]
                message.message.message_id.ledger_id = 2
                message.message.message_id.entry_id = i
                conn.sendall(encode_payload_command(message, entry))
            self.to_deliver.clear()
            return None
        elif t == CommandType.PING:
            out.type = CommandType.PONG
            out.pong.SetInParent()
        elif t in (CommandType.CLOSE_PRODUCER, CommandType.CLOSE_CONSUMER):
            out.type = CommandType.SUCCESS
            out.success.request_id = sub.request_id
        else:
            return None
        return out

    def _serve(self, conn: socket.socket) -> None:
        decoder = FrameDecoder(10 * 1024 * 1024)
        stream = bytearray()
        self.streams.append(stream)
        state = {"entry_id": 0, "consumer_id": 0}
        with conn:
            while data := conn.recv(65536):
                stream += data
                for frame in decoder.feed(data):
                    if frame.type == CommandType.SEND:
                        assert frame.checksum_ok()
                        self.sends.append(
                            {"num_messages": frame.command.send.num_messages, "entry": frame.entry}
                        )
                    reply = self._reply(frame.command, conn, state)
                    if reply is not None:
                        conn.sendall(encode_command(reply))


def capture(broker: StubBroker, client: pulsar.Client) -> list[dict[str, object]]:
    """Produce with every codec, single and batched; return the fixture records."""
    codecs = {
        "NONE": pulsar.CompressionType.NONE,
        "LZ4": pulsar.CompressionType.LZ4,
        "ZLIB": pulsar.CompressionType.ZLib,
        "ZSTD": pulsar.CompressionType.ZSTD,
        "SNAPPY": pulsar.CompressionType.SNAPPY,
    }
    text = "Pulsar interop payload. " * 20
    records: list[dict[str, object]] = []
    for name, codec in codecs.items():
        producer = client.create_producer(f"t-{name}", compression_type=codec, batching_enabled=False)
        first = len(broker.sends)
        payload = (text + name).encode()
        producer.send(payload, properties={"k": "v"}, partition_key="pk-1", event_timestamp=1234)
        records.append({"codec": name, "batch": False, "payloads": [payload.hex()], **_sent(broker, first)})
        producer.close()

        producer = client.create_producer(
            f"tb-{name}",
            compression_type=codec,
            batching_enabled=True,
            batching_max_publish_delay_ms=200,
            batching_max_messages=3,
        )
        first = len(broker.sends)
        payloads = [f"{text} #0 {name}".encode(), b"", f"{text} #2 {name}".encode()]
        for i, payload in enumerate(payloads):
            producer.send_async(
                payload,
                None,
                properties={"idx": str(i)},
                partition_key=f"key-{i}" if i != 2 else None,
                ordering_key="ok" if i == 2 else None,
            )
        producer.flush()
        time.sleep(0.3)
        records.append(
            {"codec": name, "batch": True, "payloads": [p.hex() for p in payloads], **_sent(broker, first)}
        )
        producer.close()
    return records


def _sent(broker: StubBroker, index: int) -> dict[str, object]:
    send = broker.sends[index]
    return {"entry": bytes(send["entry"]).hex(), "num_messages": send["num_messages"]}  # type: ignore[arg-type]


def deliver(broker: StubBroker, client: pulsar.Client) -> bool:
    """Hand entries built by magnetar to an official consumer; True when it receives them all."""
    expected: list[bytes] = []
    for codec in CompressionType:
        meta = MessageMetadata(producer_name="magnetar", sequence_id=1, publish_time=int(time.time() * 1000))
        payload = f"single {codec.name} ".encode() * 30
        broker.to_deliver.append(build_entry(meta, payload, codec))
        expected.append(payload)
        batch = [
            BatchMessage(
                f"batch {codec.name} {i} ".encode() * 20, {"i": str(i)}, partition_key=f"k{i}", sequence_id=i
            )
            for i in range(3)
        ]
        broker.to_deliver.append(build_entry(meta, batch, codec))
        expected.extend(m.payload for m in batch)
    consumer = client.subscribe("consume-me", "sub")
    received = [consumer.receive(timeout_millis=5000).data() for _ in expected]
    return received == expected


def main() -> int:
    """Capture, cross-check, and optionally write the fixture."""
    broker = StubBroker()
    client = pulsar.Client(broker.url, operation_timeout_seconds=5)
    records = capture(broker, client)
    ok = True
    for record in records:
        _, messages = open_entry(bytes.fromhex(str(record["entry"])))
        good = [p.hex() for _, p in messages] == record["payloads"]
        ok &= good
        print(record["codec"], "batch" if record["batch"] else "single", "ok" if good else "MISMATCH")
    accepted = deliver(broker, client)
    print("official consumer received magnetar's entries:", accepted)
    ok &= accepted
    stream = bytes(broker.streams[0])
    client.close()
    if ok and "--write" in sys.argv:
        document = {
            "client": f"pulsar-client (Python) {pulsar.__version__}",
            "entries": records,
            "producer_connection_stream": stream.hex(),
        }
        OUTPUT.write_text(json.dumps(document, indent=1) + "\n", encoding="utf-8")
        print("wrote", OUTPUT)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
