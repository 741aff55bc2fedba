#!/usr/bin/env bash
# The documentation site (MkDocs): `bash scripts/docs.sh` serves it on http://127.0.0.1:8000 and
# rebuilds it on changes; `bash scripts/docs.sh build` writes it to site/. Other arguments go to
# `mkdocs serve` (e.g. --dev-addr 0.0.0.0:8000).
source "$(dirname "${BASH_SOURCE[0]}")/_bootstrap.sh"
if [ "${1:-}" = build ]; then
    shift
    exec hatch run docs:build "$@"
fi
exec hatch run docs:serve "$@"
