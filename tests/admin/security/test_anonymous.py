"""anonymousUserRole on HTTP, as the official client suite's secured set-up uses it: requests without
credentials act as the anonymous role, which administers tenant public and nothing else."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from magnetar.broker.config import BrokerConfig
from magnetar.broker.security import SecuritySettings
from magnetar.broker.security.tokens import create_token, generate_secret_key
from magnetar.testing import BrokerThread, free_port

from .conftest import Caller


@pytest.fixture(scope="module")
def anonymous_broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Caller, Caller]]:
    base = tmp_path_factory.mktemp("anonymous-broker")
    secret = generate_secret_key()
    (base / "secret.key").write_bytes(secret)
    settings = SecuritySettings(
        authentication_enabled=True, authorization_enabled=True, anonymous_user_role="anonymous",
        authentication_providers=("org.apache.pulsar.broker.authentication.AuthenticationProviderToken",),
        super_user_roles=("superUser",), token_secret_key=f"file://{base / 'secret.key'}",
    )
    http_port = free_port()
    thread = BrokerThread(BrokerConfig(data_dir=base / "data", port=free_port(), http_port=http_port, fsync="never",
                                       security=settings)).start()
    url = f"http://127.0.0.1:{http_port}"
    su = Caller(url, f"Bearer {create_token(secret, 'superUser')}")
    # the broker made tenant public (administered by the superusers) as Pulsar's standalone does: hand it over
    assert su("POST", "/admin/v2/tenants/public", {"adminRoles": ["anonymous"], "allowedClusters": ["standalone"]}).status == 204
    assert su("PUT", "/admin/v2/namespaces/public/default", {
        "auth_policies": {"namespace_auth": {"anonymous": ["produce", "consume"]}}, "replication_clusters": ["standalone"],
    }).status in (204, 409)
    yield Caller(url, None), Caller(url, "Bearer not-a-token")
    thread.stop()


def test_anonymous_administers_its_tenant_only(anonymous_broker: tuple[Caller, Caller]) -> None:
    anonymous, bad = anonymous_broker
    assert anonymous("POST", "/admin/v2/namespaces/public/default/deduplication", True).status == 204
    assert anonymous("PUT", "/admin/v2/persistent/public/default/anon/partitions", 3).status == 204
    assert anonymous("GET", "/admin/v2/persistent/public/default/anon/partitions").body == {"partitions": 3}
    assert anonymous("PUT", "/admin/v2/namespaces/public/default/schemaCompatibilityStrategy", "FORWARD").status == 204
    refused = anonymous("GET", "/admin/v2/tenants")
    assert (refused.status, refused.reason) == (403, "This operation requires super-user access")
    # credentials that are sent must be valid: no fallback to the anonymous role
    assert bad("GET", "/admin/v2/namespaces/public").status == 401
