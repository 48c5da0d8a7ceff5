"""The schema REST API serves the same registry the binary protocol uses."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path

import pulsar
import pytest
from pulsar.schema import AvroSchema, Integer, Record, String

from magnetar.testing import BrokerProcess

from .admin_http import Http


class User(Record):
    name = String()
    age = Integer()


AVRO_V1 = {"type": "record", "name": "Ev", "fields": [{"name": "id", "type": "long"}]}
AVRO_V2 = {"type": "record", "name": "Ev", "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": "string", "default": ""}]}
AVRO_BAD = {"type": "record", "name": "Ev", "fields": [{"name": "id", "type": "string"}]}


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[BrokerProcess]:
    with BrokerProcess(tmp_path_factory.mktemp("schemas-rest") / "data") as b:
        yield b


@pytest.fixture
def rest(broker: BrokerProcess) -> Http:
    return Http(broker.http_url)


def _payload(definition: dict) -> dict:
    return {"type": "AVRO", "schema": json.dumps(definition), "properties": {}}


def test_post_get_versions_compatibility_and_delete(rest: Http) -> None:
    base = f"/admin/v2/schemas/public/default/rest-{uuid.uuid4().hex[:8]}"
    assert (rest.get(base + "/schema").status, rest.get(base + "/schema").reason) == (404, "Schema not found")
    r = rest.post(base + "/schema", _payload(AVRO_V1))
    assert r.status == 200 and r.json() == {"version": {"version": 0}}
    assert rest.post(base + "/schema", _payload(AVRO_V2)).json() == {"version": {"version": 1}}
    latest = rest.get(base + "/schema").json()
    assert latest["version"] == 1 and latest["type"] == "AVRO" and json.loads(latest["data"]) == AVRO_V2
    assert json.loads(rest.get(base + "/schema/0").json()["data"]) == AVRO_V1
    assert [s["version"] for s in rest.get(base + "/schemas").json()["getSchemaResponses"]] == [0, 1]
    check = rest.post(base + "/compatibility", _payload(AVRO_BAD)).json()
    assert check == {"isCompatible": False, "schemaCompatibilityStrategy": "FULL"}
    assert rest.post(base + "/compatibility", _payload(AVRO_V1)).json()["isCompatible"] is True
    refused = rest.post(base + "/schema", _payload(AVRO_BAD))
    assert refused.status == 409 and refused.reason
    assert rest.post(base + "/version", _payload(AVRO_V1)).json() == {"version": 0}
    deleted = rest.delete(base + "/schema")
    assert deleted.status == 200 and deleted.json() == {"version": 2}
    assert rest.get(base + "/schema").status == 404
    # a schema after delete starts a fresh compatibility chain
    assert rest.post(base + "/schema", _payload(AVRO_BAD)).status == 200


def test_a_forced_delete_answers_version_minus_one_as_pulsar(rest: Http) -> None:
    """A forced delete answers 200 {"version": -1} (Pulsar's DeleteSchemaResponse when its storage gives no
    version) for a topic with versions, after a soft delete and for a topic without schema; the history is
    gone, the next schema is version 0 again (before: 404 "Schema not found" every time)."""
    base = f"/admin/v2/schemas/public/default/forced-{uuid.uuid4().hex[:8]}"
    rest.post(base + "/schema", _payload(AVRO_V1))
    rest.post(base + "/schema", _payload(AVRO_V2))
    forced = rest.delete(base + "/schema?force=true")
    assert (forced.status, forced.json()) == (200, {"version": -1})
    assert (rest.get(base + "/schemas").status, rest.get(base + "/schema/0").status) == (404, 404)
    assert rest.post(base + "/schema", _payload(AVRO_BAD)).json() == {"version": {"version": 0}}
    assert rest.delete(base + "/schema").json() == {"version": 1}  # soft: a delete marker
    after_soft = rest.delete(base + "/schema?force=true")
    assert (after_soft.status, after_soft.json()) == (200, {"version": -1})
    assert rest.get(base + "/schemas").status == 404
    none = rest.delete(f"/admin/v2/schemas/public/default/none-{uuid.uuid4().hex[:8]}/schema?force=true")
    assert (none.status, none.json()) == (200, {"version": -1})


@pytest.mark.parametrize(
    "body",
    [[], {"schema": "{}"}, {"type": "AVRO", "schema": 3}, {"type": "AVRO", "schema": "{}", "properties": {"a": 1}}],
)
def test_bad_payloads_are_400(rest: Http, body: object) -> None:
    r = rest.post(f"/admin/v2/schemas/public/default/bad-{uuid.uuid4().hex[:8]}/schema", body)
    assert r.status == 400 and r.reason


def test_schema_of_an_avro_producer_is_served_over_rest(broker: BrokerProcess, rest: Http, tmp_path: Path) -> None:
    name = f"avro-{uuid.uuid4().hex[:8]}"
    client = pulsar.Client(broker.service_url, operation_timeout_seconds=10, logger=pulsar.ConsoleLogger(pulsar.LoggerLevel.Error))
    try:
        producer = client.create_producer(name, schema=AvroSchema(User))
        producer.send(User(name="ada", age=36))
        got = rest.get(f"/admin/v2/schemas/public/default/{name}/schema").json()
        assert got["type"] == "AVRO" and got["version"] == 0
        assert [f["name"] for f in json.loads(got["data"])["fields"]] == ["name", "age"]
    finally:
        client.close()
