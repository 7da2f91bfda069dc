#!/usr/bin/env bash
# Regenerate requirements/*.lock: every package (name==version) that installing laptime with
# each set of extras brings into a clean venv, solved once for the largest set (test) so the
# smaller sets pin the very same versions. Run after changing pyproject.toml's dependencies;
# tests/test_install.py fails while a lock misses a package. Pins are for CPython 3.11 on Linux
# (the tests' python3 and the Docker image's python:3.11-slim).
set -euo pipefail
cd "$(dirname "$0")/.."
python=${PYTHON:-python3}
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT

freeze() {  # freeze NAME SPEC [PIP ARGS...]: solve SPEC in a clean venv, write requirements/NAME.lock
    local name=$1 spec=$2
    shift 2
    "$python" -m venv "$scratch/$name"
    "$scratch/$name/bin/python" -m pip install -q "$@" -e "$spec"
    {
        echo "# requirements/$name.lock: laptime $spec, pinned by scripts/lock.sh; do not edit."
        echo "# $("$scratch/$name/bin/python" -c 'import platform, sys; print(platform.python_implementation(), sys.version.split()[0], sys.platform, platform.machine())')"
        "$scratch/$name/bin/python" -m pip freeze --exclude-editable --all \
            | grep -v -E '^(pip|setuptools|wheel)==' | LC_ALL=C sort -f
    } >"requirements/$name.lock"
    echo "requirements/$name.lock: $(grep -vc '^#' "requirements/$name.lock") packages"
}

mkdir -p requirements
freeze test ".[test]"
freeze embedded ".[embedded]" -c requirements/test.lock
freeze server "." -c requirements/test.lock
