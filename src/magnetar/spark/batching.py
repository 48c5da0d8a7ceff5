"""How the sink cuts rows into batches: open batches per producer, and the column-at-a-time path.

A producer's open batch is cut as the producer would cut it: once it holds ``block`` rows
(batchingMaxMessages) or ``max_bytes`` payload bytes, and before a row that would take it past
``max_bytes``. For plain rows (a value column, a topic option, no properties, no event times),
the rows of an Arrow batch are routed to partitions and cut with numpy and Arrow, whole runs at a
time: :func:`partitions_of` and :func:`fill` replace a Python step per row.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


class OpenBatch:
    """Rows collected for one producer's next batch."""

    __slots__ = ("values", "keys", "props", "events", "first_seq", "last_seq", "size")

    def __init__(self) -> None:
        self.values: list[bytes | None] = []
        self.keys: list[str | None] = []
        self.props: list[dict[str, str] | None] = []
        self.events: list[int | None] = []
        self.first_seq = -1
        self.last_seq = -1
        self.size = 0


def partitions_of(keys: Any, n_rows: int, producers: int, block: int, row: int, index_of_key: Callable[[str], int]) -> Any:
    """The producer index of each row (numpy): by the key's hash (``index_of_key``, once per
    distinct key), or, without a key (null or empty), by blocks of ``block`` rows from ``row``."""
    import numpy as np

    blocks = ((row + np.arange(n_rows)) // block) % producers
    if keys is None or keys.null_count == n_rows:
        return blocks
    encoded = keys.dictionary_encode()
    distinct = encoded.dictionary.to_pylist()
    by_key = np.array([index_of_key(k) if k else -1 for k in distinct] or [-1], dtype=np.int64)
    indexes = encoded.indices.fill_null(0).to_numpy(zero_copy_only=False)
    keyed = by_key[indexes]
    if keys.null_count:
        keyed = np.where(encoded.indices.is_valid().to_numpy(zero_copy_only=False), keyed, -1)
    return np.where(keyed >= 0, keyed, blocks)


def fill(batch: OpenBatch, values: list[bytes], keys: list[str | None], sizes: Any, seqs: Any,
         block: int, max_bytes: int, cut: Callable[[], OpenBatch]) -> OpenBatch:
    """Append rows (``sizes``, ``seqs``: numpy arrays) to an open batch, calling ``cut()`` (which
    hands the batch over and returns the new empty one) wherever the producer would cut; returns
    the batch left open."""
    import numpy as np

    i = 0
    n = len(values)
    while i < n:
        take = min(block - len(batch.values), n - i)
        cum = batch.size + np.cumsum(sizes[i : i + take])
        over = np.flatnonzero(cum >= max_bytes)
        full = False
        if len(over):
            k = int(over[0])
            if cum[k] == max_bytes or (k == 0 and not batch.values):
                take, full = k + 1, True  # the row reaching the limit goes in, then the cut
            elif k == 0:
                batch = cut()  # the row would overflow a batch that has rows: cut before it
                continue
            else:
                take, full = k, True
        batch.values.extend(values[i : i + take])
        batch.keys.extend(keys[i : i + take])
        batch.props.extend([None] * take)
        batch.events.extend([None] * take)
        if batch.first_seq < 0:
            batch.first_seq = int(seqs[i])
        batch.last_seq = int(seqs[i + take - 1])
        batch.size = int(cum[take - 1])
        i += take
        if full or len(batch.values) >= block:
            batch = cut()
    return batch
