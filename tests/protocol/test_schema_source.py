"""The vendored PulsarApi.proto owns the wire schema: schema.py is the generator's output, and the
enumerations of enums.py carry the .proto's values."""

from __future__ import annotations

import importlib.util
import sys
from enum import IntEnum
from pathlib import Path
from types import ModuleType

import pytest

from magnetar.protocol import enums, schema

ROOT = Path(__file__).resolve().parents[2]


def _generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gen_wire_schema", ROOT / "tools/gen_wire_schema.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("gen_wire_schema", module)
    spec.loader.exec_module(module)
    return module


GEN = _generator()
PROTO = GEN._Parser(GEN.PROTO.read_text(encoding="utf-8")).parse()


def test_schema_py_is_the_generators_output_byte_for_byte() -> None:
    checked_in = (ROOT / "src/magnetar/protocol/schema.py").read_bytes()
    assert GEN.render(GEN.PROTO.read_text(encoding="utf-8")).encode() == checked_in
    assert GEN.main(["--check"]) == 0


def test_every_field_is_the_protos_field_by_number_and_name() -> None:
    for name, cls in schema.MESSAGES.items():
        fields = {f.number: f for f in PROTO.messages[name].fields}
        for desc in cls.DESCRIPTOR.fields:
            source = fields[desc.number]
            assert desc.name == GEN.RENAMES.get((name, source.name), GEN.snake_case(source.name)), (name, desc.name)
            assert desc.is_repeated == (source.label == "repeated"), (name, desc.name)


def test_required_fields_are_optional_and_enums_are_numbers() -> None:
    # a CommandSend without its required sequence_id parses (the codec answers the error)
    send = schema.MESSAGES["CommandSend"].FromString(b"\x08\x01")
    assert send.producer_id == 1 and not send.HasField("sequence_id")
    # an ack_type this schema's enum does not list is read as the number the peer sent
    ack = schema.MESSAGES["CommandAck"].FromString(b"\x08\x01\x10\x07")
    assert ack.ack_type == 7


def test_commands_magnetar_does_not_speak_stay_unknown_fields() -> None:
    assert "watchTopicList" not in [f.name for f in schema.BaseCommand.DESCRIPTOR.fields]
    assert "watch_topic_list" not in [f.name for f in schema.BaseCommand.DESCRIPTOR.fields]
    # BaseCommand{type=64, watchTopicList(64)={request_id=1}} is kept as it came
    wire = b"\x08\x40\x82\x04\x02\x08\x01"
    assert schema.BaseCommand.FromString(wire).SerializeToString() == wire


def test_the_generator_reads_defaults_oneofs_and_nested_enums() -> None:
    proto = GEN._Parser(
        """
        syntax = "proto2";
        enum Color { RED = 0; BLUE = 2; }
        message M {
            enum Kind { A = 0; B = 5; }
            required uint64 ledgerId = 1; // a comment
            optional Kind kind = 2 [default = B];
            /* block
               comment */
            optional Color color = 3 [default = BLUE];
            optional int32 partition = 4 [default = -1];
            oneof event { string text = 5; M child = 6; }
        }
        """
    ).parse()
    fields = {f.name: f for f in proto.messages["M"].fields}
    assert [(f.label, f.number) for f in fields.values()] == [
        ("required", 1), ("optional", 2), ("optional", 3), ("optional", 4), ("optional", 5), ("optional", 6)
    ]
    msg = proto.messages["M"]
    assert GEN._default(fields["kind"], msg.enums["Kind"]) == "5"
    assert GEN._default(fields["color"], proto.enums["Color"]) == "2"
    assert GEN._default(fields["partition"], None) == "-1"
    assert GEN.snake_case("ledgerId") == "ledger_id"
    assert GEN.snake_case("blockedConsumerOnUnackedMsgs") == "blocked_consumer_on_unacked_msgs"
    assert GEN.snake_case("partition_key_b64_encoded") == "partition_key_b64_encoded"


def _proto_enum(path: str) -> dict[str, int]:
    message, _, enum = path.rpartition(".")
    return PROTO.messages[message].enums[enum] if message else PROTO.enums[enum]


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (enums.CommandType, "BaseCommand.Type"),
        (enums.ServerError, "ServerError"),
        (enums.SubType, "CommandSubscribe.SubType"),
        (enums.InitialPosition, "CommandSubscribe.InitialPosition"),
        (enums.AckType, "CommandAck.AckType"),
        (enums.CompressionType, "CompressionType"),
        (enums.ProducerAccessMode, "ProducerAccessMode"),
        (enums.KeySharedMode, "KeySharedMode"),
        (enums.LookupType, "CommandLookupTopicResponse.LookupType"),
        (enums.PartitionedMetadataResult, "CommandPartitionedTopicMetadataResponse.LookupType"),
        (enums.TopicsMode, "CommandGetTopicsOfNamespace.Mode"),
        (enums.TxnAction, "TxnAction"),
    ],
)
def test_enums_carry_the_protos_names_and_values(ours: type[IntEnum], theirs: str) -> None:
    values = _proto_enum(theirs)
    for member in ours:
        assert values[member.name] == member.value, (ours.__name__, member.name)


def test_schema_types_are_the_protos() -> None:
    assert sorted(t.value for t in enums.SchemaType) == sorted(_proto_enum("Schema.Type").values())
