"""protobuf's pure-Python message implementation, loaded only if something uses it.

``google.protobuf.descriptor_pool`` imports ``google.protobuf.internal.python_message`` at its top,
and with it ``text_format``, the pure-Python decoder and encoder, ``containers``, ``well_known_types``,
``pickle``: 17 modules, 10 ms of every broker start and of every ``import magnetar.client`` (python
-X importtime, medians of 8 runs: 68 -> 58 ms for the wire schema's import). Under the upb runtime,
which builds magnetar's messages, nothing calls into that module: descriptor_pool uses it for the
pure-Python runtime only. :func:`defer_python_message` registers it, before descriptor_pool is
imported, as a module the standard library's :class:`importlib.util.LazyLoader` executes on its first
attribute access: code that does use it gets the whole module then, as a plain import would give.
With another runtime (``PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION=python``), or when the module is
already loaded, it does nothing.
"""

from __future__ import annotations

import importlib.util
import sys

#: the module descriptor_pool imports and upb never uses
PYTHON_MESSAGE = "google.protobuf.internal.python_message"


def defer_python_message() -> bool:
    """Make protobuf's pure-Python message module load on first use, under upb; whether it did."""
    if PYTHON_MESSAGE in sys.modules:
        return False
    from google.protobuf.internal import api_implementation

    if api_implementation.Type() != "upb":
        return False
    spec = importlib.util.find_spec(PYTHON_MESSAGE)
    if spec is None or spec.loader is None:
        return False
    spec.loader = importlib.util.LazyLoader(spec.loader)
    module = importlib.util.module_from_spec(spec)
    sys.modules[PYTHON_MESSAGE] = module
    # the package's attribute too: ``from google.protobuf.internal import python_message`` then binds the
    # module without touching it (without it, the import system reads the module's __spec__: a load)
    setattr(sys.modules["google.protobuf.internal"], "python_message", module)  # noqa: B010
    spec.loader.exec_module(module)
    return True
