"""
Lifecycles against a real API server: which handlers run in which cycle, in which order.

Inputs: an operator (``operators_src/lifecycles_calls.py``) started through each
embedding entry point (``kopf.run``, ``kopf.operator``, ``kopf.spawn_tasks``, the default
lifecycle) with each lifecycle; an object created with kubectl. Outputs: the handlers'
calls in the order printed, each with the retry number and the resourceVersion of the
body it got: the handlers of one cycle see the same version, each cycle patches the object.
Handler ``b`` fails once and can be retried at once.
"""
import pathlib
import sys
from collections.abc import Iterator
from typing import Callable, Optional

import pytest

from integration.controlplane import Cluster
from integration.kubeobjects import apply_crds, crd_manifest, create_object, poll
from integration.operating import OperatorProcess

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'lifecycles_calls.py')
GROUP = 'lifecycles.kopf.dev'
Call = tuple[str, int, str]  # handler id, retry, resourceVersion


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_crds(cluster, crd_manifest(GROUP, 'lifecycleobjs', 'LifecycleObj'))


@pytest.fixture
def start(namespace: str, tmp_path: pathlib.Path) -> Iterator[Callable[[str, str], OperatorProcess]]:
    processes: list[OperatorProcess] = []

    def start_(entry: str, lifecycle: str) -> OperatorProcess:
        process = OperatorProcess([], log_path=tmp_path / 'operator.log')
        process.args = [sys.executable, OPERATOR, entry, lifecycle, namespace]  # the embedding API, not `kopf run`
        process.start()
        process.wait_for(r"Starting the watch-stream for lifecycleobjs\.v1\.lifecycles\.kopf\.dev", timeout=60)
        processes.append(process)
        return process

    yield start_
    for process in processes:
        process.stop()


def create(cluster: Cluster, namespace: str, spec: dict[str, str]) -> None:
    create_object(cluster, namespace, {'apiVersion': f'{GROUP}/v1', 'kind': 'LifecycleObj',
                                       'metadata': {'name': 'obj'}, 'spec': spec})


def calls_of(operator: OperatorProcess, count: int) -> list[Call]:
    """Wait for so many calls, let the operator finish its cycle, and make sure there are no more."""
    def enough() -> Optional[list[Call]]:
        found = [line.split()[1:] for line in operator.log.splitlines() if line.startswith('CALL ')]
        return [(c[0], int(c[1]), c[2]) for c in found] if len(found) >= count else None
    poll(enough, timeout=60)
    operator.wait_for(r"All handlers succeeded for creation", timeout=60)
    calls = enough()
    assert calls is not None
    return calls


def ids(calls: list[Call]) -> list[str]:
    return [f'{name}#{retry}' for name, retry, _ in calls]


def cycles(calls: list[Call]) -> list[list[str]]:
    """The calls grouped by the body's version: one group per cycle."""
    groups: list[list[str]] = []
    last = None
    for name, retry, version in calls:
        if version != last:
            groups.append([])
            last = version
        groups[-1].append(f'{name}#{retry}')
    return groups


def test_all_at_once_via_kopf_run(cluster: Cluster, namespace: str,
                                  start: Callable[[str, str], OperatorProcess]) -> None:
    operator = start('run', 'all_at_once')
    create(cluster, namespace, {'mode': 'plain'})
    assert cycles(calls_of(operator, 4)) == [['a#0', 'b#0', 'c#0'], ['b#1']]


def test_one_by_one_via_kopf_operator(cluster: Cluster, namespace: str,
                                      start: Callable[[str, str], OperatorProcess]) -> None:
    operator = start('operator', 'one_by_one')
    create(cluster, namespace, {'mode': 'plain'})
    # The failed handler blocks the next one until it succeeds.
    assert cycles(calls_of(operator, 4)) == [['a#0'], ['b#0'], ['b#1'], ['c#0']]


def test_asap_by_default(cluster: Cluster, namespace: str, start: Callable[[str, str], OperatorProcess]) -> None:
    operator = start('run', 'none')
    create(cluster, namespace, {'mode': 'plain'})
    # The failed handler goes after the ones that have failed less (never tried, here).
    assert cycles(calls_of(operator, 4)) == [['a#0'], ['b#0'], ['c#0'], ['b#1']]


def test_randomized_via_kopf_spawn_tasks(cluster: Cluster, namespace: str,
                                         start: Callable[[str, str], OperatorProcess]) -> None:
    operator = start('spawn_tasks', 'randomized')
    create(cluster, namespace, {'mode': 'plain'})
    calls = calls_of(operator, 4)
    assert all(len(cycle) == 1 for cycle in cycles(calls))  # one handler per cycle
    assert sorted(ids(calls)) == ['a#0', 'b#0', 'b#1', 'c#0']
    assert ids(calls).index('b#0') < ids(calls).index('b#1')


def test_shuffled_as_the_default_lifecycle(cluster: Cluster, namespace: str,
                                           start: Callable[[str, str], OperatorProcess]) -> None:
    operator = start('default', 'shuffled')
    create(cluster, namespace, {'mode': 'plain'})
    first, second = cycles(calls_of(operator, 4))
    assert sorted(first) == ['a#0', 'b#0', 'c#0']  # all in one cycle, in any order
    assert second == ['b#1']


@pytest.mark.parametrize('lifecycle, expected', [
    ('all_at_once', [['parent/a#0', 'parent/b#0', 'parent/c#0'], ['parent/b#1']]),
    ('one_by_one', [['parent/a#0'], ['parent/b#0'], ['parent/b#1'], ['parent/c#0']]),
])
def test_kopf_execute_with_its_own_lifecycle(cluster: Cluster, namespace: str,
                                             start: Callable[[str, str], OperatorProcess],
                                             lifecycle: str, expected: list[list[str]]) -> None:
    operator = start('run', 'asap')
    create(cluster, namespace, {'mode': 'sub', 'sub': lifecycle})
    assert cycles(calls_of(operator, 4)) == expected
