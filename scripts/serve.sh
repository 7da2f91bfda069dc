#!/usr/bin/env bash
# Install laptime into .venv and serve it on an embedded PostgreSQL (no other set-up).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
# The locked versions, with the embedded extra (pgserver: PostgreSQL's binaries).
.venv/bin/python -m pip install -q -r requirements/embedded.lock -e '.[embedded]'
exec .venv/bin/laptime serve "$@"
