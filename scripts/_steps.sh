# Sourced by the test scripts: `step NAME COMMAND...` runs one step, says whether it passed,
# and records its duration in $RESULTS/steps.tsv; `step_aside NAME COMMAND...` starts one in
# the background (its output kept in $RESULTS/NAME.log), `join_asides` waits for those and
# shows their output; `finish` prints the durations and exits non-zero if any step failed.
RESULTS="${KOPF_TEST_RESULTS:-$ROOT/.test-results}"
mkdir -p "$RESULTS"
printf 'step\tseconds\tresult\n' > "$RESULTS/steps.tsv"
failed=()
asides=()
started_at=$(date +%s)

_record() {  # NAME SECONDS EXIT_CODE
    local result=passed
    if [ "$3" -ne 0 ]; then
        result="FAILED (exit code $3)"
        failed+=("$1")
    fi
    echo ">>> $1: $result"
    printf '%s\t%s\t%s\n' "$1" "$2" "$result" >> "$RESULTS/steps.tsv"
}

step() {
    local name="$1" began code=0; shift
    echo
    echo ">>> $name"
    began=$(date +%s)
    "$@" || code=$?
    _record "$name" "$(( $(date +%s) - began ))" "$code"
}

step_aside() {
    local name="$1" log; shift
    log="$RESULTS/$(echo "$name" | tr -c 'a-zA-Z0-9\n' '-').log"
    echo
    echo ">>> $name: started in the background (its output: $log)"
    ( began=$(date +%s); code=0; "$@" > "$log" 2>&1 || code=$?
      echo "$(( $(date +%s) - began )) $code" > "$log.done" ) &
    asides+=("$!:$name:$log")
}

join_asides() {
    local entry pid name log seconds code
    for entry in "${asides[@]}"; do
        IFS=: read -r pid name log <<< "$entry"
        wait "$pid" || true
        echo
        echo ">>> $name (ran in the background):"
        cat "$log"
        read -r seconds code < "$log.done" || { seconds=0; code=1; }
        _record "$name" "$seconds" "$code"
    done
    asides=()
}

finish() {
    join_asides
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
