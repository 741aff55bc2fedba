"""
The command line's help as a terminal shows it: plain text, without the docstrings' markup.

Inputs: ``kopf --help`` and ``kopf COMMAND --help`` for every command of the ``kopf``
group, run as ``python -m kopf``, as a user runs the ``kopf`` command. Outputs: their text,
which click takes from the commands' docstrings and the options' help: reStructuredText's
double backticks or Sphinx roles there are shown literally. No cluster is needed.
"""
from __future__ import annotations

import re
import subprocess
import sys

import click
import pytest

from kopf_cli import main

COMMANDS = sorted(main.list_commands(click.Context(main)))
_MARKUP = re.compile(r'``|:(class|func|mod|meth|data|attr|exc|obj):[`\w]')


def kopf_help(*args: str) -> str:
    result = subprocess.run([sys.executable, '-m', 'kopf', *args, '--help'], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_the_commands_are_all_listed() -> None:
    assert {'run', 'freeze', 'resume'} <= set(COMMANDS)
    listing = kopf_help()
    assert all(re.search(rf'^\s+{command}\s', listing, re.M) for command in COMMANDS), listing


@pytest.mark.parametrize('args', [(), *((command,) for command in COMMANDS)],
                         ids=['kopf', *(f'kopf-{command}' for command in COMMANDS)])
def test_the_help_has_no_markup(args: tuple[str, ...]) -> None:
    text = kopf_help(*args)
    assert not _MARKUP.search(text), text
