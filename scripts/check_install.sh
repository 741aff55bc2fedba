#!/usr/bin/env bash
# Install the packages from the checkout as a user would (not editable) into a
# fresh virtual environment outside the repository, and check that kopf-testing
# works from there: its control-plane command, its Go module (package data), and
# its pytest plugin. Run from anywhere; removes the environment afterwards.
# With `--from DIST`, the packages are installed from the wheels built there instead.
source "$(dirname "${BASH_SOURCE[0]}")/_bootstrap.sh"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
uv venv --quiet --python "$PYTHON" "$WORK/venv"
VENV_PY="$WORK/venv/bin/python"
PACKAGES=(kopf-core kopf-client kopf-cli kopf-testing)
if [ "${1:-}" = "--from" ]; then
    # The built wheels (scripts/build.sh): ours from there only, the third-party ones from the index.
    DIST="$(cd "$2" && pwd)"
    # --no-cache: the version stays the same from build to build; uv would reuse an older wheel.
    uv pip install --quiet --python "$VENV_PY" --no-cache --find-links "$DIST" --no-index --no-deps "${PACKAGES[@]}"
    uv pip install --quiet --python "$VENV_PY" --find-links "$DIST" "${PACKAGES[@]}"
else
    uv pip install --quiet --python "$VENV_PY" "${PACKAGES[@]/#/packages/}"
fi

cd "$WORK"  # away from the checkout: nothing may be imported from the source tree
"$VENV_PY" - <<'PY'
import pathlib, kopf_testing.controlplane as cp
assert 'site-packages' in cp.__file__, f'not the installed copy: {cp.__file__}'
assert cp.read_kubernetes_version().startswith('v1.'), 'the Go module is not shipped as package data'
for name in ('go.mod', 'go.sum', 'tools.go'):
    assert (pathlib.Path(cp.__file__).parent / 'gomod' / name).is_file(), f'gomod/{name} is missing'
PY
"$VENV_PY" -m kopf_testing.controlplane --help >/dev/null
# The pytest plugin is registered (entry point pytest11) and offers its fixtures.
fixtures="$("$VENV_PY" -m pytest --fixtures -p no:cacheprovider 2>&1)"
for name in kopf_registry kopf_runner kopf_cluster kopf_namespace kopf_kube kopf_crd kopf_operator \
            kopf_operator_process kopf_memory_api; do
    if ! grep -Eq "^$name( \[[a-z ]+\])? -- " <<<"$fixtures"; then
        echo "The pytest plugin of kopf-testing does not offer the fixture '$name':" >&2
        echo "$fixtures" >&2
        exit 1
    fi
done
# And it works: the example's tests, on the in-memory API (the real clusters are the integration tests' job).
mkdir -p "$WORK/examples"
cp -r "$ROOT/examples/09-testing" "$ROOT/examples/crd.yaml" "$WORK/examples/"
"$VENV_PY" -m pytest -q -p no:cacheprovider "$WORK/examples/09-testing" --kopf-cluster=memory
echo "kopf-testing works when installed (not editable)."
