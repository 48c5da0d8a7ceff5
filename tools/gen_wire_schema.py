"""Generate src/magnetar/protocol/schema.py from the vendored src/magnetar/protocol/PulsarApi.proto.

The .proto is the one source of the wire schema; schema.py is this script's output, checked in,
and tests/protocol/test_schema_source.py fails when the two disagree. Run from the project root:

    python tools/gen_wire_schema.py            # rewrite schema.py
    python tools/gen_wire_schema.py --check    # exit 1 when schema.py is not this script's output

What the generation does to the .proto, and why (everything else is taken as it is):
  * Only the messages magnetar speaks (``MESSAGES`` below and what they refer to), and only
    the BaseCommand members whose command is among them: a command magnetar does not know
    stays an unknown field, kept and re-sent as it came.
  * Field names in snake_case (``ledgerId`` -> ``ledger_id``), one naming style for the code.
  * Every field ``optional`` (or ``repeated``): a missing required field is the codec's error
    to report (with the right ServerError), not a parse failure of the whole frame.
  * Enumerations as ``int32``: identical on the wire, and a value this schema does not list
    (a newer peer's) is read as a number instead of being moved to the unknown fields; the
    values are the IntEnums of magnetar.protocol.enums. Enum defaults become their numbers.
"""

from __future__ import annotations

import argparse
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PROTO = ROOT / "src/magnetar/protocol/PulsarApi.proto"
OUTPUT = ROOT / "src/magnetar/protocol/schema.py"
#: the descriptor's own file and package names (ProtobufNativeSchema shows them to brokers)
FILE_NAME = "magnetar_wire.proto"
PACKAGE = "magnetar.wire"

#: field names that are not the .proto's in snake_case, with the reason
RENAMES = {
    # the .proto of 2026 renamed txn_ttl_seconds to txn_ttl_millis (the value always was in
    # milliseconds); the broker and the client still spell it as before
    ("CommandNewTxn", "txn_ttl_millis"): "txn_ttl_seconds",
}

#: schema.py's module-level names for the message classes code imports directly
CLASS_NAMES = (
    "KeyValue", "KeyLongValue", "IntRange", "Schema", "MessageIdData", "EncryptionKeys",
    "MessageMetadata", "SingleMessageMetadata", "BrokerEntryMetadata", "FeatureFlags", "AuthData",
    "KeySharedMeta", "BaseCommand",
)

#: the messages magnetar encodes or decodes, in the order schema.py lists them (what they
#: refer to is added); BaseCommand keeps the members whose type is among them
MESSAGES = (
    "KeyValue", "KeyLongValue", "IntRange", "Schema", "MessageIdData", "EncryptionKeys",
    "MessageMetadata", "SingleMessageMetadata", "BrokerEntryMetadata", "FeatureFlags", "AuthData",
    "CommandConnect", "CommandConnected", "CommandAuthResponse", "CommandAuthChallenge",
    "KeySharedMeta", "CommandSubscribe", "CommandPartitionedTopicMetadata",
    "CommandPartitionedTopicMetadataResponse", "CommandLookupTopic", "CommandLookupTopicResponse",
    "CommandProducer", "CommandSend", "CommandSendReceipt", "CommandSendError", "CommandMessage",
    "CommandAck", "CommandAckResponse", "CommandActiveConsumerChange", "CommandFlow",
    "CommandUnsubscribe", "CommandSeek", "CommandReachedEndOfTopic", "CommandTopicMigrated",
    "CommandCloseProducer", "CommandCloseConsumer", "CommandRedeliverUnacknowledgedMessages",
    "CommandSuccess", "CommandProducerSuccess", "CommandError", "CommandPing", "CommandPong",
    "CommandConsumerStats", "CommandConsumerStatsResponse", "CommandGetLastMessageId",
    "CommandGetLastMessageIdResponse", "CommandGetTopicsOfNamespace",
    "CommandGetTopicsOfNamespaceResponse", "CommandGetSchema", "CommandGetSchemaResponse",
    "CommandGetOrCreateSchema", "CommandGetOrCreateSchemaResponse",
    "CommandTcClientConnectRequest", "CommandTcClientConnectResponse",
    "Subscription", "CommandNewTxn", "CommandNewTxnResponse", "CommandAddPartitionToTxn",
    "CommandAddPartitionToTxnResponse", "CommandAddSubscriptionToTxn",
    "CommandAddSubscriptionToTxnResponse", "CommandEndTxn", "CommandEndTxnResponse",
    "CommandEndTxnOnPartition", "CommandEndTxnOnPartitionResponse", "CommandEndTxnOnSubscription",
    "CommandEndTxnOnSubscriptionResponse",
    "BaseCommand",
)

_LABELS = {"optional": 1, "required": 1, "repeated": 3}  # FieldDescriptorProto.Label: required read as optional
_TYPES = {"double": 1, "float": 2, "int64": 3, "uint64": 4, "int32": 5, "fixed64": 6, "fixed32": 7, "bool": 8,
          "string": 9, "bytes": 12, "uint32": 13, "sfixed32": 15, "sfixed64": 16, "sint32": 17, "sint64": 18}
_MESSAGE_TYPE = 11


_SCALARS = frozenset(_TYPES)
_TOKEN = re.compile(r'"[^"]*"|[A-Za-z_][\w.]*|-?\d+(?:\.\d+)?|[{}\[\];=<>,()]')


@dataclass
class Field:
    """One field of a .proto message."""

    label: str
    type: str
    name: str
    number: int
    default: str | None = None


@dataclass
class Message:
    """One .proto message: its fields and the enumerations declared inside it."""

    name: str
    fields: list[Field] = field(default_factory=list)
    enums: dict[str, dict[str, int]] = field(default_factory=dict)


@dataclass
class ProtoFile:
    """The messages and top-level enumerations of a .proto file."""

    messages: dict[str, Message] = field(default_factory=dict)
    enums: dict[str, dict[str, int]] = field(default_factory=dict)


def _tokens(text: str) -> list[str]:
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    text = re.sub(r"//[^\n]*", " ", text)
    return _TOKEN.findall(text)


class _Parser:
    """A reader of the proto2 subset PulsarApi.proto uses (messages, enums, oneofs, options)."""

    def __init__(self, text: str) -> None:
        self.toks = _tokens(text)
        self.pos = 0

    def next(self) -> str:
        tok = self.toks[self.pos]
        self.pos += 1
        return tok

    def expect(self, tok: str) -> None:
        got = self.next()
        if got != tok:
            raise SyntaxError(f"expected {tok!r}, got {got!r} (token {self.pos})")

    def skip_statement(self) -> None:
        while self.next() != ";":
            pass

    def parse(self) -> ProtoFile:
        out = ProtoFile()
        while self.pos < len(self.toks):
            tok = self.next()
            if tok == "message":
                msg = self.message(self.next())
                out.messages[msg.name] = msg
            elif tok == "enum":
                name = self.next()
                out.enums[name] = self.enum()
            else:  # syntax, package, option
                self.skip_statement()
        return out

    def enum(self) -> dict[str, int]:
        self.expect("{")
        values: dict[str, int] = {}
        while (tok := self.next()) != "}":
            if tok == "option":
                self.skip_statement()
                continue
            self.expect("=")
            values[tok] = int(self.next())
            self.skip_statement()
        return values

    def message(self, name: str) -> Message:
        msg = Message(name)
        self.expect("{")
        self.members(msg, None)
        return msg

    def members(self, msg: Message, forced_label: str | None) -> None:
        while (tok := self.next()) != "}":
            if tok == "enum":
                enum_name = self.next()
                msg.enums[enum_name] = self.enum()
            elif tok == "oneof":
                self.next()
                self.expect("{")
                self.members(msg, "optional")
            elif tok in ("option", "reserved", "extensions"):
                self.skip_statement()
            elif tok == "message":
                raise SyntaxError(f"nested message in {msg.name}: not supported")
            else:
                msg.fields.append(self.field(tok, forced_label))

    def field(self, first: str, forced_label: str | None) -> Field:
        label, type_name = (forced_label, first) if forced_label else (first, self.next())
        name = self.next()
        self.expect("=")
        number = int(self.next())
        default = None
        tok = self.next()
        if tok == "[":
            while (tok := self.next()) != "]":
                if tok == "default":
                    self.expect("=")
                    default = self.next().strip('"')
            tok = self.next()
        if tok != ";":
            raise SyntaxError(f"expected ';' after field {name}, got {tok!r}")
        return Field(label, type_name, name, number, default)


def snake_case(name: str) -> str:
    """``ledgerId`` -> ``ledger_id``; names already in snake_case are kept."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


def _wire_type(proto: ProtoFile, msg: Message, type_name: str) -> tuple[str, dict[str, int] | None]:
    """The notation's type of a field, and the enumeration's values when it is one."""
    if type_name in _SCALARS:
        return type_name, None
    short = type_name.rsplit(".", 1)[-1]
    if short in msg.enums:
        return "int32", msg.enums[short]
    if short in proto.enums:
        return "int32", proto.enums[short]
    if short in proto.messages:
        return short, None
    raise KeyError(f"{msg.name}: unknown type {type_name}")


def _field_name(msg: Message, f: Field) -> str:
    return RENAMES.get((msg.name, f.name), snake_case(f.name))


def _default(f: Field, enum_values: dict[str, int] | None) -> str | None:
    """The field's declared default as a descriptor writes it; None for the type's own (0, false)."""
    default = f.default
    if default is not None and enum_values is not None:
        default = str(enum_values[default])
    return None if default in (None, "0", "false", "") else default


def _selected(proto: ProtoFile) -> list[str]:
    """MESSAGES and every message their fields refer to, each once, in MESSAGES' order."""
    order: list[str] = []

    def add(name: str) -> None:
        if name in order:
            return
        order.append(name)
        msg = proto.messages[name]
        for f in msg.fields:
            wire, _ = _wire_type(proto, msg, f.type)
            if wire in proto.messages and name != "BaseCommand":
                add(wire)

    for name in MESSAGES:
        add(name)
    return order


def file_descriptor(proto: ProtoFile) -> bytes:
    """The selected messages as a serialized FileDescriptorProto (what protoc's _pb2 modules embed)."""
    from google.protobuf import descriptor_pb2

    fdp = descriptor_pb2.FileDescriptorProto(name=FILE_NAME, package=PACKAGE, syntax="proto2")
    names = _selected(proto)
    for name in names:
        msg = proto.messages[name]
        out = fdp.message_type.add(name=name)
        for f in sorted(msg.fields, key=lambda f: f.number):
            wire, enum_values = _wire_type(proto, msg, f.type)
            if name == "BaseCommand" and wire in proto.messages and wire not in names:
                continue  # a command magnetar does not speak: left an unknown field
            field_proto = out.field.add(name=_field_name(msg, f), number=f.number, label=_LABELS[f.label])
            if wire in _TYPES:
                field_proto.type = _TYPES[wire]
            else:
                field_proto.type = _MESSAGE_TYPE
                field_proto.type_name = f".{PACKAGE}.{wire}"
            default = _default(f, enum_values)
            if default is not None:
                field_proto.default_value = default
    return fdp.SerializeToString()


_HEADER = '''"""The Pulsar wire schema: the message classes of PulsarApi.proto (next to this module).

GENERATED by tools/gen_wire_schema.py from PulsarApi.proto: do not edit. Change the .proto (or
the generator) and run ``python tools/gen_wire_schema.py``; tests/protocol/test_schema_source.py
checks that this file is the generator's output. The messages magnetar speaks, as a serialized
FileDescriptorProto (what protoc's _pb2 modules embed), built into classes by protobuf's upb
runtime at import. As generated: field names in snake_case, every field ``optional``
(required-field checks are the codec's business), enumerations as ``int32`` (identical on the
wire; the values are the IntEnums of :mod:`magnetar.protocol.enums`); commands magnetar does
not speak stay unknown fields of BaseCommand, kept as they came.
"""

from __future__ import annotations

from magnetar.protocol.lazy_protobuf import defer_python_message

defer_python_message()  # before descriptor_pool imports the pure-Python runtime upb never uses (10 ms)

from google.protobuf import descriptor_pool, message_factory  # noqa: E402

'''


def _bytes_lines(data: bytes, width: int = 100) -> list[str]:
    """``data`` as bytes literals of at most ``width`` characters, one per line."""
    lines: list[str] = []
    start = 0
    while start < len(data):
        end = start + 1
        while end < len(data) and len(repr(data[start : end + 1])) <= width:
            end += 1
        lines.append(repr(data[start:end]))
        start = end
    return lines


def render(proto_text: str) -> str:
    """schema.py's text for the .proto ``proto_text``."""
    proto = _Parser(proto_text).parse()
    blob = file_descriptor(proto)
    count = len(_selected(proto))
    parts = [
        _HEADER,
        f"#: {FILE_NAME} (package {PACKAGE}, {count} messages), serialized\n",
        "_FILE = (\n",
        *(f"    {line}\n" for line in _bytes_lines(blob)),
        ")\n\n",
        "_POOL = descriptor_pool.DescriptorPool()\n",
        "_POOL.AddSerializedFile(_FILE)\n",
        "_CLASSES = {\n",
        "    name: message_factory.GetMessageClass(desc)\n",
        f"    for name, desc in _POOL.FindFileByName(\"{FILE_NAME}\").message_types_by_name.items()\n",
        "}\n\n",
        *(f"{name} = _CLASSES[\"{name}\"]\n" for name in CLASS_NAMES),
        "\n#: every message class by its .proto name, for code that needs the less common commands\n",
        "MESSAGES: dict[str, type] = dict(_CLASSES)\n",
    ]
    return "".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Write schema.py, or with --check say whether it is up to date."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 when schema.py is not the generator's output")
    args = parser.parse_args(argv)
    text = render(PROTO.read_text(encoding="utf-8"))
    if args.check:
        if OUTPUT.read_text(encoding="utf-8") != text:
            print(f"{OUTPUT.relative_to(ROOT)} is out of date: run python tools/gen_wire_schema.py", file=sys.stderr)
            return 1
        return 0
    OUTPUT.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
