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
# The workers share the machine's cores with their control planes and operators: every wait of
# kopf-testing gives up twice as late as its test says (a wait still ends when its condition holds).
export KOPF_TESTING_PATIENCE="${KOPF_TESTING_PATIENCE:-2}"

step "lint: ruff"           hatch run lint:check-ruff
step "lint: mypy --strict"  hatch run lint:check-types
step "lint: import contracts" hatch run lint:check-imports
step "lint: module and function sizes" python3 scripts/check_sizes.py
# The documentation site, built strictly (a broken link or reference fails).
step "docs: build (strict)"   hatch run docs:check
step "kopf-core unit tests"   hatch run core:test
step "kopf-client unit tests" hatch run client:test
step "kopf-cli unit tests"    hatch run cli:test
step "kopf-webhooks unit tests" hatch run webhooks:test
step "kopf-testing unit tests" hatch run testing:test
step "kopf-testing installed (not editable)" bash scripts/check_install.sh
step "release: all five packages built, checked (twine), installed together" bash scripts/build.sh
# Tiny sizes, both sides (ours and upstream Kopf): only that the harness still works, no figures
# judged. It waits mostly on its operators and cluster, so it runs beside the integration tests.
step_aside "benchmarks smoke run" hatch run bench:smoke
# The testing example's tests, unchanged, on the in-memory API.
step "example 09 on the in-memory API" hatch run integration:test examples/09-testing --kopf-cluster=memory
# On the local control plane, in one pool of workers: the integration tests, the documentation's
# executed pages and manifests (the getting-started and testing pages' blocks, the deployment
# manifests dry-run on the server), and every example's test (09's included).
step "integration tests, the docs' executed pages, the examples" \
    hatch run integration:test integration docs/tests examples "${PARALLEL[@]}" --durations=20 \
    --junitxml="$RESULTS/integration.xml" "$@"

finish
