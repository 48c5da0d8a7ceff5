"""REST validation as strict as Pulsar's (issue 12, defect 12).

* Integer policy fields are Java ``Integer``: a messageTTL of 2^63 (or 2^31) is refused with 400.
* Tenant and namespace names are Pulsar's NamedEntity: ``[-=:.]`` and ASCII word characters only
  (Java's ``\\w``), so a Cyrillic name is refused with 412; magnetar also refuses names over 255
  characters (Pulsar sets no limit).
"""

from __future__ import annotations

import urllib.parse
import uuid

from magnetar.testing import BrokerProcess
from tests.admin.admin_http import Http


def test_message_ttl_is_a_32_bit_integer(broker: BrokerProcess) -> None:
    http = Http(broker.http_url)
    ns = f"public/ttl-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/namespaces/{ns}", {}).status == 204
    for too_big in (2**63, 2**31):
        reply = http.post(f"/admin/v2/namespaces/{ns}/messageTTL", too_big)
        assert reply.status == 400, reply.body
        assert "out of range" in (reply.reason or "")
    assert http.get(f"/admin/v2/namespaces/{ns}/messageTTL").json() in (None, 0)
    assert http.post(f"/admin/v2/namespaces/{ns}/messageTTL", 2**31 - 1).status == 204
    assert http.get(f"/admin/v2/namespaces/{ns}/messageTTL").json() == 2**31 - 1
    topic = f"persistent/{ns}/t-{uuid.uuid4().hex[:8]}"
    assert http.put(f"/admin/v2/{topic}", {}).status == 204
    reply = http.post(f"/admin/v2/{topic}/messageTTL?messageTTL={2**63}")
    assert reply.status == 400, reply.body


def test_tenant_and_namespace_names_are_pulsar_named_entities(broker: BrokerProcess) -> None:
    http = Http(broker.http_url)
    info = {"adminRoles": [], "allowedClusters": ["standalone"]}
    for bad in ("тенант", "t" * 256, "a b", "a/b"):
        reply = http.put(f"/admin/v2/tenants/{urllib.parse.quote(bad, safe='')}", info)
        assert reply.status in (404, 412), (bad, reply.status, reply.body)
        if reply.status == 412:
            assert reply.reason == "Tenant name is not valid"
    assert http.get("/admin/v2/tenants/" + urllib.parse.quote("тенант")).status == 404
    good = f"t-{uuid.uuid4().hex[:8]}:=.x_" + "y" * 200
    assert http.put(f"/admin/v2/tenants/{good}", info).status == 204
    reply = http.put(f"/admin/v2/namespaces/{good}/{urllib.parse.quote('пространство')}", {})
    assert reply.status == 412, reply.body
    assert http.put(f"/admin/v2/namespaces/{good}/ns-ok", {}).status == 204
