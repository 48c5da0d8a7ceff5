"""Encoding and decoding the hot commands, side by side across source trees; the hand-written fast paths
against protobuf.

What a change to the wire schema's owner must not slow down: per operation, the cost of building
and serializing (``encode``) and of parsing and reading a field (``decode``) a BaseCommand SEND,
MESSAGE and ACK (one id, and 100 ids) and a producer's MessageMetadata, through the schema's
protobuf classes; the import of ``magnetar.protocol.schema`` in a fresh process; and the
hand-written fast paths (MESSAGE head, SEND_RECEIPT, ACK frame, SingleMessageMetadata) next to
the protobuf code they stand for, in the same process. Each tree runs in child processes
(PYTHONPATH=its src), the trees alternated round by round so they share the machine's load; the
figure is the best of the rounds (ns per operation, of the measuring thread's CPU time: on a shared
machine wall time would count the waits for a core). Bounded by ``--calls`` x ``--rounds``.

usage: python benchmarks/wire_codec.py [--calls 20000] [--rounds 5] [--compare main=/work/main/src ...]

Prints JSON (and writes it to --out if given): per tree and operation the best ns, and per
--compare tree its ratio to this tree (this / other: above 1 is slower here).
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"


def _best_ns(fn: Callable[[], Any], calls: int, repeats: int = 3) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.thread_time_ns()
        for _ in range(calls):
            fn()
        best = min(best, (time.thread_time_ns() - start) / calls)
    return round(best, 1)


def _commands(calls: int) -> dict[str, float]:
    from magnetar.protocol.schema import BaseCommand, KeyValue, MessageMetadata

    def send() -> bytes:
        cmd = BaseCommand(type=6)
        s = cmd.send
        s.producer_id, s.sequence_id, s.num_messages = 3, 1_234_567, 100
        return cmd.SerializeToString()

    def message() -> bytes:
        cmd = BaseCommand(type=9)
        m = cmd.message
        m.consumer_id, m.redelivery_count = 7, 0
        m.message_id.ledger_id, m.message_id.entry_id = 42, 1_234_567
        return cmd.SerializeToString()

    def ack(n: int) -> Callable[[], bytes]:
        def encode() -> bytes:
            cmd = BaseCommand(type=10)
            a = cmd.ack
            a.consumer_id, a.ack_type = 7, 0
            for i in range(n):
                mid = a.message_id.add()
                mid.ledger_id, mid.entry_id = 42, 1_000_000 + i
            return cmd.SerializeToString()
        return encode

    def metadata() -> bytes:
        meta = MessageMetadata(producer_name="standalone-0-17", sequence_id=1_234_567, publish_time=1_764_000_000_000,
                               partition_key="key-17", num_messages_in_batch=100, compression=1, uncompressed_size=12_800)
        meta.properties.append(KeyValue(key="a", value="1"))
        return meta.SerializeToString()

    out: dict[str, float] = {}
    cases = {"send": (send, lambda c: c.send.sequence_id), "message": (message, lambda c: c.message.message_id.entry_id),
             "ack_1": (ack(1), lambda c: c.ack.message_id[0].entry_id),
             "ack_100": (ack(100), lambda c: c.ack.message_id[99].entry_id)}
    parse = BaseCommand.FromString
    for name, (encode, read) in cases.items():
        wire = encode()
        per = max(1, calls // 50) if name == "ack_100" else calls
        out[f"{name}.encode"] = _best_ns(encode, per)
        out[f"{name}.decode"] = _best_ns(lambda w=wire, r=read: r(parse(w)), per)
    wire = metadata()
    out["metadata.encode"] = _best_ns(metadata, calls)
    out["metadata.decode"] = _best_ns(lambda: MessageMetadata.FromString(wire).sequence_id, calls)
    return out


def _fast_paths(calls: int) -> dict[str, float]:
    """The hand-written writers and the protobuf code each stands for (this tree's layout first)."""
    from magnetar.protocol import commands
    from magnetar.protocol.ack_frame import encode_ack_frame
    from magnetar.protocol.framing import encode_command, encode_entry_header
    from magnetar.protocol.schema import BaseCommand, SingleMessageMetadata

    try:
        from magnetar.protocol.hot_frames import message_frame_head, send_receipt_frame
    except ImportError:  # the layout before the fast paths moved into protocol/
        from magnetar.broker.session.hot_frames import message_frame_head, send_receipt_frame  # type: ignore
    try:
        from magnetar.protocol.single_metadata import encode_single_metadata
    except ImportError:
        from magnetar.client.core.sends import encode_single_metadata  # type: ignore

    def protobuf_head() -> bytes:
        cmd = BaseCommand(type=9)
        m = cmd.message
        m.consumer_id = 7
        m.message_id.ledger_id, m.message_id.entry_id = 42, 1_234_567
        return encode_entry_header(cmd, 300, 0xDEADBEEF)

    def protobuf_ack() -> bytes:
        cmd = BaseCommand(type=10)
        cmd.ack.consumer_id = 7
        for i in range(100):
            mid = cmd.ack.message_id.add()
            mid.ledger_id, mid.entry_id = 42, 1_000_000 + i
        return encode_command(cmd)

    acks = {(42, 1_000_000 + i): None for i in range(100)}
    return {
        **_readers(calls),
        "message_head.hand": _best_ns(lambda: message_frame_head(7, 42, 1_234_567, -1, 0, 300, 0xDEADBEEF), calls),
        "message_head.protobuf": _best_ns(protobuf_head, calls),
        "send_receipt.hand": _best_ns(lambda: send_receipt_frame(3, 1_234_567, 0, 42, 1_234_567), calls),
        "send_receipt.protobuf": _best_ns(
            lambda: encode_command(commands.send_receipt(3, 1_234_567, 0, 42, 1_234_567)), calls),
        "ack_frame_100.hand": _best_ns(lambda: encode_ack_frame(7, 0, acks), max(1, calls // 50)),
        "ack_frame_100.protobuf": _best_ns(protobuf_ack, max(1, calls // 50)),
        "single_metadata.hand": _best_ns(lambda: encode_single_metadata(300, None, "key-17", None, 0, 1_234_567), calls),
        "single_metadata.protobuf": _best_ns(
            lambda: SingleMessageMetadata(payload_size=300, partition_key="key-17", sequence_id=1_234_567).SerializeToString(),
            calls),
    }


def _readers(calls: int) -> dict[str, float]:
    """The hand-written readers of a consumer's entries against the generated decoder (trees
    without protocol/batch_reading.py have none of these figures)."""
    try:
        from magnetar.protocol.batch_reading import (
            is_plain_metadata,
            plain_metadata_head,
            split_batch_payload,
        )
    except ImportError:
        return {}
    from magnetar.protocol.batch import BatchMessage, encode_batch
    from magnetar.protocol.schema import MessageMetadata, SingleMessageMetadata

    unpack = struct.Struct(">I").unpack_from
    # 100 messages of 100 B as the official producer batches them (payload_size and sequence_id)
    batch = encode_batch([BatchMessage(b"x" * 100, sequence_id=i) for i in range(100)])

    def generated_split() -> list:
        out, pos = [], 0
        for _ in range(100):
            (n,) = unpack(batch, pos)
            single = SingleMessageMetadata.FromString(batch[pos + 4 : pos + 4 + n])
            pos += 4 + n
            out.append((single, batch[pos : pos + single.payload_size]))
            pos += single.payload_size
        return out

    meta = MessageMetadata(producer_name="standalone-0-7", sequence_id=1_234_567, publish_time=1_700_000_000_000,
                           uncompressed_size=100).SerializeToString()
    head = plain_metadata_head(meta)

    def generated_plain() -> bool:
        parsed = MessageMetadata.FromString(meta)
        return (not parsed.HasField("num_messages_in_batch") and parsed.num_chunks_from_msg <= 1
                and not parsed.compression and not parsed.encryption_keys)

    few = max(1, calls // 50)
    return {
        "batch_split_100.hand": _best_ns(lambda: split_batch_payload(batch, 100), few),
        "batch_split_100.protobuf": _best_ns(generated_split, few),
        "plain_metadata.hand": _best_ns(lambda: is_plain_metadata(meta, head), calls),
        "plain_metadata.protobuf": _best_ns(generated_plain, calls),
    }


def child(calls: int) -> dict[str, float]:
    """One tree's figures, in this (fresh) process."""
    start = time.thread_time_ns()
    import magnetar.protocol.schema  # noqa: F401 - the import is what is measured

    out = {"import_schema_ms": round((time.thread_time_ns() - start) / 1e6, 2)}
    out.update(_commands(calls))
    out.update(_fast_paths(calls))
    return out


def _run_tree(src: Path, calls: int) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": str(src)}
    result = subprocess.run([sys.executable, __file__, "--child", "--calls", str(calls)], env=env,
                            capture_output=True, text=True, check=True, timeout=600)
    return json.loads(result.stdout)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=20_000, help="operations per measurement (100-id ACKs: a 50th)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--compare", action="append", default=[], metavar="NAME=SRC", help="another source tree")
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.calls)))
        return
    trees = {"this": SRC, **{name: Path(src) for name, _, src in (c.partition("=") for c in args.compare)}}
    best: dict[str, dict[str, float]] = {name: {} for name in trees}
    for _ in range(args.rounds):
        for name, src in trees.items():
            for op, ns in _run_tree(src, args.calls).items():
                best[name][op] = min(ns, best[name].get(op, float("inf")))
    report: dict[str, Any] = {"benchmark": "wire codec, best ns per operation", "calls": args.calls,
                              "rounds": args.rounds, "trees": {n: str(s) for n, s in trees.items()}, "best": best}
    for name in trees:
        if name != "this":
            report[f"this / {name}"] = {op: round(best["this"][op] / ns, 2) for op, ns in best[name].items() if ns}
    fast = best["this"]
    report["hand / protobuf (this)"] = {
        op[: -len(".hand")]: round(fast[op] / fast[op[: -len(".hand")] + ".protobuf"], 2) for op in fast if op.endswith(".hand")
    }
    text = json.dumps(report, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
