"""A client without encryption never imports cryptography (90-100 ms CPU): its primitives load with the
first encrypting producer or the first encrypted message."""

from __future__ import annotations

import json
import subprocess
import sys


def test_importing_the_client_loads_no_cryptography() -> None:
    probe = ("import sys, json; import magnetar.client; "
             "print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] == 'cryptography')))")
    loaded = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                                       check=True).stdout)
    assert loaded == []
