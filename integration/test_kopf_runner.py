"""
KopfRunner for real: the manual's testing example (the 01-minimal operator), and
handlers declared in the test itself, as Kopf's own tests use it.

Inputs: the example CRD and object applied with kubectl while the operator runs
in a thread of this test process. Outputs: the runner's exit code, exception and
captured output, as the manual's "Operator testing" section asserts them.
"""
import time

import pytest

import kopf
from integration.controlplane import Cluster
from integration.kubeobjects import create_object, wait_for_object
from integration.operating import EXAMPLES
from kopf.testing import KopfRunner

OBJECT = {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': 'kopf-example-1'}, 'spec': {}}

pytestmark = pytest.mark.usefixtures('example_crd')


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


def test_kopf_runner_runs_the_handlers_registered_by_the_test(
        cluster: Cluster, namespace: str, kopf_registry: kopf.OperatorRegistry,
) -> None:
    """As Kopf's own tests do: handlers declared in the test, ``kopf run`` with no files."""
    seen: list[tuple[str, str]] = []

    @kopf.on.create('kopfexamples', id='create_fn')  # a local function's own id would be its qualname
    def create_fn(name: str, reason: str, **_: object) -> str:
        seen.append((reason, name))  # in-process: the test sees what the handler saw
        return 'created by the test'

    @kopf.on.delete('kopfexamples', id='delete_fn')
    def delete_fn(name: str, reason: str, **_: object) -> None:
        seen.append((reason, name))

    with KopfRunner(['run', '--standalone', '-n', namespace, '--verbose'], timeout=60) as runner:
        create_object(cluster, namespace, OBJECT)
        wait_for_object(cluster, namespace, 'kopfexamples', 'kopf-example-1',
                        lambda obj: obj.get('status', {}).get('create_fn') == 'created by the test', timeout=60)
        cluster.kubectl('delete', '-n', namespace, 'kopfexample', 'kopf-example-1', '--timeout=60s')
    assert runner.exit_code == 0
    assert runner.exception is None
    assert seen == [('create', 'kopf-example-1'), ('delete', 'kopf-example-1')]
    assert "Handler 'create_fn' succeeded." in runner.stdout
    assert kopf.get_default_registry() is kopf_registry  # left as it was
