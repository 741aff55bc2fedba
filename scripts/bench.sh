#!/usr/bin/env bash
# The benchmarks: our packages and upstream Kopf side by side on a local control
# plane (built, started and stopped here). Arguments go to `python -m benchmarks run`
# (see benchmarks/README.md); by default the table goes to benchmarks/results/latest.md.
source "$(dirname "${BASH_SOURCE[0]}")/_bootstrap.sh"

args=("$@")
has_out=0
for arg in "${args[@]}"; do
    case "$arg" in --out|--out=*) has_out=1 ;; esac
done
if [ "$has_out" -eq 0 ]; then
    args+=(--out "$ROOT/benchmarks/results/latest")
fi
hatch run bench:run "${args[@]}"
