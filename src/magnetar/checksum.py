"""CRC32C (Castagnoli): the checksum of Pulsar's frames and of magnetar's files, the crc32c package's C function.

Below every package (the protocol and the storage both use it), and loaded without the crc32c package's
``__init__``: that reads the package's own version through importlib.metadata, 25-35 ms CPU of every
broker start (python -X importtime, 30 ms of 420 ms at load 9) that nothing else on the broker's
start-up needs.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path


def _crc32c_function() -> Callable[..., int]:
    """crc32c's C function from its extension module, registered as ``crc32c._crc32c`` (a later ``import
    crc32c`` uses it); where the package keeps it elsewhere, from the package."""
    loaded = sys.modules.get("crc32c._crc32c") or sys.modules.get("crc32c")
    if loaded is not None:
        return loaded.crc32c
    spec = importlib.util.find_spec("crc32c")
    for location in (spec.submodule_search_locations or []) if spec is not None else []:
        for suffix in importlib.machinery.EXTENSION_SUFFIXES:
            path = Path(location) / f"_crc32c{suffix}"
            if path.is_file():
                loader = importlib.machinery.ExtensionFileLoader("crc32c._crc32c", str(path))
                module = importlib.util.module_from_spec(importlib.util.spec_from_loader(loader.name, loader))
                loader.exec_module(module)
                sys.modules.setdefault(loader.name, module)
                return module.crc32c
    import crc32c as package

    return package.crc32c


#: ``crc32c(data, value=0)``: the CRC32C of ``data`` (continuing from ``value``)
crc32c = _crc32c_function()
