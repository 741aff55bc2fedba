"""
Serving namespaces by patterns, including namespaces created while the operator runs.

Inputs: an operator run with ``-n`` glob patterns; namespaces created after its
start, some matching and some not. Outputs: which objects were handled.
"""
import json
import pathlib
import secrets
import time
from collections.abc import Iterator

import pytest

from integration.controlplane import Cluster
from integration.operating import EXAMPLES, OperatorProcess

EXAMPLE = str(EXAMPLES / '01-minimal' / 'example.py')


pytestmark = pytest.mark.usefixtures('example_crd')


@pytest.fixture
def prefix(cluster: Cluster) -> Iterator[str]:
    value = f'ns-{secrets.token_hex(3)}'
    yield value
    names = cluster.kubectl('get', 'namespaces', '-o', 'name').stdout.split()
    for name in names:
        if name.startswith(f'namespace/{value}-'):
            cluster.kubectl('delete', name, '--wait=false')


def create_object(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl('apply', '-n', namespace, '-f', '-', input=json.dumps({
        'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': 'example'}, 'spec': {}}))


def status_of(cluster: Cluster, namespace: str) -> dict:  # type: ignore[type-arg]
    result = cluster.kubectl('get', '-n', namespace, 'kopfexample', 'example', '-o', 'json')
    return json.loads(result.stdout).get('status', {})  # type: ignore[no-any-return]


def test_namespaces_created_at_runtime_are_served_if_they_match(
        cluster: Cluster, prefix: str, tmp_path: pathlib.Path) -> None:
    args = [EXAMPLE, '--verbose', '-n', f'{prefix}-*,!{prefix}-skip-*']
    with OperatorProcess(args, log_path=tmp_path / 'op.log') as op:
        op.wait_for(r"Initial authentication has finished\.")
        cluster.kubectl('create', 'namespace', f'{prefix}-served')
        cluster.kubectl('create', 'namespace', f'{prefix}-skip-me')
        op.wait_for(rf"Starting the watch-stream for kopfexamples\.v1\.kopf\.dev in '{prefix}-served'\.")
        create_object(cluster, f'{prefix}-served')
        create_object(cluster, f'{prefix}-skip-me')
        op.wait_for(rf"\[{prefix}-served/example\] Handler 'create_fn' succeeded\.")
        time.sleep(2)  # give the excluded namespace a chance to be (wrongly) handled
    assert status_of(cluster, f'{prefix}-served')['create_fn'] == {'message': 'hello world'}
    assert 'create_fn' not in status_of(cluster, f'{prefix}-skip-me')
    assert f"in '{prefix}-skip-me'" not in op.log


def test_deleted_namespaces_stop_being_watched(cluster: Cluster, prefix: str, tmp_path: pathlib.Path) -> None:
    cluster.kubectl('create', 'namespace', f'{prefix}-temp')
    with OperatorProcess([EXAMPLE, '--verbose', '-n', f'{prefix}-*'], log_path=tmp_path / 'op.log') as op:
        op.wait_for(rf"Starting the watch-stream for kopfexamples\.v1\.kopf\.dev in '{prefix}-temp'\.")
        cluster.kubectl('delete', 'namespace', f'{prefix}-temp', '--wait=false')
        op.wait_for(rf"Stopping the watch-stream for kopfexamples\.v1\.kopf\.dev in '{prefix}-temp'\.", timeout=60)
