#!/usr/bin/env bash
# Run apache/pulsar-client-go's own ./pulsar/... tests against magnetar (see tools/go_client_suite.py).
# usage: tools/go-client-suite.sh [GIT_DIR] [--per-test-timeout S] [--budget S] [--run REGEX] [--race]
#        GIT_DIR defaults to the project's mirror /work/.mirror/apache+pulsar-client-go/repo
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
git_dir="/work/.mirror/apache+pulsar-client-go/repo"
if [[ $# -gt 0 && "$1" != -* ]]; then git_dir="$1"; shift; fi
exec "$root/.venv/bin/python" "$root/tools/go_client_suite.py" "$git_dir" "$@"
