#!/usr/bin/env bash
# Install laptime into .venv and serve it on an embedded PostgreSQL (no other set-up).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q -e ./client -e .
exec .venv/bin/laptime serve "$@"
