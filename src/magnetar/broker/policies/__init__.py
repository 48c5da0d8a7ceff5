"""Namespace and topic policies: one registry (:mod:`.registry`), value checks (:mod:`.validation`)
and the resolution of the policies in force for a topic (:mod:`.resolution`).

The package imports none of its modules: they are imported lazily, in worker threads (a topic's load,
the admin's statistics), and a package whose ``__init__`` imports its own modules deadlocks two
threads that import two of them at once (one holds a module's import lock and waits for the
package's, the other holds the package's and waits for that module's: Python raises ``_DeadlockError``
in one of them).
"""
