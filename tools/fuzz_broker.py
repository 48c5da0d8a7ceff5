"""Coverage-guided fuzz (atheris / libFuzzer) of the frame decoder and of every command handler of a
broker session, over the corpus kept in tests/fuzz/corpus.

    python tools/fuzz_broker.py                       # 1,000,000 inputs, corpus grows in a copy
    python tools/fuzz_broker.py -runs=5000000 -max_total_time=3600
    python tools/fuzz_broker.py --keep-corpus         # new interesting inputs go into tests/fuzz/corpus

Each input goes to the frame decoder and through one connection of an in-process broker (see
tests/fuzz/harness.py). A crash (an exception escaping the session or the loop, or a session that
outlives its connection) stops the run with the input saved by libFuzzer as crash-*. At the end it
prints the inputs run and the corpus size. Needs ``pip install atheris``.
"""

from __future__ import annotations

import logging
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CORPUS = ROOT / "tests" / "fuzz" / "corpus"

import atheris  # noqa: E402 - after the path set-up

with atheris.instrument_imports(include=["magnetar"]):
    from tests.fuzz.harness import SessionTarget, decode_target  # noqa: E402

_target: SessionTarget | None = None
_count = 0


def test_one_input(data: bytes) -> None:
    """libFuzzer's entry point: one input through the decoder and a session."""
    global _count
    _count += 1
    decode_target(data)
    assert _target is not None
    _target.run(data)


def main() -> None:
    """Run the fuzzer (libFuzzer flags pass through; default -runs=1000000)."""
    global _target
    logging.disable(logging.CRITICAL)
    args = [a for a in sys.argv if a != "--keep-corpus"]
    keep = len(args) != len(sys.argv)
    corpus = CORPUS if keep else Path(tempfile.mkdtemp(prefix="magnetar-fuzz-corpus-"))
    if not keep:
        for path in CORPUS.iterdir():
            shutil.copy(path, corpus / path.name)
    if not any(a.startswith("-runs=") for a in args):
        args.append("-runs=1000000")
    args += ["-max_len=512", str(corpus)]
    _target = SessionTarget()
    started = time.monotonic()
    try:
        atheris.Setup(args, test_one_input)
        atheris.Fuzz()
    finally:
        print(
            f"inputs run: {_count} in {time.monotonic() - started:.0f} s; corpus: "
            f"{len(list(corpus.iterdir()))} inputs in {corpus}",
            file=sys.stderr,
        )


if __name__ == "__main__":
    main()
