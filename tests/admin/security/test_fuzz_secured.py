"""Schema-driven fuzzing of every operation with a superuser token on a secured broker: no 5xx.

Like tests/admin/test_fuzz.py, with authentication and authorization on: every request carries a
superuser's token, so each operation runs its authorization check and then the operation itself.
A broker of its own (the fuzzer creates and deletes tenants at random).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

schemathesis = pytest.importorskip("schemathesis")

from hypothesis import HealthCheck, given, settings  # noqa: E402

from tests.broker.security.conftest import Pki  # noqa: E402

from .conftest import SecuredBroker, start_secured_broker  # noqa: E402

EXAMPLES_PER_OPERATION = 3


@pytest.fixture(scope="module")
def fuzz_broker(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[SecuredBroker]:
    broker = start_secured_broker(tmp_path_factory.mktemp("secured-fuzz"), pki)
    yield broker
    broker.thread.stop()


def test_no_server_errors_as_superuser(fuzz_broker: SecuredBroker) -> None:
    schema = schemathesis.openapi.from_url(fuzz_broker.http_url + "/openapi.json")
    headers = {"Authorization": f"Bearer {fuzz_broker.token('super')}"}
    failures: list[str] = []
    refused: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        if operation.path.endswith("/terminate"):
            continue
        operations += 1

        @given(case=operation.as_strategy())
        @settings(max_examples=EXAMPLES_PER_OPERATION, deadline=None, derandomize=True,
                  suppress_health_check=list(HealthCheck), database=None)
        def check(case) -> None:  # noqa: ANN001 - schemathesis Case
            response = case.call(base_url=fuzz_broker.http_url, headers=headers, timeout=10)
            if response.status_code >= 500:
                failures.append(f"{case.method} {case.formatted_path} -> {response.status_code} {response.text[:200]}")
            if response.status_code in (401, 403):
                refused.append(f"{case.method} {case.formatted_path} -> {response.status_code} {response.text[:200]}")

        check()
    assert operations > 100
    assert not failures, "\n".join(failures[:20])
    assert not refused, "a superuser was refused:\n" + "\n".join(refused[:20])
