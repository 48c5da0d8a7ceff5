"""Package names that load on first use (PEP 562), for packages whose submodules cost start-up time.

A package lists which of its submodules defines each public name and takes its module-level
``__getattr__`` and ``__dir__`` from :func:`lazy_names`: importing one submodule then does not load
its siblings, and ``from package import name`` still works.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(
    package: str, modules: Mapping[str, str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``, where ``modules`` maps each public name to
    the submodule defining it: a name is imported on first use and then kept in the package."""

    def __getattr__(name: str) -> Any:
        module = modules.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"{package}.{module}"), name)
        setattr(sys.modules[package], name, value)
        return value

    def __dir__() -> list[str]:
        return sorted({*vars(sys.modules[package]), *modules})

    return __getattr__, __dir__
