"""Geo-replication as Apache Pulsar does it: per topic and remote cluster, a durable cursor
``pulsar.repl.<remote>`` and an outbound producer ``pulsar.repl.<local>--><remote>`` sending whole
entries with ``replicated_from`` set (:mod:`.replicator`), started and stopped with the topics and
the replication policies (:mod:`.manager`), over a minimal client of the binary protocol
(:mod:`.outbound`); :mod:`.names` holds the reserved names the rest of the broker checks.

Nothing is imported here, so the session and the topics can import :mod:`.names` alone.
"""
