"""
The examples as the documentation promises them: each with a README and a test, each run with a scope.

Every ``examples/NN-topic/`` folder has a ``README.md`` and a ``test_*.py``, is
listed on the examples page with a link to its README, and every ``kopf run``
command in the code blocks of its README (and of the examples page) says what
it serves: ``-n``/``--namespace`` or ``-A``/``--all-namespaces``. Without
either, the operator starts cluster-wide with a warning, which is not what a
reader copying the command expects. No cluster is needed.
"""
from __future__ import annotations

import pathlib
import re
import shlex

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
EXAMPLES = REPO / 'examples'
EXAMPLES_PAGE = REPO / 'docs' / 'examples.md'
FOLDERS = sorted(path for path in EXAMPLES.iterdir() if path.is_dir() and re.match(r'\d\d-', path.name))
READMES = [folder / 'README.md' for folder in FOLDERS if (folder / 'README.md').exists()]
SCOPE_OPTIONS = ('-n', '--namespace', '-A', '--all-namespaces')

_FENCE = re.compile(r'^\s*```')


def code_lines(markdown: str) -> list[str]:
    """The lines inside the fenced code blocks, with the continuations (``\\``) joined."""
    lines: list[str] = []
    inside = False
    pending = ''
    for line in markdown.splitlines():
        if _FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            continue
        if line.rstrip().endswith('\\'):
            pending += line.rstrip()[:-1] + ' '
            continue
        lines.append(pending + line)
        pending = ''
    return lines


def kopf_run_commands(markdown: str) -> list[list[str]]:
    """The ``kopf run`` commands of the code blocks, as arguments (without the comments)."""
    commands: list[list[str]] = []
    for line in code_lines(markdown):
        text = line.strip().removeprefix('$ ')  # a shell prompt
        if re.match(r'kopf\s+run\b', text):
            commands.append(shlex.split(text, comments=True))
    return commands


def has_scope(command: list[str]) -> bool:
    """Whether the command says which namespaces it serves (``-n X``, ``--namespace=X``, ``-nX``, ``-A``)."""
    return any(word in SCOPE_OPTIONS or word.startswith(('--namespace=', '--all-namespaces='))
               or (word.startswith('-n') and not word.startswith('--')) for word in command)


@pytest.mark.parametrize('folder', FOLDERS, ids=[folder.name for folder in FOLDERS])
def test_every_example_has_a_readme_and_a_test(folder: pathlib.Path) -> None:
    assert (folder / 'README.md').is_file(), f"{folder.name} has no README.md"
    assert sorted(folder.glob('test_*.py')), f"{folder.name} has no test (test_*.py)"


@pytest.mark.parametrize('readme', READMES, ids=[readme.parent.name for readme in READMES])
def test_every_kopf_run_of_the_examples_has_a_scope(readme: pathlib.Path) -> None:
    commands = kopf_run_commands(readme.read_text())
    unscoped = [shlex.join(command) for command in commands if not has_scope(command)]
    assert not unscoped, f"{readme.parent.name}/README.md runs kopf without -n or -A: {unscoped}"


@pytest.mark.parametrize('readme', READMES, ids=[readme.parent.name for readme in READMES])
def test_every_kopf_run_of_the_examples_runs_its_own_file(readme: pathlib.Path) -> None:
    for command in kopf_run_commands(readme.read_text()):
        paths = [word for word in command if word.endswith('.py')]
        assert paths and all((REPO / path).is_file() for path in paths), shlex.join(command)


def test_every_kopf_run_of_the_examples_page_has_a_scope() -> None:
    commands = kopf_run_commands(EXAMPLES_PAGE.read_text())
    assert commands
    assert all(has_scope(command) for command in commands), commands


def test_every_example_is_listed_on_the_examples_page() -> None:
    page = EXAMPLES_PAGE.read_text()
    missing = [folder.name for folder in FOLDERS
               if f'[{folder.name}](../examples/{folder.name}/README.md)' not in page]
    assert not missing, f"Not listed on docs/examples.md (with a link to the README): {missing}"


def test_the_commands_without_a_scope_are_found() -> None:
    markdown = '\n'.join([
        'Text: kopf run outside.py of any block is prose.',
        '```bash',
        'kubectl apply -f examples/crd.yaml',
        'kopf run a.py --verbose   # -n default in a comment does not count',
        'kopf run b.py --verbose -n default',
        '$ kopf run c.py -A',
        'kopf run d.py \\',
        '    --namespace=default',
        'kopf run e.py --verbose',
        '```',
    ])
    commands = kopf_run_commands(markdown)
    assert [command[2] for command in commands] == ['a.py', 'b.py', 'c.py', 'd.py', 'e.py']
    assert [has_scope(command) for command in commands] == [False, True, True, True, False]
