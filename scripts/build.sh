#!/usr/bin/env bash
# Build the wheels and sdists of all five packages into dist/ (or $DIST), check
# them (twine's metadata check, and what each archive holds), install them
# together into a fresh virtual environment from the built files only, and use
# them from there: the imports, `kopf --version`, and kopf-testing's own checks
# (scripts/check_install.sh on the built wheels). Run from anywhere.
source "$(dirname "${BASH_SOURCE[0]}")/_bootstrap.sh"

PACKAGES=(kopf-core kopf-client kopf-cli kopf-testing kopf-webhooks)
# The extras installed with them (kopf-cli[uvloop], kopf-client[metrics]): their third-party
# packages come from the index like the others.
EXTRAS=(uvloop metrics)
DIST="${DIST:-$ROOT/dist}"

rm -rf "$DIST"
mkdir -p "$DIST"
for package in "${PACKAGES[@]}"; do
    # The wheel is built from the sdist, so a file missing from the sdist fails here.
    uv build --quiet --out-dir "$DIST" "packages/$package"
done
echo "Built:"
ls -1 "$DIST"

hatch run release:check-metadata "$DIST"/*
hatch run release:check-archives "$DIST"

WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
uv venv --quiet --python "$PYTHON" "$WORK/venv"
VENV_PY="$WORK/venv/bin/python"
# The third-party dependencies from the index first; then ours from the built files only,
# resolved together offline: mismatched siblings would fail here.
hatch run release:check-archives "$DIST" --requirements "${EXTRAS[@]}" >"$WORK/requirements.txt"
uv pip install --quiet --python "$VENV_PY" -r "$WORK/requirements.txt"
# --no-cache: the version stays 0.1.0 from build to build, and uv would reuse an older build's wheel.
uv pip install --python "$VENV_PY" --no-cache --no-index --find-links "$DIST" \
    "kopf-cli[uvloop]" "kopf-client[metrics]" "${PACKAGES[@]}"
uv pip check --python "$VENV_PY"

cd "$WORK"  # away from the checkout: nothing may be imported from the source tree
"$VENV_PY" - <<'PY'
import importlib, importlib.metadata as md
for dist, module in [('kopf-core', 'kopf'), ('kopf-client', 'kopf_client'), ('kopf-cli', 'kopf_cli'),
                     ('kopf-testing', 'kopf_testing'), ('kopf-webhooks', 'kopf_webhooks')]:
    imported = importlib.import_module(module)
    assert 'site-packages' in imported.__file__, f'{module} is not the installed copy: {imported.__file__}'
    files = [str(f) for f in md.files(dist) or []]
    assert f'{module}/py.typed' in files, f'{dist} is installed without {module}/py.typed'
    assert any(f.endswith('licenses/LICENSE') for f in files), f'{dist} is installed without its LICENSE'
import platform
if platform.system() != 'Windows':
    importlib.import_module('uvloop')  # kopf-cli[uvloop]
importlib.import_module('prometheus_client')  # kopf-client[metrics]
import kopf
print(f'kopf {kopf.__version__} imported from {kopf.__file__}')
PY
"$WORK/venv/bin/kopf" --version
cd "$ROOT"
bash scripts/check_install.sh --from "$DIST"
echo "All five packages are built, checked, and work when installed together from $DIST."
