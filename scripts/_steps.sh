# Sourced by the test scripts: `step NAME COMMAND...` runs one step, says whether it passed,
# and records its duration in $RESULTS/steps.tsv; `finish` prints the durations and exits
# non-zero if any step failed.
RESULTS="${KOPF_TEST_RESULTS:-$ROOT/.test-results}"
mkdir -p "$RESULTS"
printf 'step\tseconds\tresult\n' > "$RESULTS/steps.tsv"
failed=()
started_at=$(date +%s)

step() {
    local name="$1"; shift
    local began result
    echo
    echo ">>> $name"
    began=$(date +%s)
    if "$@"; then
        result=passed
    else
        result="FAILED (exit code $?)"
        failed+=("$name")
    fi
    echo ">>> $name: $result"
    printf '%s\t%s\t%s\n' "$name" "$(( $(date +%s) - began ))" "$result" >> "$RESULTS/steps.tsv"
}

finish() {
    echo
    echo ">>> Durations (seconds; also in $RESULTS/steps.tsv):"
    column -t -s $'\t' "$RESULTS/steps.tsv" 2>/dev/null || cat "$RESULTS/steps.tsv"
    echo "total: $(( $(date +%s) - started_at )) s"
    echo
    if [ "${#failed[@]}" -ne 0 ]; then
        echo "FAILED: ${failed[*]}"
        exit 1
    fi
    echo "All test suites passed."
}
