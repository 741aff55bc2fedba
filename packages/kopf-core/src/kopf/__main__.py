"""
``python -m kopf ...``: the same as the ``kopf ...`` command.

The command line lives in the ``kopf-cli`` package, which the core does not
depend on: it is looked up only when this module runs, and its absence is
reported in one line with what to install, not with a traceback.
"""
import importlib
import sys
from typing import Any


def main() -> None:
    try:
        cli: Any = importlib.import_module('kopf_cli')
    except ModuleNotFoundError as e:
        if e.name != 'kopf_cli':
            raise  # kopf-cli is there, but broken: the traceback says more than we could.
        sys.exit("Error: the kopf command line is not installed: pip install kopf-cli")
    cli.main(prog_name='kopf')


if __name__ == '__main__':
    main()
