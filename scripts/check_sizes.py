"""
Check that the packages' modules and functions stay small enough to read.

A module of the packages' sources has at most 400 lines, a function at most 50
(from its ``def`` to its end, the docstring included; not its decorators, which
declare, e.g. a command's options). Prints each one over its limit and
exits with 1 if any is; with ``--report``, lists them and exits with 0.

    python scripts/check_sizes.py [--report]
"""
from __future__ import annotations

import ast
import pathlib
import sys
from typing import Iterator

MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 50
ROOT = pathlib.Path(__file__).resolve().parent.parent
SOURCES = 'packages/*/src/**/*.py'
EXCLUDED_PARTS = {'gomod'}  # the control plane's Go module: not Python sources


def iter_oversized(path: pathlib.Path) -> Iterator[str]:
    text = path.read_text()
    relative = path.relative_to(ROOT)
    lines = len(text.splitlines())
    if lines > MAX_MODULE_LINES:
        yield f"{relative}: the module has {lines} lines (at most {MAX_MODULE_LINES})"
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                yield (f"{relative}:{node.lineno}: {node.name}() has {length} lines "
                       f"(at most {MAX_FUNCTION_LINES})")


def main(argv: list[str]) -> int:
    paths = sorted(p for p in ROOT.glob(SOURCES) if not EXCLUDED_PARTS & set(p.parts))
    problems = [problem for path in paths for problem in iter_oversized(path)]
    for problem in problems:
        print(problem)
    if not problems:
        print(f"All {len(paths)} modules and their functions are within the limits.")
    return 0 if '--report' in argv or not problems else 1


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
