"""
The manual's testing example, for real: KopfRunner with the 01-minimal operator.

Inputs: the example CRD and object applied with kubectl while the operator runs
in a thread of this test process. Outputs: the runner's exit code, exception and
captured output, as the manual's "Operator testing" section asserts them.
"""
import time

import pytest

from integration.controlplane import Cluster
from integration.operating import EXAMPLES
from kopf.testing import KopfRunner


@pytest.fixture(scope='module', autouse=True)
def crd(cluster: Cluster) -> None:
    cluster.kubectl('apply', '-f', str(EXAMPLES / 'crd.yaml'))
    cluster.kubectl('wait', '--for=condition=established', '--timeout=60s', 'crd/kopfexamples.kopf.dev')


def test_the_manuals_kopf_runner_example(cluster: Cluster, namespace: str) -> None:
    args = ['run', '-n', namespace, '--verbose', str(EXAMPLES / '01-minimal' / 'example.py')]
    with KopfRunner(args, timeout=60) as runner:
        cluster.kubectl('apply', '-n', namespace, '-f', str(EXAMPLES / 'obj.yaml'))
        time.sleep(2)  # give it some time to react
        cluster.kubectl('delete', '-n', namespace, '-f', str(EXAMPLES / 'obj.yaml'))
        time.sleep(2)  # give it some time to react
    assert runner.exit_code == 0
    assert runner.exception is None
    assert 'And here we are!' in runner.stdout
    assert 'Deleted, really deleted' in runner.stdout
