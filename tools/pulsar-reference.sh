#!/usr/bin/env bash
# Apache Pulsar as the reference: tests/interop against Pulsar standalone (from Maven Central) and
# against magnetar, result table in docs/REFERENCE.md (see tools/pulsar_reference.py). Not part of CI.
# usage: tools/pulsar-reference.sh [--work DIR] [--only pulsar|magnetar] [-- PYTEST_ARGS...]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec "$root/.venv/bin/python" "$root/tools/pulsar_reference.py" "$@"
