"""Every shell and Python block of README.md and docs/*.md runs, as pasted, against a test broker.

One broker serves every document (started with magnetar.testing on free ports). The blocks name
the default ports: ``localhost:6650`` and ``localhost:8080`` are rewritten to the test broker's,
and the commands that default to them find it through ``$PULSAR_CLIENT_CONF`` (a client.conf
with its URLs) and ``$MAGNETAR_ADMIN_URL``. Shell blocks run with ``bash -e -o pipefail`` in a
scratch directory whose ``.venv/bin`` (what ``. .venv/bin/activate`` puts on the PATH) holds a
``magnetar`` running this checkout; Python blocks run in this process, each in its own namespace.
A block that cannot run in a test says why in a ``<!-- not run: reason -->`` line before it.
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
import time
import traceback
import types
from collections.abc import Iterator
from pathlib import Path

import pytest

from magnetar.testing import BrokerProcess
from tests.docs.markdown_blocks import RUN_LANGUAGES, SHELL_LANGUAGES, Block, blocks, documents

DOCUMENTS = documents()


class DocRunner:
    """Runs blocks against one broker, from one scratch directory."""

    def __init__(self, broker: BrokerProcess, workdir: Path) -> None:
        self.broker = broker
        self.workdir = workdir
        bin_dir = workdir / ".venv" / "bin"
        bin_dir.mkdir(parents=True)
        shim = bin_dir / "magnetar"
        shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m magnetar.cli.main "$@"\n')
        shim.chmod(0o755)
        (bin_dir / "activate").write_text(f'PATH="{bin_dir}:$PATH"\nexport PATH\n')
        conf = workdir / "client.conf"
        conf.write_text(f"brokerServiceUrl={broker.service_url}\nwebServiceUrl={broker.http_url}\n")
        src = str(Path(__file__).resolve().parents[2] / "src")
        self.env = {
            **os.environ,
            "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}",
            "PYTHONPATH": os.pathsep.join(p for p in (src, os.environ.get("PYTHONPATH")) if p),
            "PULSAR_CLIENT_CONF": str(conf),
            "MAGNETAR_ADMIN_URL": broker.http_url,
        }

    def rewrite(self, code: str) -> str:
        """The block with the default ports replaced by the test broker's."""
        code = code.replace("localhost:6650", f"127.0.0.1:{self.broker.port}")
        return code.replace("localhost:8080", f"127.0.0.1:{self.broker.http_port}")

    def run(self, block: Block) -> str | None:
        """Run one block; None when it worked, else what went wrong."""
        if block.language in SHELL_LANGUAGES:
            return self._run_shell(block)
        return self._run_python(block)

    def _run_shell(self, block: Block) -> str | None:
        script = self.rewrite(block.shell_script())
        try:
            done = subprocess.run(
                ["bash", "-e", "-o", "pipefail", "-c", script], cwd=self.workdir, env=self.env,
                capture_output=True, text=True, timeout=120,
            )
        except subprocess.TimeoutExpired:
            return "did not finish within 120 s"
        if done.returncode != 0:
            return f"exit status {done.returncode}\nstdout:\n{done.stdout[-3000:]}\nstderr:\n{done.stderr[-3000:]}"
        return None

    def _run_python(self, block: Block) -> str | None:
        code = compile(self.rewrite(block.code), block.where, "exec")
        # a module of its own (dataclasses and pickling look the defining module up in sys.modules)
        module = types.ModuleType(f"docs_block_{block.path.stem}_{block.line}")
        out = io.StringIO()
        cwd = os.getcwd()
        try:
            sys.modules[module.__name__] = module
            os.chdir(self.workdir)
            with contextlib.redirect_stdout(out):
                exec(code, module.__dict__)  # noqa: S102 - the documentation's own example
        except BaseException:  # noqa: BLE001 - any failure of the example is the finding
            return traceback.format_exc(limit=-6) + f"\nstdout:\n{out.getvalue()[-2000:]}"
        finally:
            os.chdir(cwd)
            del sys.modules[module.__name__]
        return None


@pytest.fixture(scope="module")
def runner(tmp_path_factory: pytest.TempPathFactory) -> Iterator[DocRunner]:
    base = tmp_path_factory.mktemp("docs")
    with BrokerProcess(base / "data") as broker:
        yield DocRunner(broker, base / "work")


@pytest.mark.parametrize("path", DOCUMENTS, ids=[p.name for p in DOCUMENTS])
def test_every_block_runs_or_says_why_not(runner: DocRunner, path: Path) -> None:
    found, problems = blocks(path)
    assert problems == []
    ran: list[str] = []
    failures: list[str] = []
    for block in found:
        if not block.runnable:
            continue
        started = time.monotonic()
        error = runner.run(block)
        ran.append(block.where)
        if error is not None:
            failures.append(f"{block.where} ({block.language}, {time.monotonic() - started:.1f} s): {error}")
    if failures:
        pytest.fail("blocks that failed:\n\n" + "\n\n".join(failures), pytrace=False)
    assert ran == [b.where for b in found if b.language in RUN_LANGUAGES and b.not_run is None]


def test_the_documents_run_blocks_of_every_kind() -> None:
    """The run covers the README's set-up, admin and messaging commands and the client's examples."""
    runnable = {d.name: [b.language for b in blocks(d)[0] if b.runnable] for d in DOCUMENTS}
    assert runnable["README.md"].count("sh") >= 3 and "python" in runnable["README.md"]
    assert runnable["CLIENT.md"].count("python") >= 5


_SUBSTITUTION_IN_DOUBLE_QUOTES = re.compile(r'"[^"\n]*`[^"\n]*"')


@pytest.mark.parametrize("path", DOCUMENTS, ids=[p.name for p in DOCUMENTS])
def test_no_shell_block_quotes_backticks_in_double_quotes(path: Path) -> None:
    """Also in blocks not run: backticks in double quotes are a command substitution to bash and zsh."""
    found, _ = blocks(path)
    bad = [
        f"{b.where}: {line.strip()}"
        for b in found if b.language in SHELL_LANGUAGES
        for line in b.code.splitlines() if _SUBSTITUTION_IN_DOUBLE_QUOTES.search(line.replace('\\`', ""))
    ]
    assert bad == []
