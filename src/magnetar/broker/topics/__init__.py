"""Topics: the persistent and non-persistent kinds, their producers, lifecycle and compaction."""
