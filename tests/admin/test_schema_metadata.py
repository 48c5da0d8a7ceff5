"""GET /admin/v2/schemas/.../metadata (pulsar-admin's `schemas metadata`): Pulsar's SchemaMetadata."""

from __future__ import annotations

import json

from .admin_http import Http

AVRO_V1 = {"type": "record", "name": "Ev", "fields": [{"name": "id", "type": "long"}]}
AVRO_V2 = {"type": "record", "name": "Ev", "fields": [{"name": "id", "type": "long"}, {"name": "n", "type": "string", "default": ""}]}


def test_schema_metadata_lists_every_version(http: Http, name: str) -> None:
    base = f"/admin/v2/schemas/public/default/{name}"
    r = http.get(base + "/metadata")
    assert (r.status, r.reason) == (404, "Schema not found")
    for definition in (AVRO_V1, AVRO_V2):
        body = {"type": "AVRO", "schema": json.dumps(definition), "properties": {}}
        assert http.post(base + "/schema", body).status == 200
    assert http.get(base + "/metadata").json() == {
        "info": {"ledgerId": -1, "entryId": 1, "version": 1},
        "index": [{"ledgerId": -1, "entryId": 0, "version": 0}, {"ledgerId": -1, "entryId": 1, "version": 1}],
    }
