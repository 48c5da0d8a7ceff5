"""encode_batch_payload (the bulk API's batches) is byte for byte the general encoder's batch."""

from __future__ import annotations

import random

from magnetar.client.core.batch_payload import encode_batch_payload
from magnetar.protocol.batch import BatchMessage, encode_batch


def general(
    payloads: list[bytes | None],
    keys: list[str | None] | None,
    properties: list[dict[str, str] | None] | None,
    event_times: list[int | None] | None,
) -> bytes:
    messages = []
    for i, value in enumerate(payloads):
        messages.append(BatchMessage(
            b"" if value is None else value,
            dict((properties and properties[i]) or {}),
            None if keys is None else keys[i],
            None,
            (event_times and event_times[i]) or 0,
            None,
            value is None,
        ))
    return encode_batch(messages)


def test_values_and_keys_only() -> None:
    values = [b"v" * n for n in (0, 1, 127, 128, 16383, 16384, 70000, 1, 1)]
    keys = [None, "a", "", "a", None, "κλειδί", "b" * 300, "a", None]
    assert encode_batch_payload(values) == general(values, None, None, None)
    assert encode_batch_payload(values, keys) == general(values, keys, None, None)


def test_random_rows_with_properties_event_times_and_null_values() -> None:
    rng = random.Random(22)
    for _ in range(300):
        n = rng.randrange(1, 30)
        values = [rng.choice([None, b"", rng.randbytes(rng.choice([3, 200, 20000]))]) for _ in range(n)]
        keys = rng.choice([None, [rng.choice([None, "", f"k{rng.randrange(5)}"]) for _ in range(n)]])
        props = rng.choice([None, [rng.choice([None, {}, {"p": "q" * rng.randrange(300)}]) for _ in range(n)]])
        events = rng.choice([None, [rng.choice([None, 0, rng.getrandbits(rng.choice([20, 41, 64]))]) for _ in range(n)]])
        assert encode_batch_payload(values, keys, props, events) == general(values, keys, props, events)
