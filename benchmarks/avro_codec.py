"""Avro, hand-written against the libraries: client/schema/avro_codec.py against fastavro (and the
official pulsar-client's AvroSchema, which calls fastavro), and protocol/avro.py's resolution check
against Apache avro's ``avro.compatibility`` (issue 22: adopt a library where it is at least as fast).

The codec is on the hot path (one encode per message sent with an AVRO schema, one decode per
message received): the figure that decides is us per record, encode and decode, for a flat record
of 8 fields, a nested record with an array and a map, and a resolving decode (the writer has one
more field than the reader). Every implementation's bytes are checked equal to magnetar's and every
decoded value equal to the record first. The compatibility check is on the broker's schema
registration path (not per message): per check time over 20 schema pairs, whether the two agree on
each, and what importing ``avro`` costs (import time in a fresh interpreter, installed size).

Figures are the measuring thread's CPU time (on a shared machine wall time would count the waits for
a core); the implementations alternate round by round, and the median of the rounds is reported.
``avro`` is not a magnetar dependency: ``pip install avro`` into the venv to get its column.

usage: python benchmarks/avro_codec.py [--records 20000] [--checks 2000] [--rounds 5] [--out FILE]
"""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import fastavro

from magnetar.client.schema.avro_codec import AvroCodec
from magnetar.protocol import avro as mavro

FLAT = {
    "type": "record", "name": "Flat", "namespace": "bench",
    "fields": [
        {"name": "id", "type": "int"},
        {"name": "ts", "type": "long"},
        {"name": "name", "type": "string"},
        {"name": "score", "type": "double"},
        {"name": "active", "type": "boolean"},
        {"name": "blob", "type": "bytes"},
        {"name": "note", "type": ["null", "string"], "default": None},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["A", "B", "C"]}},
    ],
}
FLAT_VALUE = {"id": 42, "ts": 1_700_000_000_123, "name": "sensor-17", "score": 3.25, "active": True,
              "blob": b"\x00\x01payload-bytes", "note": "calibrated", "kind": "B"}
NESTED = {
    "type": "record", "name": "Order", "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "customer", "type": {"type": "record", "name": "Customer", "fields": [
            {"name": "name", "type": "string"}, {"name": "email", "type": ["null", "string"], "default": None}]}},
        {"name": "lines", "type": {"type": "array", "items": {"type": "record", "name": "Line", "fields": [
            {"name": "sku", "type": "string"}, {"name": "qty", "type": "int"}, {"name": "price", "type": "double"}]}}},
        {"name": "tags", "type": {"type": "map", "values": "string"}},
    ],
}
NESTED_VALUE = {"id": 9_000_001, "customer": {"name": "Ada", "email": "ada@example.com"},
                "lines": [{"sku": f"SKU-{i}", "qty": i + 1, "price": 9.5 * (i + 1)} for i in range(4)],
                "tags": {"channel": "web", "region": "eu", "priority": "high"}}
WRITER = {**FLAT, "fields": [*FLAT["fields"], {"name": "extra", "type": "string", "default": ""}]}
WRITER_VALUE = {**FLAT_VALUE, "extra": "only the writer has this"}


class Fast:
    """fastavro's schemaless writer and reader over a schema parsed once."""

    def __init__(self, schema: dict, writer: dict | None = None) -> None:
        self.reader = fastavro.parse_schema(schema)
        self.writer = fastavro.parse_schema(writer) if writer is not None else self.reader

    def encode(self, value: Any) -> bytes:
        out = io.BytesIO()
        fastavro.schemaless_writer(out, self.writer, value)
        return out.getvalue()

    def decode(self, data: bytes) -> Any:
        if self.writer is self.reader:
            return fastavro.schemaless_reader(io.BytesIO(data), self.reader)
        return fastavro.schemaless_reader(io.BytesIO(data), self.writer, self.reader)


class Official:
    """pulsar-client's AvroSchema over a schema definition (its encode and its resolving decode)."""

    def __init__(self, schema: dict, writer: dict | None = None) -> None:
        from pulsar.schema import AvroSchema

        self.schema = AvroSchema(None, schema_definition=json.loads(json.dumps(schema)))
        self.writer = json.loads(json.dumps(writer if writer is not None else schema))
        self.encoder = AvroSchema(None, schema_definition=json.loads(json.dumps(self.writer))) if writer else self.schema

    def encode(self, value: Any) -> bytes:
        return self.encoder.encode(value)

    def decode(self, data: bytes) -> Any:
        return self.schema._decode_bytes(data, self.writer)  # what decode_message runs with the writer's schema


class Magnetar:
    """client/schema/avro_codec.py's AvroCodec (a resolving decoder when the writer differs)."""

    def __init__(self, schema: dict, writer: dict | None = None) -> None:
        self.codec = AvroCodec(schema)
        self.writer = AvroCodec(writer) if writer is not None else self.codec
        self.decoder = self.codec.resolving(writer) if writer is not None else self.codec

    def encode(self, value: Any) -> bytes:
        return self.writer.encode(value)

    def decode(self, data: bytes) -> Any:
        return self.decoder.decode(data)


CASES = {  # name -> (reader schema, writer schema or None, value written, value read)
    "flat 8 fields": (FLAT, None, FLAT_VALUE, FLAT_VALUE),
    "nested array+map": (NESTED, None, NESTED_VALUE, NESTED_VALUE),
    "resolving (writer +1 field)": (FLAT, WRITER, WRITER_VALUE, FLAT_VALUE),
}


def per_op_us(fn: Callable[[Any], Any], arg: Any, n: int) -> float:
    """``n`` calls of ``fn(arg)``, in us per call of the measuring thread's CPU time."""
    start = time.thread_time_ns()
    for _ in range(n):
        fn(arg)
    return (time.thread_time_ns() - start) / n / 1000


def codec_rows(records: int, rounds: int) -> dict[str, dict[str, float]]:
    """us per record of each implementation's encode and decode, per case (median of the rounds)."""
    makers: dict[str, type] = {"magnetar": Magnetar, "fastavro": Fast}
    try:
        import pulsar.schema  # noqa: F401

        makers["pulsar-client"] = Official
    except ImportError:
        pass
    rows = {}
    for case, (schema, writer, written, read) in CASES.items():
        impls = {name: make(schema, writer) for name, make in makers.items()}
        data = impls["magnetar"].encode(written)
        for name, impl in impls.items():
            assert impl.encode(written) == data, f"{name} encodes {case} differently"
            assert impl.decode(data) == read, f"{name} decodes {case} differently"
        samples: dict[str, list[float]] = {}
        for _ in range(rounds):
            for name, impl in impls.items():
                samples.setdefault(f"{name} encode us", []).append(per_op_us(impl.encode, written, records))
                samples.setdefault(f"{name} decode us", []).append(per_op_us(impl.decode, data, records))
        row = {key: round(statistics.median(values), 2) for key, values in samples.items()}
        for name in impls:
            if name != "magnetar":
                for op in ("encode", "decode"):
                    row[f"{name} / magnetar {op}"] = round(row[f"{name} {op} us"] / row[f"magnetar {op} us"], 2)
        rows[case] = row
    return rows


def _rec(name: str, *fields: dict) -> dict:
    return {"type": "record", "name": name, "fields": list(fields)}


def _f(name: str, type_: Any, **extra: Any) -> dict:
    return {"name": name, "type": type_, **extra}


_V1 = _rec("User", _f("id", "long"), _f("name", "string"))
_COLOR = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}
_COLOR3 = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE"]}
PAIRS: list[tuple[str, Any, Any]] = [  # (what, reader, writer)
    ("same record", _V1, _V1),
    ("reader adds field with default", _rec("User", _f("id", "long"), _f("name", "string"), _f("age", "int", default=0)), _V1),
    ("reader adds field without default", _rec("User", _f("id", "long"), _f("name", "string"), _f("age", "int")), _V1),
    ("reader drops a field", _rec("User", _f("id", "long")), _V1),
    ("int read as long", _rec("R", _f("x", "long")), _rec("R", _f("x", "int"))),
    ("long read as int", _rec("R", _f("x", "int")), _rec("R", _f("x", "long"))),
    ("int read as double", _rec("R", _f("x", "double")), _rec("R", _f("x", "int"))),
    ("string read as bytes", _rec("R", _f("x", "bytes")), _rec("R", _f("x", "string"))),
    ("string read as int", _rec("R", _f("x", "int")), _rec("R", _f("x", "string"))),
    ("enum gains a symbol (reader)", _rec("R", _f("c", _COLOR3)), _rec("R", _f("c", _COLOR))),
    ("enum loses a symbol (reader)", _rec("R", _f("c", _COLOR)), _rec("R", _f("c", _COLOR3))),
    ("field becomes optional", _rec("R", _f("x", ["null", "string"], default=None)), _rec("R", _f("x", "string"))),
    ("optional becomes required", _rec("R", _f("x", "string")), _rec("R", _f("x", ["null", "string"], default=None))),
    ("union gains a branch", _rec("R", _f("x", ["null", "string", "int"])), _rec("R", _f("x", ["null", "string"]))),
    ("array item promoted", _rec("R", _f("a", {"type": "array", "items": "long"})), _rec("R", _f("a", {"type": "array", "items": "int"}))),
    ("map value incompatible", _rec("R", _f("m", {"type": "map", "values": "int"})), _rec("R", _f("m", {"type": "map", "values": "string"}))),
    ("record renamed", _rec("Other", _f("id", "long"), _f("name", "string")), _V1),
    ("fixed size changed", {"type": "fixed", "name": "F", "size": 8}, {"type": "fixed", "name": "F", "size": 4}),
    ("nested record field added", _rec("O", _f("c", _rec("C", _f("n", "string"), _f("e", "string", default="")))),
     _rec("O", _f("c", _rec("C", _f("n", "string"))))),
    ("recursive list, item promoted", _rec("Node", _f("v", "long"), _f("next", ["null", "Node"], default=None)),
     _rec("Node", _f("v", "int"), _f("next", ["null", "Node"], default=None))),
]


def compat_rows(checks: int, rounds: int) -> dict[str, Any]:
    """Agreement of the two checks on PAIRS, and us per check (parse included, as the broker runs it)."""
    from avro import compatibility, schema

    def apache(reader: str, writer: str) -> bool:
        result = compatibility.ReaderWriterCompatibilityChecker().get_compatibility(schema.parse(reader), schema.parse(writer))
        return result.compatibility is compatibility.SchemaCompatibilityType.compatible

    def ours(reader: str, writer: str) -> bool:
        return not mavro.resolution_errors(mavro.parse(reader), mavro.parse(writer))

    texts = [(what, json.dumps(r), json.dumps(w)) for what, r, w in PAIRS]
    agreement = {what: {"magnetar": ours(r, w), "avro": apache(r, w)} for what, r, w in texts}
    samples: dict[str, list[float]] = {"magnetar us": [], "avro us": []}
    n = max(1, checks // len(texts))
    for _ in range(rounds):
        for name, check in (("magnetar us", ours), ("avro us", apache)):
            start = time.thread_time_ns()
            for _ in range(n):
                for _, r, w in texts:
                    check(r, w)
            samples[name].append((time.thread_time_ns() - start) / (n * len(texts)) / 1000)
    timing = {key: round(statistics.median(values), 1) for key, values in samples.items()}
    timing["avro / magnetar"] = round(timing["avro us"] / timing["magnetar us"], 2)
    return {"per check (parse of both schemas + check, mean over the pairs)": timing,
            "disagreements": [what for what, v in agreement.items() if v["magnetar"] != v["avro"]],
            "pairs": agreement, "import": import_cost(rounds)}


def import_cost(rounds: int) -> dict[str, Any]:
    """ms each import adds to a fresh interpreter (``-X importtime``: the cumulative times of the
    top-level imports beyond the bare interpreter's, best of the rounds), and installed sizes."""
    def top_level_us(code: str) -> dict[str, int]:
        done = subprocess.run([sys.executable, "-X", "importtime", "-c", code], check=True, timeout=60,
                              capture_output=True, text=True)
        out = {}
        for line in done.stderr.splitlines():
            parts = line.split("|")
            if len(parts) == 3 and parts[1].strip().isdigit() and not parts[2].startswith("  "):
                out[parts[2].strip()] = int(parts[1])
        return out

    bare = top_level_us("pass")
    out: dict[str, Any] = {}
    for label in ("avro.compatibility", "magnetar.protocol.avro", "magnetar.client.schema.avro_codec", "fastavro"):
        best = min(sum(us for name, us in top_level_us(f"import {label}").items() if name not in bare)
                   for _ in range(rounds))
        out[f"{label} import ms"] = round(best / 1000, 1)
    for dist in ("avro", "fastavro"):
        files = importlib.metadata.files(dist) or []
        out[f"{dist} installed kB"] = round(sum(Path(str(f.locate())).stat().st_size for f in files
                                                if Path(str(f.locate())).is_file()) / 1024)
    out["magnetar.protocol.avro kB"] = round(Path(mavro.__file__).stat().st_size / 1024)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--records", type=int, default=20_000, help="records per round, case, implementation and op")
    parser.add_argument("--checks", type=int, default=2_000, help="compatibility checks per round and implementation")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--out", type=Path, help="also write the JSON here")
    args = parser.parse_args()
    versions = {d: importlib.metadata.version(d) for d in ("fastavro", "pulsar-client")}
    import magnetar.client.schema.avro_codec as codec_module

    result: dict[str, Any] = {"benchmark": "Avro codec and compatibility check", "python": sys.version.split()[0],
                              "magnetar codec": (codec_module.__doc__ or "").split("\n")[0],
                              "records": args.records, "checks": args.checks, "rounds": args.rounds,
                              "codec us per record": codec_rows(args.records, args.rounds)}
    try:
        versions["avro"] = importlib.metadata.version("avro")
        result["compatibility"] = compat_rows(args.checks, args.rounds)
    except importlib.metadata.PackageNotFoundError:
        result["compatibility"] = "avro not installed (pip install avro)"
    result["versions"] = versions
    text = json.dumps(result, indent=2)
    print(text)
    if args.out:
        args.out.write_text(text + "\n")


if __name__ == "__main__":
    main()
