# Sourced by the other scripts: installs the project's tools (hatch, uv) into
# .tools/ at the repository root, once, and puts them on PATH.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="$ROOT/.tools"
HATCH_VERSION="1.18.2"
PYTHON="${PYTHON:-python3}"

if ! "$TOOLS/bin/hatch" --version 2>/dev/null | grep -q "$HATCH_VERSION"; then
    echo ">>> Installing the project's tools into $TOOLS (hatch $HATCH_VERSION, uv)"
    "$PYTHON" -m venv "$TOOLS"
    "$TOOLS/bin/pip" install --quiet --disable-pip-version-check "hatch==$HATCH_VERSION" "uv"
fi
export PATH="$TOOLS/bin:$PATH"
cd "$ROOT"
