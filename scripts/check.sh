#!/usr/bin/env bash
# The fast inner loop: lint (ruff), types (mypy --strict), the import contracts, the
# modules' and functions' sizes, and every package's unit tests, each in its own
# environment. No cluster, no documentation build, no integration tests: for those,
# scripts/test.sh. Arguments go to every unit-test run's pytest (e.g. -x, -q).
# The unit tests run in the background, side by side, while the linters run: most of
# their time is spent waiting (subprocesses, sockets, timers), not on the cores.
source "$(dirname "${BASH_SOURCE[0]}")/_bootstrap.sh"
KOPF_TEST_RESULTS="${KOPF_TEST_RESULTS:-$ROOT/.test-results/check}"
source "$ROOT/scripts/_steps.sh"

for package in core client cli webhooks testing; do
    step_aside "kopf-$package unit tests" hatch run "$package:test" "packages/kopf-$package/tests" "$@"
done
step "lint: ruff"               hatch run lint:check-ruff
step "lint: mypy --strict"      hatch run lint:check-types
step "lint: import contracts"   hatch run lint:check-imports
step "lint: module and function sizes" python3 scripts/check_sizes.py

finish
