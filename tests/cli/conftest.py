"""Fixtures of the CLI tests: one broker process, and a runner of `magnetar admin`."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import pytest
from typer.testing import CliRunner

from magnetar.cli.main import app
from magnetar.testing import BrokerProcess


@pytest.fixture(scope="package")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    proc = BrokerProcess(tmp_path_factory.mktemp("cli-broker") / "data", args=("--fsync", "never")).start()
    yield proc
    proc.stop()


@dataclass
class Result:
    exit_code: int
    stdout: str
    stderr: str

    def json(self):  # noqa: ANN201 - whatever the command printed
        return json.loads(self.stdout)


@pytest.fixture
def admin(broker: BrokerProcess) -> Callable[..., Result]:
    """Run `magnetar admin --admin-url <broker> ARGS...` in-process."""
    runner = CliRunner()

    def run(*args: str, json_output: bool = False) -> Result:
        argv = ["admin", "--admin-url", broker.http_url, *(["--json"] if json_output else []), *args]
        r = runner.invoke(app, argv, env={"COLUMNS": "200"})
        if r.exception is not None and not isinstance(r.exception, SystemExit):
            raise r.exception
        return Result(r.exit_code, r.stdout, r.stderr)

    return run


@pytest.fixture
def uid() -> str:
    return uuid.uuid4().hex[:8]
