"""The schema registry on a metadata store: versions, reuse, deletes, persistence."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from magnetar.broker.schemas import (
    IncompatibleSchemaError,
    InvalidSchemaError,
    SchemaData,
    SchemaNotFoundError,
    SchemaRegistry,
    Strategy,
    schema_id_of,
    version_from_bytes,
    version_to_bytes,
)
from magnetar.broker.schemas.compatibility import encode_key_value
from magnetar.storage import MetadataStore

SID = "public/default/orders"


def avro(*fields: tuple[str, object]) -> SchemaData:
    return SchemaData(
        "AVRO",
        json.dumps({"type": "record", "name": "Order", "fields": [{"name": n, "type": t} for n, t in fields]}).encode(),
        {"origin": "test"},
    )


V0 = avro(("id", "long"))
V1 = SchemaData(
    "AVRO",
    json.dumps(
        {
            "type": "record",
            "name": "Order",
            "fields": [{"name": "id", "type": "long"}, {"name": "note", "type": ["null", "string"], "default": None}],
        }
    ).encode(),
)
INCOMPATIBLE = avro(("id", "string"))


@pytest.fixture
def store(tmp_path: Path) -> Iterator[MetadataStore]:
    s = MetadataStore(tmp_path)
    yield s
    s.close()


class Clock:
    def __init__(self) -> None:
        self.now = 1_700_000_000.0

    def __call__(self) -> float:
        self.now += 1
        return self.now


def test_schema_id_is_the_partitioned_parent_without_domain() -> None:
    assert schema_id_of("persistent://public/default/orders") == SID
    assert schema_id_of("persistent://public/default/orders-partition-3") == SID
    assert schema_id_of("non-persistent://public/default/orders") == SID
    assert schema_id_of("orders") == SID


def test_versions_bytes_round_trip() -> None:
    assert version_to_bytes(0) == b"\x00" * 8
    assert version_to_bytes(258) == b"\x00\x00\x00\x00\x00\x00\x01\x02"
    assert version_from_bytes(version_to_bytes(12345)) == 12345
    assert version_from_bytes(b"\x01") is None


def test_first_schema_is_version_zero_and_identical_ones_reuse_it(store: MetadataStore) -> None:
    reg = SchemaRegistry(store, clock=Clock())
    assert reg.latest(SID) is None
    assert reg.put_if_absent(SID, V0, Strategy.FULL) == 0
    # identical definition (even re-indented, other properties): same version
    same = SchemaData("AVRO", json.dumps(json.loads(V0.data), indent=2).encode(), {"other": "x"})
    assert reg.put_if_absent(SID, same, Strategy.ALWAYS_INCOMPATIBLE) == 0
    stored = reg.latest(SID)
    assert stored is not None
    assert (stored.version, stored.type, stored.data, stored.properties) == (0, "AVRO", V0.data, {"origin": "test"})
    assert stored.timestamp == 1_700_000_001_000
    assert not stored.deleted


def test_compatible_change_gets_a_new_version_incompatible_is_refused(store: MetadataStore) -> None:
    reg = SchemaRegistry(store)
    reg.put_if_absent(SID, V0, Strategy.FULL)
    assert reg.put_if_absent(SID, V1, Strategy.FULL) == 1
    with pytest.raises(IncompatibleSchemaError):
        reg.put_if_absent(SID, INCOMPATIBLE, Strategy.FULL)
    assert [s.version for s in reg.history(SID)] == [0, 1]
    # an old version is still found and reused
    assert reg.put_if_absent(SID, V0, Strategy.FULL) == 0
    assert reg.find_version(SID, V1) == 1
    assert reg.find_version(SID, INCOMPATIBLE) is None
    assert reg.get(SID, 0).data == V0.data
    assert reg.get(SID).version == 1
    assert reg.get(SID, 7) is None


def test_invalid_definitions_are_refused(store: MetadataStore) -> None:
    reg = SchemaRegistry(store)
    with pytest.raises(InvalidSchemaError):
        reg.put_if_absent(SID, SchemaData("AVRO", b"{"), Strategy.FULL)
    assert reg.history(SID) == []


def test_auto_update_disabled_only_reuses(store: MetadataStore) -> None:
    reg = SchemaRegistry(store)
    with pytest.raises(IncompatibleSchemaError, match="auto updating is disabled"):
        reg.add_schema(SID, V0, Strategy.FULL, allow_auto_update=False)
    reg.add_schema(SID, V0, Strategy.FULL)
    assert reg.add_schema(SID, V0, Strategy.FULL, allow_auto_update=False) == 0
    with pytest.raises(IncompatibleSchemaError):
        reg.add_schema(SID, V1, Strategy.FULL, allow_auto_update=False)


def test_soft_delete_starts_a_fresh_chain(store: MetadataStore) -> None:
    reg = SchemaRegistry(store)
    reg.put_if_absent(SID, V0, Strategy.FULL)
    reg.put_if_absent(SID, V1, Strategy.FULL)
    assert reg.delete(SID) == 2
    assert reg.delete(SID) is None  # nothing left to delete
    assert reg.latest(SID) is None
    assert not reg.has_schema(SID)
    assert reg.get(SID, 0) is None  # versions before the delete are not served
    assert reg.active(SID) == []
    marker = reg.history(SID)[-1]
    assert marker.deleted and marker.version == 2
    # an unrelated schema is accepted: no compatibility with the deleted chain
    assert reg.put_if_absent(SID, INCOMPATIBLE, Strategy.FULL) == 3
    assert reg.find_version(SID, V0) is None
    assert [s.version for s in reg.active(SID)] == [3]


def test_forced_delete_forgets_everything(store: MetadataStore) -> None:
    reg = SchemaRegistry(store)
    reg.put_if_absent(SID, V0, Strategy.FULL)
    assert reg.delete_all(SID)
    assert not reg.delete_all(SID)
    assert reg.history(SID) == []
    assert reg.put_if_absent(SID, INCOMPATIBLE, Strategy.FULL) == 0


def test_histories_survive_reopening_the_store(tmp_path: Path) -> None:
    kv = encode_key_value(SchemaData("STRING"), V0)
    with MetadataStore(tmp_path) as store:
        reg = SchemaRegistry(store)
        reg.put_if_absent(SID, V0, Strategy.FULL)
        reg.put_if_absent(SID, V1, Strategy.FULL)
        reg.put_if_absent("public/default/other", kv, Strategy.FULL)
        reg.put_if_absent("public/default/gone", SchemaData("STRING"), Strategy.FULL)
        reg.delete("public/default/gone")
        before = reg.history(SID)
    with MetadataStore(tmp_path) as store:
        reg = SchemaRegistry(store)
        assert reg.history(SID) == before
        assert reg.latest(SID).version == 1
        assert reg.get("public/default/other").schema == kv
        assert reg.latest("public/default/gone") is None
        assert [s.deleted for s in reg.history("public/default/gone")] == [False, True]
        assert reg.schema_ids() == sorted(["public/default/gone", "public/default/other", SID])
        # and go on where they left off
        assert reg.put_if_absent(SID, INCOMPATIBLE, Strategy.ALWAYS_COMPATIBLE) == 2


def test_ids_with_common_prefixes_do_not_mix(store: MetadataStore) -> None:
    reg = SchemaRegistry(store)
    reg.put_if_absent("t/n/a", V0, Strategy.FULL)
    reg.put_if_absent("t/n/a-b", SchemaData("STRING"), Strategy.FULL)
    assert [s.type for s in SchemaRegistry(store).history("t/n/a")] == ["AVRO"]


def test_check_compatible_and_consumer_checks(store: MetadataStore) -> None:
    reg = SchemaRegistry(store)
    with pytest.raises(SchemaNotFoundError):
        reg.check_consumer(SID, V0, Strategy.FULL)
    reg.put_if_absent(SID, V0, Strategy.FULL)
    assert reg.is_compatible(SID, V1, Strategy.FULL) == (True, "")
    ok, reason = reg.is_compatible(SID, INCOMPATIBLE, Strategy.FULL)
    assert not ok and "id" in reason
    assert reg.is_compatible(SID, V0, Strategy.ALWAYS_INCOMPATIBLE)[0]  # existing version
    reg.check_consumer(SID, V1, Strategy.FULL)
    with pytest.raises(IncompatibleSchemaError):
        reg.check_consumer(SID, INCOMPATIBLE, Strategy.FULL)
    assert [s.version for s in reg.history(SID)] == [0]  # checks write nothing


def test_rest_view(store: MetadataStore) -> None:
    reg = SchemaRegistry(store, clock=Clock())
    reg.put_if_absent(SID, V0, Strategy.FULL)
    view = reg.latest(SID).to_rest()
    assert view == {
        "version": 0,
        "type": "AVRO",
        "timestamp": 1_700_000_001_000,
        "data": V0.data.decode(),
        "properties": {"origin": "test"},
    }
    reg.put_if_absent("t/n/kv", encode_key_value(SchemaData("STRING", b""), V0), Strategy.FULL)
    data = json.loads(reg.latest("t/n/kv").to_rest()["data"])
    assert data == {"key": "", "value": json.loads(V0.data)}


def test_a_new_id_reads_no_database(store: MetadataStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every history is read when the registry is made: a PRODUCER on a new topic reads nothing."""
    SchemaRegistry(store).put_if_absent(SID, V0, Strategy.FULL)
    reg = SchemaRegistry(store)

    def no_read(*args: object) -> None:
        raise AssertionError("the registry read the database after it was made")

    monkeypatch.setattr(store, "list_kv", no_read)
    monkeypatch.setattr(store, "get_kv", no_read)
    assert reg.history("public/default/new") == []
    assert not reg.has_schema("public/default/new")
    assert reg.put_if_absent("public/default/new", V0, Strategy.FULL) == 0
    assert reg.latest(SID).version == 0
    assert reg.put_if_absent(SID, V1, Strategy.FULL) == 1
    assert reg.schema_ids() == ["public/default/new", SID]
    monkeypatch.undo()
    assert [s.version for s in SchemaRegistry(store).history(SID)] == [0, 1], "the writes reached the store"
