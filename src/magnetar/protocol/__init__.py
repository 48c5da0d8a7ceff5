"""The Pulsar binary protocol: wire schema, enumerations, framing, topic names, payload codecs.

Pure and sans-IO: nothing in this package does I/O or imports asyncio, the broker, the client
or the storage layer. Import what you use from its module; the package re-exports nothing, so
importing one module loads only what that module needs (``magnetar produce --help`` needs the
enumerations, not protobuf, compression or the schema: 3-6x the import time with them).

- the wire schema: ``PulsarApi.proto`` (vendored, the source), ``schema`` (generated from it by
  tools/gen_wire_schema.py), ``enums`` (its enumerations, ServerError codes, protocol versions);
- framing: ``frame`` (the frame layout, CRC32C), ``framing`` (FrameDecoder, ``encode_*``, entry
  splitting), ``commands`` (command builders, request ids);
- the hand-written fast paths, each tested byte for byte against protobuf: ``message_frame``
  (MESSAGE frames read), ``ack_frame`` (ACK frames written), ``hot_frames`` (the broker's
  MESSAGE heads and SEND_RECEIPTs), ``single_metadata`` (batched messages' metadata),
  ``message_id_bytes`` (serialized message ids), ``varint``;
- payloads: ``batch`` (batch entries), ``compression``, ``avro`` (Avro schemas);
- ``hashing`` (Murmur3, Java's String.hashCode), ``topic_name``.
"""
