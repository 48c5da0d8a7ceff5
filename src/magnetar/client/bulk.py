"""Batch-level reading and writing: whole entries in, whole batches out, no Message per message.

The public bulk API (its names are kept stable; the Spark connector and the geo-replication
helper use it):

- :func:`open_entry_reader` ``(client, topic, start, **options)`` -> :class:`EntryReader`: a
  started non-durable, exclusive reader of one topic or partition; its ``receive(max_messages,
  timeout_ms)`` hands over :class:`Entry` objects (id, metadata, payload decompressed, chunks
  joined), ``acknowledge_cumulative(entry)`` and ``close()`` end with them;
- :class:`MessageColumns`: the messages of entries split into plain lists (payloads, keys,
  event times, properties, batch indexes), column by column, to build Arrow arrays from;
- :func:`encode_batch_payload` ``(payloads, keys, properties, event_times)`` -> ``bytes``: the
  payload of a batch entry as a producer would batch these messages one by one;
- :func:`send_batch` ``(producer, payload, count, first_sequence_id, last_sequence_id,
  callback, txn=None)``: (on the client's loop) send such a payload through an
  :class:`~magnetar.client.core.producer.AsyncProducer` as one entry (in a transaction: its id,
  the partition registered first with ``AsyncTransaction.register_partition``).

The machinery lives in the core (:mod:`magnetar.client.core.entry_reader`,
:mod:`~magnetar.client.core.batch_payload`) and, for the column split (the wire's bytes read
into lists), in :mod:`magnetar.protocol.batch_columns`.
"""

from magnetar.client.core.batch_payload import encode_batch_payload, send_batch
from magnetar.client.core.entry_reader import Entry, EntryReader, open_entry_reader
from magnetar.protocol.batch_columns import MessageColumns

__all__ = ["Entry", "EntryReader", "MessageColumns", "encode_batch_payload", "open_entry_reader", "send_batch"]
