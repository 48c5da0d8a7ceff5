"""The text notation of :mod:`magnetar.protocol.schema` turned into protobuf message classes.

One message per block, one field per indented line: ``number [repeated] type name [= default]``;
the result is a proto2 file descriptor whose classes are the fast upb ones.
"""

from __future__ import annotations

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

_SCALARS = {
    "double": descriptor_pb2.FieldDescriptorProto.TYPE_DOUBLE,
    "int32": descriptor_pb2.FieldDescriptorProto.TYPE_INT32,
    "int64": descriptor_pb2.FieldDescriptorProto.TYPE_INT64,
    "uint32": descriptor_pb2.FieldDescriptorProto.TYPE_UINT32,
    "uint64": descriptor_pb2.FieldDescriptorProto.TYPE_UINT64,
    "bool": descriptor_pb2.FieldDescriptorProto.TYPE_BOOL,
    "string": descriptor_pb2.FieldDescriptorProto.TYPE_STRING,
    "bytes": descriptor_pb2.FieldDescriptorProto.TYPE_BYTES,
}


def _parse_schema(text: str, package: str) -> descriptor_pb2.FileDescriptorProto:
    """Turn the notation into a proto2 file descriptor of ``package``."""
    fdp = descriptor_pb2.FileDescriptorProto(name="magnetar_wire.proto", package=package, syntax="proto2")
    message: descriptor_pb2.DescriptorProto | None = None
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            continue
        if not raw.startswith(" "):
            message = fdp.message_type.add(name=line)
            continue
        assert message is not None
        head, _, default = line.partition("=")
        parts = head.split()
        label = descriptor_pb2.FieldDescriptorProto.LABEL_OPTIONAL
        if parts[1] == "repeated":
            label = descriptor_pb2.FieldDescriptorProto.LABEL_REPEATED
            del parts[1]
        number, type_name, name = int(parts[0]), parts[1], parts[2]
        field = message.field.add(name=name, number=number, label=label)
        if type_name in _SCALARS:
            field.type = _SCALARS[type_name]
        else:
            field.type = descriptor_pb2.FieldDescriptorProto.TYPE_MESSAGE
            field.type_name = f".{package}.{type_name}"
        if default.strip():
            field.default_value = default.strip()
    return fdp


def build_classes(text: str, package: str) -> dict[str, type]:
    """Every message class of the schema ``text`` by its name, in a pool of its own."""
    pool = descriptor_pool.DescriptorPool()
    file_desc = pool.Add(_parse_schema(text, package))
    file_desc = pool.FindFileByName("magnetar_wire.proto")
    return {
        name: message_factory.GetMessageClass(desc) for name, desc in file_desc.message_types_by_name.items()
    }
