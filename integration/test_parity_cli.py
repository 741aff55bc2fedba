"""
The command line's parity with Kopf 1.45.2: ``kopf --version``, and namespace patterns.

Inputs: the ``kopf`` command of the tests' environment (ours) and of Kopf 1.45.2
in its own virtual environment (``integration.upstream``); the 01-minimal operator
and the local control plane. Outputs: what the commands print, their exit codes,
and what the operator handled. Nothing is mocked.

Kopf 1.45.2 runs ``kopf run -n 'Bad_NS!'`` silently and serves nothing; ours
refuses such a pattern at once (a usage error, exit code 2), before importing
the operator's code, and still serves the namespaces of valid patterns.
"""
import json
import os
import pathlib
import re
import secrets
import subprocess
import sys
from collections.abc import Iterator
from typing import Optional

import pytest

from integration.controlplane import Cluster
from integration.operating import EXAMPLES, REPO_ROOT, OperatorProcess, kopf_executable
from integration.upstream import ensure_upstream

EXAMPLE = str(EXAMPLES / '01-minimal' / 'example.py')
# Kopf's "kopf, version X" first (what scripts parse); ours adds the packages and the Kopf release it follows.
VERSION_LINE = re.compile(r'^kopf, version (\S+)(?: \(kopf-core \S+, kopf-cli \S+\), compatible with Kopf (\S+))?\n$')


def run(args: list[str], env: Optional[dict[str, str]] = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, capture_output=True, text=True, timeout=120, cwd=REPO_ROOT,
                          env=dict(os.environ, **(env or {})))


def test_version_is_printed_in_kopfs_format() -> None:
    ours = run([kopf_executable(), '--version'])
    theirs = run([str(ensure_upstream()), '--version'])
    assert theirs.returncode == ours.returncode == 0
    our_match, their_match = VERSION_LINE.match(ours.stdout), VERSION_LINE.match(theirs.stdout)
    assert their_match is not None and their_match.group(1) == '1.45.2'
    assert our_match is not None, ours.stdout
    assert our_match.group(1) == run([sys.executable, '-c', 'import kopf; print(kopf.__version__)']).stdout.strip()
    assert our_match.group(2) == their_match.group(1)  # the Kopf release we follow is the one compared with
    assert ours.stdout.split()[:3] == ['kopf,', 'version', our_match.group(1)]  # parsed as Kopf's is


@pytest.fixture
def tracked_operator(tmp_path: pathlib.Path) -> pathlib.Path:
    """The 01-minimal operator, which also leaves a trace when it is imported."""
    path = tmp_path / 'operator.py'
    path.write_text(pathlib.Path(EXAMPLE).read_text() +
                    f"\nimport pathlib\npathlib.Path({str(tmp_path / 'imported')!r}).touch()\n")
    return path


@pytest.mark.parametrize('args, env, problem', [
    pytest.param(['-n', 'Bad_NS!'], {}, "'B' is not allowed in namespace names", id='uppercase-underscore-bang'),
    pytest.param(['-n', '['], {}, "'[' is not closed with ']'", id='unclosed-bracket'),
    pytest.param(['-n', 'ns1', '-n', 'ns-'], {}, "namespace names neither start nor end with '-'", id='dash'),
    pytest.param([], {'KOPF_RUN_NAMESPACES': 'My_NS'}, "'M' is not allowed", id='variable'),
    pytest.param([], {'KOPF_RUN_NAMESPACE': 'ns['}, "'[' is not closed", id='legacy-variable'),
])
def test_patterns_that_never_match_are_refused_before_anything_runs(
        cluster: Cluster, tracked_operator: pathlib.Path, args: list[str], env: dict[str, str], problem: str,
) -> None:
    result = run([kopf_executable(), 'run', '--standalone', str(tracked_operator), *args], env=env)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith('Error:')]
    assert len(errors) == 1, result.stderr
    assert "can never match a namespace: " + problem in errors[0]
    assert "DNS-1123" in errors[0]
    assert 'Traceback' not in result.stderr
    assert not (tracked_operator.parent / 'imported').exists()


def test_embedding_refuses_them_too(cluster: Cluster) -> None:
    code = ("import kopf, sys\n"
            "try:\n"
            "    kopf.run(namespaces=['Bad_NS!'], standalone=True)\n"
            "except ValueError as e:\n"
            "    sys.exit(f'refused: {e}')\n")
    result = run([sys.executable, '-c', code])
    assert result.returncode == 1
    assert result.stderr.startswith("refused: The namespace pattern 'Bad_NS!' can never match a namespace: "
                                    "'B' is not allowed in namespace names.")
    assert len(result.stderr.splitlines()) == 1  # refused at the call: nothing has started, nothing logged


@pytest.fixture
def prefix(cluster: Cluster) -> Iterator[str]:
    value = f'ns-{secrets.token_hex(3)}'
    yield value
    for name in cluster.kubectl('get', 'namespaces', '-o', 'name').stdout.split():
        if name.startswith(f'namespace/{value}-'):
            cluster.kubectl('delete', name, '--wait=false')


@pytest.mark.usefixtures('example_crd')
def test_valid_patterns_of_every_kind_still_serve_their_namespaces(
        cluster: Cluster, prefix: str, tmp_path: pathlib.Path) -> None:
    served, skipped = f'{prefix}-a1', f'{prefix}-b1'
    for name in [served, skipped]:
        cluster.kubectl('create', 'namespace', name)
    args = [EXAMPLE, '--standalone', '-n', f'{prefix}-[a-c]?,!{prefix}-b*', '-n', f'{prefix}-z']
    with OperatorProcess(args, log_path=tmp_path / 'op.log') as op:
        for name in [served, skipped]:
            cluster.kubectl('apply', '-n', name, '-f', '-', input=json.dumps({
                'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': 'example'}, 'spec': {}}))
        op.wait_for(rf"\[{served}/example\] Handler 'create_fn' succeeded\.", timeout=60)
    assert f"[{skipped}/example]" not in op.log
