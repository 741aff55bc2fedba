#!/usr/bin/env bash
# Run every test: lint and types, each package's unit tests in its own
# environment, and the integration tests against a real Kubernetes API server
# (a local control plane is built and started, unless --kopf-cluster=existing or
# KOPF_TESTING_CLUSTER=existing asks for the cluster of KUBECONFIG),
# the documentation, and a smoke run of the benchmarks.
# Extra arguments go to the integration tests' pytest (e.g. --kopf-cluster=existing).
#
# The integration tests run in $KOPF_TEST_WORKERS parallel pytest workers (pytest-xdist),
# each with a local control plane of its own, so that no test sees another's CRDs, webhooks,
# Leases or API server restarts; a module's tests stay together on one worker. Each step's
# duration goes to $KOPF_TEST_RESULTS/steps.tsv (default: .test-results/), the integration
# tests' durations to integration.xml beside it, and the slowest tests are printed.
source "$(dirname "${BASH_SOURCE[0]}")/_bootstrap.sh"
source "$ROOT/scripts/_steps.sh"

WORKERS="${KOPF_TEST_WORKERS:-3}"
PARALLEL=(-n "$WORKERS" --dist loadscope)

step "lint: ruff"           hatch run lint:check-ruff
step "lint: mypy --strict"  hatch run lint:check-types
step "lint: import contracts" hatch run lint:check-imports
step "lint: module and function sizes" python3 scripts/check_sizes.py
# The documentation site, built strictly (a broken link or reference fails), and its
# executed pages and manifests (the getting-started and testing pages' blocks, the
# deployment manifests dry-run on the server).
step "docs: build (strict)"   hatch run docs:check
step "docs: executed pages and manifests" hatch run integration:test docs/tests "${PARALLEL[@]}"
step "kopf-core unit tests"   hatch run core:test
step "kopf-client unit tests" hatch run client:test
step "kopf-cli unit tests"    hatch run cli:test
step "kopf-webhooks unit tests" hatch run webhooks:test
step "kopf-testing unit tests" hatch run testing:test
step "kopf-testing installed (not editable)" bash scripts/check_install.sh
step "release: all five packages built, checked (twine), installed together" bash scripts/build.sh
step "integration tests"      hatch run integration:test integration "${PARALLEL[@]}" --durations=20 \
    --junitxml="$RESULTS/integration.xml" "$@"
# The testing example's tests, unchanged, on the in-memory API; every example's test (that one
# included) on the local control plane.
step "example 09 on the in-memory API"       hatch run integration:test examples/09-testing --kopf-cluster=memory
step "examples on the local control plane"   hatch run integration:test examples --kopf-cluster=local "${PARALLEL[@]}"
# Tiny sizes, both sides (ours and upstream Kopf): only that the harness still works, no figures judged.
step "benchmarks smoke run"   hatch run bench:smoke

finish
