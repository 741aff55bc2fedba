"""
The 01-minimal example end to end against a real API server.

Inputs: the example's CRD and object (``examples/crd.yaml``, ``obj.yaml``), and
the operator ``examples/01-minimal/example.py`` run by the ``kopf`` command in
its own process. Outputs: what the API server stores (status, annotations,
finalizers) and what the operator logs. Nothing is mocked.
"""
import json
import re
import subprocess
import sys
from collections.abc import Callable

import pytest

from integration.controlplane import Cluster
from integration.operating import EXAMPLES, REPO_ROOT, OperatorProcess

EXAMPLE = str(EXAMPLES / '01-minimal' / 'example.py')
FINALIZER = 'kopf.zalando.org/KopfFinalizerMarker'
DIFFBASE = 'kopf.zalando.org/last-handled-configuration'


pytestmark = pytest.mark.usefixtures('example_crd')


@pytest.fixture
def operator(operator_process: Callable[..., OperatorProcess]) -> OperatorProcess:
    return operator_process(EXAMPLE, '--verbose', start=False)


def get_object(cluster: Cluster, namespace: str) -> dict:  # type: ignore[type-arg]
    result = cluster.kubectl('get', 'kopfexample', 'kopf-example-1', '-n', namespace, '-o', 'json')
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def create_object(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl('apply', '-n', namespace, '-f', str(EXAMPLES / 'obj.yaml'))


def test_object_created_before_the_start_is_handled(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create_object(cluster, namespace)
    operator.start()
    operator.wait_for(r"Handler 'create_fn' succeeded\.")
    operator.wait_for(r"Handling cycle is finished, waiting for new changes\.")
    obj = get_object(cluster, namespace)
    assert obj['status']['create_fn'] == {'message': 'hello world'}
    assert FINALIZER in obj['metadata']['finalizers']
    assert json.loads(obj['metadata']['annotations'][DIFFBASE])['spec'] == obj['spec']


def test_object_created_after_the_start_is_handled(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    operator.start()
    operator.wait_for(r"Starting the watch-stream for kopfexamples\.v1\.kopf\.dev")
    create_object(cluster, namespace)
    operator.wait_for(r"Handler 'create_fn' succeeded\.")
    operator.wait_for(r"Handling cycle is finished, waiting for new changes\.")
    assert get_object(cluster, namespace)['status']['create_fn'] == {'message': 'hello world'}


def test_creation_log_lines_are_those_of_the_manual(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create_object(cluster, namespace)
    operator.start()
    log = operator.wait_for(r"Handling cycle is finished, waiting for new changes\.")
    prefix = re.escape(f"[{namespace}/kopf-example-1]")
    for line in [
        r"Adding the finalizer, thus preventing the actual deletion\.",
        r"Creation is in progress: \{",
        r"Handler 'create_fn' is invoked\.",
        r"Handler 'create_fn' succeeded\.",
        r"Creation is processed: 1 succeeded; 0 failed\.",
        r"All handlers succeeded for creation\.",
    ]:
        assert re.search(f"{prefix} {line}", log), f"Missing: {line}\n{log}"


def test_creation_is_handled_once(cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create_object(cluster, namespace)
    operator.start()
    operator.wait_for(r"Handling cycle is finished, waiting for new changes\.")
    # Our own patches (the finalizer, the status, the diff-base) come back as watch-events:
    # they must not be taken for changes. A label is a real change, but not a creation.
    cluster.kubectl('label', '-n', namespace, 'kopfexample', 'kopf-example-1', 'touched=yes')
    log = operator.wait_for(r"Handling cycle is finished, waiting for new changes\.", count=2)
    assert log.count("Handler 'create_fn' is invoked.") == 1


def test_restart_does_not_handle_the_object_again(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create_object(cluster, namespace)
    operator.start()
    operator.wait_for(r"Handler 'create_fn' succeeded\.")
    operator.wait_for(r"Handling cycle is finished, waiting for new changes\.")
    assert operator.stop() == 0
    resource_version = get_object(cluster, namespace)['metadata']['resourceVersion']

    operator.start()
    log = operator.wait_for(r"Handling cycle is finished, waiting for new changes\.")
    operator.stop()
    assert "Handler 'create_fn'" not in log
    assert get_object(cluster, namespace)['metadata']['resourceVersion'] == resource_version


def test_deletion_runs_the_handler_and_releases_the_object(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create_object(cluster, namespace)
    operator.start()
    operator.wait_for(r"Handling cycle is finished, waiting for new changes\.")
    cluster.kubectl('delete', '-n', namespace, 'kopfexample', 'kopf-example-1', '--timeout=30s')
    log = operator.wait_for(r"Deleted, really deleted, and we are notified\.")
    assert "Handler 'delete_fn' succeeded." in log
    assert "Removing the finalizer, thus allowing the actual deletion." in log
    result = cluster.kubectl('get', '-n', namespace, 'kopfexample', 'kopf-example-1', check=False)
    assert result.returncode != 0 and 'NotFound' in result.stderr


def test_deletion_waits_for_the_operator(cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create_object(cluster, namespace)
    operator.start()
    operator.wait_for(r"Handling cycle is finished, waiting for new changes\.")
    operator.stop()
    cluster.kubectl('delete', '-n', namespace, 'kopfexample', 'kopf-example-1', '--wait=false')
    obj = get_object(cluster, namespace)  # held by the finalizer while the operator is away
    assert obj['metadata'].get('deletionTimestamp')

    operator.start()
    operator.wait_for(r"Deleted, really deleted, and we are notified\.")
    assert "Handler 'delete_fn' succeeded." in operator.log


def test_core_imports_with_the_standard_library_only() -> None:
    # -S: no site-packages at all, so any third-party import would fail here.
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import kopf; "
            "import kopf.clients, kopf.on; print(sorted(m.split('.')[0] for m in sys.modules "
            "if not m.startswith(('kopf', '_')) and m.split('.')[0] not in sys.stdlib_module_names))")
    result = subprocess.run([sys.executable, '-S', '-c', code, str(REPO_ROOT / 'packages/kopf-core/src')],
                            capture_output=True, text=True, check=True)
    assert result.stdout.strip() == '[]'


def test_operator_without_a_client_fails_naming_the_package() -> None:
    code = ("import sys; sys.path.insert(0, sys.argv[1]); import kopf\n"
            "try:\n    kopf.run(clusterwide=True)\n"
            "except ImportError as e:\n    print(e)\n")
    result = subprocess.run([sys.executable, '-S', '-c', code, str(REPO_ROOT / 'packages/kopf-core/src')],
                            capture_output=True, text=True, check=True, timeout=30)
    assert 'pip install kopf-client' in result.stdout
