"""
The README's first hour, followed as a user follows it: install from the checkout, the first operator, a run.

Inputs: the README's own text — its install command, its first Python block (the
operator, saved as ``op.py``) and its ``kopf run`` command — executed in a fresh
virtual environment (pip resolves the packages' dependencies from the package
index, as a user's pip does), against this session's real cluster. Only the
namespace differs: the test's own instead of ``default``.
Outputs: the object's status as the operator wrote it.
"""
from __future__ import annotations

import pathlib
import re
import shlex
import subprocess
import sys

import yaml

from integration.operating import EXAMPLES, REPO_ROOT, patient
from kopf_testing import Kube, OperatorProcess, apply_crds
from kopf_testing.controlplane import Cluster

README = (REPO_ROOT / 'README.md').read_text()
FENCED = re.compile(r'^```(\w+)\n(.*?)^```', re.MULTILINE | re.DOTALL)


def blocks(language: str) -> list[str]:
    return [body for lang, body in FENCED.findall(README) if lang == language]


def command(prefix: str) -> list[str]:
    """The README's first shell command that starts with the prefix, as words (comments dropped)."""
    for block in blocks('bash'):
        for line in block.splitlines():
            if line.startswith(prefix):
                return shlex.split(line, comments=True)
    raise AssertionError(f"The README has no command starting with {prefix!r}.")


def test_the_readmes_first_operator_installs_from_the_checkout_and_runs(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    venv = tmp_path / 'venv'
    subprocess.run([sys.executable, '-m', 'venv', str(venv)], check=True)
    pip = command('pip install ./packages/kopf-core')
    subprocess.run([str(venv / 'bin' / 'pip'), *pip[1:], '--quiet', '--disable-pip-version-check'],
                   cwd=REPO_ROOT, check=True, timeout=patient(600))
    (tmp_path / 'op.py').write_text(blocks('python')[0])
    apply_crds(cluster, EXAMPLES / 'crd.yaml')

    run = command('kopf run op.py')
    assert run[:3] == ['kopf', 'run', 'op.py'] and run[run.index('-n') + 1] == 'default'
    run[run.index('-n') + 1] = namespace
    operator = OperatorProcess([], log_path=tmp_path / 'operator.log', cwd=tmp_path)
    operator.args = [str(venv / 'bin' / 'kopf'), *run[1:]]  # the venv's command, as the user's shell finds it
    with operator:
        operator.wait_for(r"Starting the watch-stream for kopfexamples")
        Kube(cluster, namespace).create(yaml.safe_load((EXAMPLES / 'obj.yaml').read_text()))
        obj = Kube(cluster, namespace).wait_for('kopfexamples.kopf.dev', 'kopf-example-1',
                                                lambda obj: 'create_fn' in obj.get('status', {}))
    assert obj['status']['create_fn'] == {'message': 'hello world'}
    assert "Handler 'create_fn' succeeded." in operator.log
