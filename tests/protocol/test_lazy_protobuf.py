"""protobuf's pure-Python message module loads only when used (magnetar/protocol/lazy_protobuf.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

PROBE = textwrap.dedent(
    """
    import sys
    import magnetar.protocol.schema
    from magnetar.protocol.schema import BaseCommand
    from magnetar.protocol.enums import CommandType

    command = BaseCommand(type=CommandType.CONNECT)
    command.connect.client_version = "probe"
    again = BaseCommand.FromString(command.SerializeToString())
    module = sys.modules["google.protobuf.internal.python_message"]
    print(again.connect.client_version, type(module).__name__, "google.protobuf.text_format" in sys.modules)
    import magnetar.protocol.markers  # descriptor_pb2 and the builder bind the module without using it
    print(type(module).__name__, hasattr(module, "GeneratedProtocolMessageType"), type(module).__name__,
          "google.protobuf.text_format" in sys.modules)
    """
)


def _probe(**env: str) -> list[str]:
    result = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60,
                            env={**os.environ, **env})
    assert result.returncode == 0, result.stderr
    return result.stdout.split("\n")


def test_under_upb_the_module_loads_at_its_first_use() -> None:
    first, second, _ = _probe()
    assert first == "probe _LazyModule False"  # messages built, parsed, serialized without it
    assert second == "_LazyModule True module True"  # an attribute read loads the whole module


def test_the_pure_python_runtime_gets_it_at_once() -> None:
    first, second, _ = _probe(PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION="python")
    assert first == "probe module True"
    assert second == "module True module True"
