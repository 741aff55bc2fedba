"""
The documentation's promises, executed: the code blocks of the pages that a reader
follows step by step, and the deployment manifests against a real API server.

A page marks the blocks to execute with an HTML comment right before them (invisible
in the rendered page)::

    <!-- docs-test: file NAME -->              the next block is written to NAME
    <!-- docs-test: file NAME from PATH -->    the repository's file PATH is copied to NAME
    <!-- docs-test: pytest NAME -->            the next block is written to NAME and run by pytest
    <!-- docs-test: pytest-real NAME -->       the same, but only on a real cluster (not in memory)
    <!-- docs-test: python NAME -->            the next block is written to NAME and run by python

Each page's blocks go into one fresh directory, in the page's order. The pytest
runs happen twice: on kopf-testing's in-memory API, and on the real cluster of
this session (the local control plane unless ``--kopf-cluster`` says otherwise).
Every manifest under ``docs/manifests/`` is applied with a server-side dry-run
into a fresh namespace (it replaces the manifests' ``my-operator`` namespace).
"""
from __future__ import annotations

import dataclasses
import os
import pathlib
import re
import subprocess
import sys
from typing import Optional

import pytest

from kopf_testing.controlplane import Cluster

REPO = pathlib.Path(__file__).resolve().parents[2]
DOCS = REPO / 'docs'
EXECUTED_PAGES = ['getting-started.md', 'testing.md', 'indexing.md', 'admission.md', 'kwargs.md', 'authentication.md',
                  'daemons.md', 'timers.md', 'hierarchies.md']
MANIFESTS = sorted((DOCS / 'manifests').glob('*.yaml'))
MANIFESTS_NAMESPACE = 'my-operator'

_MARKER = re.compile(r'^<!-- docs-test: (?P<action>file|pytest|pytest-real|python) (?P<name>\S+)'
                     r'(?: from (?P<source>\S+))? -->$')
_FENCE = re.compile(r'^```')


@dataclasses.dataclass(frozen=True)
class Step:
    action: str  # file, pytest, python
    name: str
    text: str


def parse_steps(markdown: str) -> list[Step]:
    """The marked blocks of a page, in order; a marker without its block is an error of the page."""
    steps: list[Step] = []
    lines = markdown.splitlines()
    for index, line in enumerate(lines):
        match = _MARKER.match(line.strip())
        if match is None:
            continue
        action, name, source = match['action'], match['name'], match['source']
        if source is not None:
            steps.append(Step(action, name, (REPO / source).read_text()))
        else:
            steps.append(Step(action, name, _next_block(lines, index + 1, marker=line)))
    return steps


def _next_block(lines: list[str], start: int, *, marker: str) -> str:
    """The content of the fenced block that follows the marker (other markers may stand between)."""
    index = start
    while index < len(lines) and _MARKER.match(lines[index].strip()):
        index += 1
    if index >= len(lines) or not _FENCE.match(lines[index]):
        raise AssertionError(f"No code block right after {marker!r}.")
    end = next((i for i in range(index + 1, len(lines)) if _FENCE.match(lines[i])), None)
    if end is None:
        raise AssertionError(f"The code block after {marker!r} is not closed.")
    return '\n'.join(lines[index + 1:end]) + '\n'


def run_steps(steps: list[Step], workdir: pathlib.Path, *, real: bool,
              env: Optional[dict[str, str]] = None) -> list[subprocess.CompletedProcess[str]]:
    """Write the files and run the runnable ones, in order; return the runs (a failed one ends it)."""
    runs: list[subprocess.CompletedProcess[str]] = []
    cluster_args = ['--kopf-cluster=existing' if real else '--kopf-cluster=memory']
    for step in steps:
        (workdir / step.name).write_text(step.text)
        if step.action == 'pytest' or (step.action == 'pytest-real' and real):
            argv = [sys.executable, '-m', 'pytest', '-p', 'no:cacheprovider', '-q', step.name, *cluster_args]
        elif step.action == 'python':
            argv = [sys.executable, step.name]
        else:
            continue
        runs.append(subprocess.run(argv, cwd=workdir, env=env, capture_output=True, text=True, timeout=600))
        if runs[-1].returncode != 0:
            break
    return runs


def assert_all_passed(runs: list[subprocess.CompletedProcess[str]]) -> None:
    assert runs, "The page has no executed blocks: mark them with <!-- docs-test: pytest/python NAME -->."
    for run in runs:
        assert run.returncode == 0, f"{run.args} failed:\n{run.stdout}\n{run.stderr}"


@pytest.mark.parametrize('page', EXECUTED_PAGES)
def test_page_blocks_on_the_memory_api(page: str, tmp_path: pathlib.Path) -> None:
    steps = parse_steps((DOCS / page).read_text())
    assert_all_passed(run_steps(steps, tmp_path, real=False))


@pytest.mark.parametrize('page', EXECUTED_PAGES)
def test_page_blocks_on_a_real_cluster(page: str, tmp_path: pathlib.Path, cluster: Cluster) -> None:
    steps = parse_steps((DOCS / page).read_text())
    env = dict(os.environ, KUBECONFIG=str(cluster.kubeconfig))
    assert_all_passed(run_steps(steps, tmp_path, real=True, env=env))


def test_a_broken_block_fails_the_check(tmp_path: pathlib.Path) -> None:
    """The check can fail: the getting-started operator greeting wrongly makes its test fail."""
    text = (DOCS / 'getting-started.md').read_text()
    broken = text.replace("f'Hello, {name}!'", "f'Hi, {name}!'")
    assert broken != text, "The getting-started page's operator has changed: update this test."
    # Its wait is meant to fail: it gives up after a quarter of kopf-testing's default timeout (30 s), not 240 s.
    runs = run_steps(parse_steps(broken), tmp_path, real=False, env={**os.environ, 'KOPF_TESTING_PATIENCE': '0.25'})
    assert runs and runs[-1].returncode != 0
    assert '1 failed' in runs[-1].stdout and 'Hi, Alice!' in runs[-1].stdout, runs[-1].stdout  # the test's own failure


def test_a_marker_without_a_block_is_refused() -> None:
    with pytest.raises(AssertionError, match="No code block right after"):
        parse_steps("<!-- docs-test: pytest test_x.py -->\nSome prose instead of a block.\n")


@pytest.mark.parametrize('manifest', MANIFESTS, ids=[path.name for path in MANIFESTS])
def test_manifest_is_accepted_by_the_api_server(manifest: pathlib.Path, cluster: Cluster, namespace: str) -> None:
    text = manifest.read_text()
    assert f'namespace: {MANIFESTS_NAMESPACE}' in text, f"{manifest.name} must use the {MANIFESTS_NAMESPACE} namespace."
    text = text.replace(f'namespace: {MANIFESTS_NAMESPACE}', f'namespace: {namespace}')
    documents = [doc for doc in re.split(r'^---\s*$', text, flags=re.M) if re.search(r'^kind:', doc, re.M)]
    result = cluster.kubectl('apply', '--dry-run=server', '-f', '-', input=text, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count('(server dry run)') == len(documents), result.stdout


def test_every_manifest_is_shown_on_the_deployment_page() -> None:
    page = (DOCS / 'deployment.md').read_text()
    for manifest in MANIFESTS:
        assert f'--8<-- "manifests/{manifest.name}"' in page, f"{manifest.name} is not on the deployment page."


def test_the_repository_files_named_by_markers_exist() -> None:
    for page in EXECUTED_PAGES:
        for match in re.finditer(r'<!-- docs-test: file \S+ from (\S+) -->', (DOCS / page).read_text()):
            assert (REPO / match[1]).is_file(), f"{page} copies {match[1]}, which does not exist."
