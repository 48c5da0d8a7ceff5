"""Names of the official client that magnetar's client accepts so that code moves unchanged.

- ``CompressionType`` and ``ConsumerType``: the wire's enums (:mod:`magnetar.protocol.enums`,
  spelled as PulsarApi.proto) plus the official client's spellings (``ZLib``, ``KeyShared``);
  the values are the wire's, so either spelling can be passed anywhere.
- Logger objects (logging goes to the ``magnetar.client`` Python logger whatever they say) and
  the crypto failure action (magnetar's client has no end-to-end encryption: it never applies).
"""

from __future__ import annotations

from enum import IntEnum

from magnetar.protocol import enums as wire


def _with_aliases(enum: type[IntEnum], aliases: dict[str, str]) -> type[IntEnum]:
    """An IntEnum with the members of ``enum`` plus ``alias -> member name`` aliases."""
    members = {m.name: m.value for m in enum}
    members.update({alias: members[name] for alias, name in aliases.items()})
    made = IntEnum(enum.__name__, members)  # type: ignore[misc]
    made.__doc__ = f"{enum.__doc__} (with the official client's names: {', '.join(aliases)})"
    made.__module__ = __name__
    return made


#: ``pulsar.CompressionType``: NONE, LZ4, ZLib (= ZLIB), ZSTD, SNAPPY
CompressionType = _with_aliases(wire.CompressionType, {"ZLib": "ZLIB"})
#: ``pulsar.ConsumerType``: Exclusive, Shared, Failover, KeyShared (= Key_Shared)
ConsumerType = _with_aliases(wire.SubType, {"KeyShared": "Key_Shared"})


class LoggerLevel(IntEnum):
    """``pulsar.LoggerLevel``."""

    Debug = 0
    Info = 1
    Warn = 2
    Error = 3


class ConsoleLogger:
    """``pulsar.ConsoleLogger``: accepted as ``logger=``; magnetar logs with Python's logging."""

    def __init__(self, log_level: LoggerLevel = LoggerLevel.Info) -> None:
        self.log_level = log_level


class FileLogger:
    """``pulsar.FileLogger``: accepted as ``logger=``; magnetar logs with Python's logging."""

    def __init__(self, log_level: LoggerLevel, log_file: str) -> None:
        self.log_level = log_level
        self.log_file = log_file


class ConsumerCryptoFailureAction(IntEnum):
    """``pulsar.ConsumerCryptoFailureAction`` (messages are never encrypted here)."""

    FAIL = 0
    DISCARD = 1
    CONSUME = 2


__all__ = ["CompressionType", "ConsoleLogger", "ConsumerCryptoFailureAction", "ConsumerType", "FileLogger", "LoggerLevel"]
