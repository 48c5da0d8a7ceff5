"""``magnetar standalone`` whose HTTP app's build waits (at most 60 s) until a file exists: a test's
seam for a broker whose binary port answers while its HTTP app is still being built.

usage: python tests/admin/held_http_build.py GATE_FILE standalone [flags]
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from magnetar.admin import standalone
from magnetar.cli.main import main


def held(build: Callable[[Any], Any], gate: Path) -> Callable[[Any], Any]:
    """``build`` (the HTTP app's), started once ``gate`` exists."""

    def held_build(service: Any) -> Any:
        deadline = time.monotonic() + 60
        while not gate.exists() and time.monotonic() < deadline:
            time.sleep(0.01)
        return build(service)

    return held_build


if __name__ == "__main__":
    standalone.build_http_app = held(standalone.build_http_app, Path(sys.argv[1]))
    sys.argv = ["magnetar", *sys.argv[2:]]
    main()
