#!/usr/bin/env bash
# Install what the tests need (venv, the package with its test extra, Debian's chromium) and
# run every check: ruff, mypy, import contracts, then the test suite on 2 processes.
set -uo pipefail
cd "$(dirname "$0")/.."
started=$(date +%s)

step() { printf '\n== %s\n' "$*"; }

step "install"
if [ ! -x .venv/bin/python ]; then
    python3 -m venv .venv || exit 1
fi
.venv/bin/python -m pip install -q --upgrade pip >/dev/null 2>&1 || true
# Exactly the versions of requirements/test.lock (scripts/lock.sh makes it), so two runs a week
# apart test the same dependencies; the client again for its `laptime-ci` script and the pytest
# plugin's entry point (the server's distribution carries only its import package).
.venv/bin/python -m pip install -q -r requirements/test.lock -e ./client -e '.[test]' \
    || { echo "summary: install failed"; exit 1; }
# Debian packages the browser tests and the real-runner tests (tests/runners) use, installed
# only when missing and only as root, one at a time so one failure doesn't stop the others; a
# failed install warns (browser tests then fail, real-runner tests skip). Maven is not
# installed here: its test needs an offline ~/.m2 holding Surefire, which apt can't give.
apt_packages=()
command -v chromium >/dev/null 2>&1 || apt_packages+=(chromium)
command -v go >/dev/null 2>&1 || apt_packages+=(golang-go)
command -v rspec >/dev/null 2>&1 || apt_packages+=(ruby-rspec)
if [ "${#apt_packages[@]}" -gt 0 ]; then
    if [ "$(id -u)" = 0 ]; then
        apt-get update -qq >/tmp/laptime-apt.log 2>&1 || echo "warning: apt-get update failed"
        for package in "${apt_packages[@]}"; do
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$package" >>/tmp/laptime-apt.log 2>&1 \
                || echo "warning: $package install failed (see /tmp/laptime-apt.log)"
        done
    else
        echo "warning: ${apt_packages[*]} not installed and this is not root; browser tests fail, real-runner tests skip"
    fi
fi
# The Jest real-runner test installs jest offline, from npm's cache: fill the cache once.
if command -v npm >/dev/null 2>&1; then
    npm_scratch=$(mktemp -d)
    (cd "$npm_scratch" && npm install --no-audit --no-fund --silent jest@29 jest-junit@16) \
        >/tmp/laptime-npm.log 2>&1 || echo "warning: npm could not cache jest (see /tmp/laptime-npm.log)"
    rm -rf "$npm_scratch"
fi

lint_status=0
step "ruff"
.venv/bin/ruff check . || lint_status=1
.venv/bin/ruff format --check . || lint_status=1
step "mypy"
.venv/bin/mypy || lint_status=1
step "import contracts"
.venv/bin/lint-imports || lint_status=1

step "pytest"
report=$(mktemp --suffix=.xml)
.venv/bin/python -m pytest -n 2 -q --junitxml="$report" "$@"
test_status=$?
if [ "$test_status" = 5 ]; then
    echo "pytest collected no tests"
fi

elapsed=$(( $(date +%s) - started ))
lint_word=ok
[ "$lint_status" = 0 ] || lint_word=failed
printf '\n'
.venv/bin/python scripts/summary.py "$report" --lint "$lint_word" --seconds "$elapsed" \
    || echo "summary: 0 passed, 1 failed (summary.py failed)"
if [ "$test_status" != 0 ] || [ "$lint_status" != 0 ]; then
    exit 1
fi
exit 0
