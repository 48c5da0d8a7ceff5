"""Python (official ``pulsar`` client) reads what the Java and Go clients wrote through magnetar.

The other directions run inside the suites: CrossLanguageTest (Java reads py and go) and
xlang_test.go (Go reads py and java).
"""

from __future__ import annotations

import pytest

from magnetar.testing import BrokerProcess

from . import harness, magnetar_side
from .magnetar_side import read_with_magnetar
from .xlang import expected_side, read_side

#: the first item also pays for building and running the suites (first runs download dependencies)
pytestmark = pytest.mark.timeout(2400)


def test_python_reads_what_java_wrote(
    interop_broker: BrokerProcess, interop_env: dict[str, str], java_run: harness.SuiteRun
) -> None:
    assert java_run.error is None, java_run.error
    got = read_side(interop_broker.service_url, interop_env["MAGNETAR_INTEROP_RUN"], "java")
    assert got == expected_side("java")


def test_python_reads_what_go_wrote(
    interop_broker: BrokerProcess, interop_env: dict[str, str], go_writer_run: harness.SuiteRun
) -> None:
    assert go_writer_run.error is None, go_writer_run.error
    got = read_side(interop_broker.service_url, interop_env["MAGNETAR_INTEROP_RUN"], "go")
    assert got == expected_side("go")


def test_magnetar_client_reads_the_key_values_java_wrote(
    interop_broker: BrokerProcess, interop_env: dict[str, str], java_run: harness.SuiteRun
) -> None:
    """KeyValue SEPARATED from the Java client: base64 keys of non-UTF-8 bytes, a null key last."""
    assert java_run.error is None, java_run.error
    got = read_with_magnetar(interop_broker.service_url, interop_env["MAGNETAR_INTEROP_RUN"], "java")
    assert got == [(k, v, k is not None) for k, v in magnetar_side.expected("java")]


def test_magnetar_client_decrypts_what_java_encrypted(
    interop_broker: BrokerProcess, interop_env: dict[str, str], java_run: harness.SuiteRun
) -> None:
    """RSA and EC (ECIES) keys, batched with LZ4 and single with ZLIB, from the Java client."""
    assert java_run.error is None, java_run.error
    got = magnetar_side.read_encrypted_with_magnetar(
        interop_broker.service_url, interop_env["MAGNETAR_INTEROP_RUN"], "java", interop_env["MAGNETAR_INTEROP_KEYS"])
    assert got == {f"enc-{k}-{m}": magnetar_side.encrypted_payloads("java", f"enc-{k}-{m}")
                   for k in magnetar_side.KEY_KINDS for m in magnetar_side.MODES}
