#!/usr/bin/env bash
# The demo: a local Kubernetes control plane, the example CRD, the 01-minimal
# operator, and one object created and deleted while the operator handles it.
# Everything is installed and started here, and stopped at the end.
source "$(dirname "${BASH_SOURCE[0]}")/_bootstrap.sh"

STATE="$ROOT/.demo"
mkdir -p "$STATE"
echo ">>> Preparing the environment with kopf-core, kopf-client, kopf-cli"
hatch env create demo >/dev/null
ENV_BIN="$(hatch env find demo)/bin"

OPERATOR_PID=""
cleanup() {
    set +e
    if [ -n "$OPERATOR_PID" ] && kill -0 "$OPERATOR_PID" 2>/dev/null; then
        kill -TERM "$OPERATOR_PID"; wait "$OPERATOR_PID"
    fi
    echo ">>> Stopping the local control plane"
    "$ENV_BIN/python" -m kopf_testing.controlplane stop --state-dir "$STATE/cluster" >&2
}
trap cleanup EXIT

echo ">>> Starting the local control plane (the first run builds it from the Go modules: a few minutes)"
eval "$("$ENV_BIN/python" -m kopf_testing.controlplane start --state-dir "$STATE/cluster")"
KUBECTL="$("$ENV_BIN/python" -m kopf_testing.controlplane build 2>/dev/null)/kubectl"

echo ">>> kubectl apply -f examples/crd.yaml"
"$KUBECTL" apply -f examples/crd.yaml
"$KUBECTL" wait --for condition=established --timeout=60s crd/kopfexamples.kopf.dev

echo ">>> kopf run examples/01-minimal/example.py --verbose -n default (in the background)"
"$ENV_BIN/kopf" run examples/01-minimal/example.py --verbose -n default >"$STATE/operator.log" 2>&1 &
OPERATOR_PID=$!
sleep 3

echo ">>> kubectl apply -f examples/obj.yaml"
"$KUBECTL" apply -f examples/obj.yaml
for _ in $(seq 1 60); do
    if [ -n "$("$KUBECTL" get kopfexample kopf-example-1 -o jsonpath='{.status.create_fn.message}')" ]; then break; fi
    sleep 1
done
echo ">>> The object as the operator has left it:"
"$KUBECTL" get kopfexample kopf-example-1 -o yaml

echo ">>> kubectl delete -f examples/obj.yaml"
"$KUBECTL" delete -f examples/obj.yaml --timeout=60s

sleep 1
kill -TERM "$OPERATOR_PID"; wait "$OPERATOR_PID" || true
OPERATOR_PID=""
echo ">>> The operator's log:"
cat "$STATE/operator.log"
