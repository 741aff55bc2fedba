#!/usr/bin/env bash
# The fast inner loop: lint (ruff), types (mypy --strict), the import contracts, the
# modules' and functions' sizes, and every package's unit tests, each in its own
# environment. No cluster, no documentation build, no integration tests: for those,
# scripts/test.sh. Arguments go to every unit-test run's pytest (e.g. -x, -q).
source "$(dirname "${BASH_SOURCE[0]}")/_bootstrap.sh"
KOPF_TEST_RESULTS="${KOPF_TEST_RESULTS:-$ROOT/.test-results/check}"
source "$ROOT/scripts/_steps.sh"

step "lint: ruff"               hatch run lint:check-ruff
step "lint: mypy --strict"      hatch run lint:check-types
step "lint: import contracts"   hatch run lint:check-imports
step "lint: module and function sizes" python3 scripts/check_sizes.py
step "kopf-core unit tests"     hatch run core:test packages/kopf-core/tests "$@"
step "kopf-client unit tests"   hatch run client:test packages/kopf-client/tests "$@"
step "kopf-cli unit tests"      hatch run cli:test packages/kopf-cli/tests "$@"
step "kopf-webhooks unit tests" hatch run webhooks:test packages/kopf-webhooks/tests "$@"
step "kopf-testing unit tests"  hatch run testing:test packages/kopf-testing/tests "$@"

finish
