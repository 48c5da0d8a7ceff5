"""The asyncio core: ``AsyncClient`` and everything that speaks to the broker.

Connections and lookups (``connection``, ``lookup``), reconnection with backoff (``handler``),
registration on the broker (``registration``); producers (``producer``: batching, compression,
chunking; ``sends``, ``send_completion``; ``partitioned``: routing over partitions); consumers
(``consumer``, ``receiver``, ``opening``: MESSAGE frames into messages, ``acks``,
``batch_messages``, ``chunks``, ``trackers``, ``redelivery``, ``dead_letter``; ``multi_topic``,
``reader``, ``tableview``); whole entries for bulk readers and writers (``entry_reader``,
``columns``, ``batch_payload``: see :mod:`magnetar.client.bulk`). Imports ``api`` and
``exceptions`` only: never a face, never ``schema`` (schemas are carried as objects).
"""
