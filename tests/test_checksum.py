"""magnetar.checksum: CRC32C from the crc32c package's C function, without the package's metadata lookup."""

from __future__ import annotations

import json
import subprocess
import sys

from magnetar.checksum import crc32c


def test_crc32c_is_castagnoli_and_continues() -> None:
    assert crc32c(b"123456789") == 0xE3069283  # the check value of CRC-32C
    assert crc32c(b"56789", crc32c(b"1234")) == crc32c(b"123456789")
    assert crc32c(b"") == 0


def test_loading_it_reads_no_package_metadata_and_shares_the_package_function() -> None:
    probe = ("import sys, json; from magnetar.checksum import crc32c as f; before = 'importlib.metadata' in sys.modules; "
             "import crc32c; print(json.dumps([before, f is crc32c.crc32c]))")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == [False, True]
