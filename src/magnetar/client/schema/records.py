"""Records declared as the official client declares them (``pulsar.schema.Record``).

A record class lists its fields as class attributes, in order::

    class User(Record):
        name = String(required=True)
        age = Integer()
        tags = Array(String())
        color = Color            # an Enum class: an enum field
        address = Address()      # a record instance: a nested record

``User.schema()`` is the Avro definition the official client derives for the same class (same
names, field order, nullable unions and defaults), so schemas registered by either client are the
same; :class:`~magnetar.client.schema.AvroSchema` and ``JsonSchema`` accept such classes.
Fields are optional unless ``required=True``: an optional field's type is ``["null", type]``.
"""

from __future__ import annotations

import enum
from typing import Any, ClassVar


class Field:
    """Base of the field types: its Avro type, the Python types it accepts, its default."""

    avro_type = ""
    python_types: tuple[type, ...] = ()

    def __init__(self, default: Any = None, required: bool = False, required_default: bool = False) -> None:
        self._required = required
        self._required_default = required_default
        self._default = None if default is None else self.validate_type("default", default)

    def type(self) -> str:
        """The Avro type name."""
        return self.avro_type

    def python_type(self) -> tuple[type, ...]:
        """The Python types a value may have."""
        return self.python_types

    def validate_type(self, name: str, value: Any) -> Any:
        """``value`` checked (and converted where the official client converts), or TypeError."""
        if value is None and not self._required:
            return self.default()
        if not isinstance(value, self.python_types):
            raise TypeError(f"invalid type {type(value).__name__} for field {name!r}: expected {self.avro_type}")
        return value

    def schema(self) -> Any:
        """The Avro type of this field alone."""
        return self.schema_info(set())

    def schema_info(self, defined_names: set[str]) -> Any:
        """The Avro type, given the named types already defined (named once, referred to after)."""
        return self.avro_type

    def default(self) -> Any:
        """The value of an unset field."""
        return self._default

    def required_default(self) -> bool:
        """Whether the definition states the default."""
        return self._required_default

    def to_plain(self, value: Any, json: bool = False) -> Any:
        """The value as the encoders take it."""
        return value


class Null(Field):
    """Avro ``null``."""

    avro_type = "null"
    python_types = (type(None),)

    def validate_type(self, name: str, value: Any) -> Any:
        if value is not None:
            raise TypeError(f"field {name!r} can only be None")
        return value


class Boolean(Field):
    """Avro ``boolean`` (False when unset)."""

    avro_type = "boolean"
    python_types = (bool,)

    def default(self) -> Any:
        return False if self._default is None else self._default


class Integer(Field):
    """Avro ``int``."""

    avro_type = "int"
    python_types = (int,)


class Long(Field):
    """Avro ``long``."""

    avro_type = "long"
    python_types = (int,)


class Float(Field):
    """Avro ``float``."""

    avro_type = "float"
    python_types = (float, int)


class Double(Field):
    """Avro ``double``."""

    avro_type = "double"
    python_types = (float, int)


class Bytes(Field):
    """Avro ``bytes`` (a str is stored UTF-8 encoded)."""

    avro_type = "bytes"
    python_types = (bytes, str)

    def validate_type(self, name: str, value: Any) -> Any:
        return value.encode() if isinstance(value, str) else super().validate_type(name, value)

    def to_plain(self, value: Any, json: bool = False) -> Any:
        return value.decode() if json and isinstance(value, bytes) else value


class String(Field):
    """Avro ``string`` (bytes are decoded as UTF-8)."""

    avro_type = "string"
    python_types = (str, bytes)

    def validate_type(self, name: str, value: Any) -> Any:
        value = super().validate_type(name, value)
        return value.decode() if isinstance(value, bytes) else value


class CustomEnum(Field):
    """An Avro ``enum`` of a Python Enum: set by member, name or value."""

    avro_type = "enum"

    def __init__(self, enum_type: type[enum.Enum], default: Any = None, required: bool = False, required_default: bool = False) -> None:
        if not (isinstance(enum_type, type) and issubclass(enum_type, enum.Enum)):
            raise TypeError(f"{enum_type!r} is not an Enum type")
        self.enum_type = enum_type
        self.python_types = (enum_type,)
        super().__init__(default, required, required_default)

    def validate_type(self, name: str, value: Any) -> Any:
        if value is None or isinstance(value, self.enum_type):
            return value
        if isinstance(value, str) and value in self.enum_type.__members__:
            return self.enum_type[value]
        try:
            return self.enum_type(value)
        except ValueError:
            raise TypeError(f"invalid value {value!r} for enum field {name!r}: expected one of {list(self.enum_type.__members__)}") from None

    def schema_info(self, defined_names: set[str]) -> Any:
        name = self.enum_type.__name__
        if name in defined_names:
            return name
        defined_names.add(name)
        return {"type": "enum", "name": name, "symbols": list(self.enum_type.__members__)}

    def to_plain(self, value: Any, json: bool = False) -> Any:
        if value is None:
            return None
        return value.value if json else value.name


def _as_field(item: Any) -> Field | Record:
    """A field type given as a Field, a record (class or instance) or an Enum class."""
    if isinstance(item, type) and issubclass(item, enum.Enum):
        return CustomEnum(item)
    if isinstance(item, type) and issubclass(item, Record):
        return item()
    if isinstance(item, (Field, Record)):
        return item
    raise TypeError(f"{item!r} is not a Record or a Field")


class Array(Field):
    """An Avro ``array`` of one item type."""

    avro_type = "array"
    python_types = (list,)

    def __init__(self, array_type: Any, default: Any = None, required: bool = False, required_default: bool = False) -> None:
        self.array_type = _as_field(array_type)
        super().__init__(default, required, required_default)

    def validate_type(self, name: str, value: Any) -> Any:
        if value is None:
            return None
        value = super().validate_type(name, value)
        item_types = self.array_type.python_type()
        for item in value:
            if not isinstance(item, item_types):
                raise TypeError(f"Array field {name} items should all be of type {self.array_type.type()}")
        return value

    def schema_info(self, defined_names: set[str]) -> Any:
        return {"type": "array", "items": self.array_type.schema_info(defined_names)}

    def to_plain(self, value: Any, json: bool = False) -> Any:
        return None if value is None else [self.array_type.to_plain(v, json) for v in value]


class Map(Field):
    """An Avro ``map`` from str keys to one value type."""

    avro_type = "map"
    python_types = (dict,)

    def __init__(self, value_type: Any, default: Any = None, required: bool = False, required_default: bool = False) -> None:
        self.value_type = _as_field(value_type)
        super().__init__(default, required, required_default)

    def validate_type(self, name: str, value: Any) -> Any:
        if value is None:
            return None
        value = super().validate_type(name, value)
        value_types = self.value_type.python_type()
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"Map keys for field {name} should all be strings")
            if not isinstance(v, value_types):
                raise TypeError(f"Map values for field {name} should all be of type {self.value_type.type()}")
        return value

    def schema_info(self, defined_names: set[str]) -> Any:
        return {"type": "map", "values": self.value_type.schema_info(defined_names)}

    def to_plain(self, value: Any, json: bool = False) -> Any:
        return None if value is None else {k: self.value_type.to_plain(v, json) for k, v in value.items()}


class RecordMeta(type):
    """Collects a record class's fields, in declaration order, into ``_fields``."""

    def __new__(mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> RecordMeta:
        if bases:  # not Record itself
            fields = {}
            for attr, value in namespace.items():
                if isinstance(value, type) and (issubclass(value, enum.Enum) or isinstance(value, RecordMeta)):
                    value = _as_field(value)
                if isinstance(value, (Field, Record)):
                    fields[attr] = value
            namespace["_fields"] = fields
        return super().__new__(mcs, name, bases, namespace)


class Record(metaclass=RecordMeta):
    """Base of records: ``User(name="ann", age=41)``; unset fields take their default."""

    _fields: ClassVar[dict[str, Field | Record]] = {}
    #: the Avro namespace of the record's definition
    _avro_namespace: ClassVar[str | None] = None
    #: list the fields sorted by name in the definition (else in declaration order)
    _sorted_fields: ClassVar[bool] = False

    def __init__(self, default: Any = None, required_default: bool = False, required: bool = False, **values: Any) -> None:
        if type(self) is Record:
            raise TypeError("Record declares no fields: declare a subclass of it and make that")
        object.__setattr__(self, "_default", default)
        object.__setattr__(self, "_required_default", required_default)
        object.__setattr__(self, "_required", required)
        for name, field in self._fields.items():
            if name in values:
                setattr(self, name, _nested(field, values[name]))
            elif isinstance(field, Record):
                object.__setattr__(self, name, field)
            else:
                object.__setattr__(self, name, field.default())
        # (values of fields this class does not declare are ignored, as by the official client:
        # a payload of a newer schema version decodes)

    def __setattr__(self, name: str, value: Any) -> None:
        field = self._fields.get(name)
        if field is None:
            raise AttributeError(f"cannot set undeclared field {name!r} on {type(self).__name__}")
        object.__setattr__(self, name, field.validate_type(name, value))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Record):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name, None) for name in self._fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{name}={getattr(self, name)!r}" for name in self._fields)
        return f"{type(self).__name__}({inner})"

    @classmethod
    def schema(cls) -> dict[str, Any]:
        """The Avro definition of the record."""
        return cls.schema_info(set())  # type: ignore[return-value]

    @classmethod
    def schema_info(cls, defined_names: set[str]) -> Any:
        """The Avro definition, or just the name when already defined in ``defined_names``."""
        full_name = f"{cls._avro_namespace}.{cls.__name__}" if cls._avro_namespace else cls.__name__
        if full_name in defined_names:
            return full_name
        defined_names.add(full_name)
        definition: dict[str, Any] = {"type": "record", "name": cls.__name__}
        if cls._avro_namespace is not None:
            definition["namespace"] = cls._avro_namespace
        names = sorted(cls._fields) if cls._sorted_fields else list(cls._fields)
        fields = []
        for name in names:
            field = cls._fields[name]
            avro = field.schema_info(defined_names)
            entry: dict[str, Any] = {"name": name, "type": avro if field._required else ["null", avro]}
            if field.required_default():
                default = field.default()
                entry = {"name": name, "default": default.name if isinstance(default, enum.Enum) else default, "type": entry["type"]}
            fields.append(entry)
        definition["fields"] = fields
        return definition

    # what a record does as the field of another record
    def type(self) -> str:
        """The record's name (as a field type)."""
        return type(self).__name__

    def python_type(self) -> tuple[type, ...]:
        """The record class (as a field type)."""
        return (type(self),)

    def validate_type(self, name: str, value: Any) -> Any:
        """Check a nested record value."""
        if value is None and not self._required:
            return self.default()
        if not isinstance(value, type(self)):
            raise TypeError(f"invalid type {type(value).__name__} for record field {name!r}: expected {type(self).__name__}")
        return value

    def default(self) -> Any:
        """The value of an unset nested record field."""
        return self._default

    def required_default(self) -> bool:
        """Whether the definition states the default."""
        return self._required_default

    def to_plain(self, value: Any = None, json: bool = False) -> Any:
        """The record (``value``, or this one) as a dict of plain values."""
        record = self if value is None else value
        return {name: field.to_plain(getattr(record, name), json) for name, field in record._fields.items()}


def _nested(field: Field | Record, value: Any) -> Any:
    """A value given as dicts (decoded payloads, keyword arguments) turned into records where the
    field holds records."""
    if isinstance(field, Record) and isinstance(value, dict):
        return type(field)(**value)
    if isinstance(field, Array) and isinstance(field.array_type, Record) and isinstance(value, list):
        return [_nested(field.array_type, v) for v in value]
    if isinstance(field, Map) and isinstance(field.value_type, Record) and isinstance(value, dict):
        return {k: _nested(field.value_type, v) for k, v in value.items()}
    return value


__all__ = [
    "Array", "Boolean", "Bytes", "CustomEnum", "Double", "Field", "Float", "Integer", "Long", "Map", "Null",
    "Record", "RecordMeta", "String",
]
