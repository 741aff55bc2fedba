"""
Faults survived without losing a change: the API server going away and coming back.

Inputs: the 01-minimal operator in its own process; the local control plane's
API server stopped and started again under it (same address, same etcd).
Outputs: every object created right after the restart is handled exactly once.
"""
import json
import time
from collections.abc import Callable

import pytest

from integration.controlplane import Cluster
from integration.operating import EXAMPLES, OperatorProcess
from kopf_testing import Kube, poll

EXAMPLE = str(EXAMPLES / '01-minimal' / 'example.py')


pytestmark = pytest.mark.usefixtures('example_crd')


@pytest.fixture
def operator(operator_process: Callable[..., OperatorProcess]) -> OperatorProcess:
    # While the API server is down, the client's retries are logged as errors (as Kopf logs them).
    return operator_process(EXAMPLE, '--verbose', start=False, expected_errors=[r"Request attempt #\d+/\d+ failed"])


def create_objects(cluster: Cluster, namespace: str, names: list[str]) -> None:
    items = [{'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': name}, 'spec': {}}
             for name in names]
    cluster.kubectl('create', '-n', namespace, '-f', '-', input=json.dumps({'apiVersion': 'v1', 'kind': 'List',
                                                                          'items': items}))


def wait_for_results(cluster: Cluster, namespace: str, names: list[str], timeout: float = 60) -> None:
    def all_handled() -> bool:
        items = Kube(cluster, namespace).list('kopfexamples')
        return {item['metadata']['name'] for item in items if item.get('status', {}).get('create_fn')} >= set(names)
    all_handled.__doc__ = f'all of {names} handled'
    poll(all_handled, timeout=timeout, interval=0.5)


def test_changes_right_after_an_api_server_restart_are_handled_once(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    if cluster.control_plane is None:
        pytest.skip("Restarting the API server needs the local control plane (not available on other clusters).")
    before = [f'before-{i}' for i in range(3)]
    after = [f'after-{i}' for i in range(5)]
    operator.start()
    create_objects(cluster, namespace, before)
    wait_for_results(cluster, namespace, before)

    cluster.stop_apiserver()
    time.sleep(2)  # let the operator notice: its watch-stream breaks, reconnects fail
    cluster.start_apiserver()
    restarted_at = time.monotonic()
    create_objects(cluster, namespace, after)
    wait_for_results(cluster, namespace, after, timeout=90)
    print(f"\nAfter the API server's restart, the new objects were handled in "
          f"{time.monotonic() - restarted_at:.1f}s.")

    log = operator.log
    for name in before + after:
        invocations = log.count(f"[{namespace}/{name}] Handler 'create_fn' is invoked.")
        assert invocations == 1, f"{name} was handled {invocations} times:\n{log}"
