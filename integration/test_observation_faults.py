"""
Faults of the observation of resources, survived: an API outage, a CRD deleted mid-handling.

Inputs: ``operators_src/api_outages.py`` in its own process, with the client's
retries made short; the local control plane's API server stopped, once the
operator serves, for longer than those retries; a CRD deleted while its objects are being handled.
Outputs: the operator's log and process (it keeps running), the objects as
stored, and the CRD's disappearance.
"""
import pathlib
import re
from collections.abc import Callable

from integration import kubeobjects
from integration.controlplane import Cluster
from integration.operating import OperatorProcess
from kopf_testing import Kube, poll

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'api_outages.py')
GROUP = 'outage.kopf.dev'
STABLE = kubeobjects.crd_manifest(GROUP, 'stables', 'Stable')
DYING = kubeobjects.crd_manifest(GROUP, 'dyings', 'Dying')
OUTAGE_ERRORS = [r"Failed to discover the resources \(GET /api, /apis\)", r"Failed to watch the CRDs",
                 r"Failed to stream ", r"Request attempt #\d+/\d+ failed"]
# A CRD created anew is served before its storage is ready: the API server answers 429 for a moment,
# and the client retries (logged as an error, as Kopf does).
REINITIALIZING = [r"Request attempt #\d+/\d+ failed; will retry: \S+ \S+/dyings\S* -> "
                  r"APITooManyRequestsError\('storage is \(re\)initializing'\)"]


def create(cluster: Cluster, namespace: str, kind: str, name: str) -> None:
    kubeobjects.create_object(cluster, namespace, {'apiVersion': f'{GROUP}/v1', 'kind': kind,
                                                   'metadata': {'name': name}, 'spec': {}})


def wait_handled(cluster: Cluster, namespace: str, name: str, timeout: float = 60) -> None:
    def handled() -> bool:
        obj = Kube(cluster, namespace).get('stables.outage.kopf.dev', name)
        return bool(obj.get('status', {}).get('stable_fn') == {'handled': name})
    handled.__doc__ = f'the stable {name!r} handled'
    poll(handled, timeout=timeout, interval=0.5)


def test_an_api_outage_longer_than_the_retries_is_survived(
        cluster: Cluster, namespace: str, operator_process: Callable[..., OperatorProcess]) -> None:
    kubeobjects.apply_crds(cluster, STABLE)
    operator = operator_process(OPERATOR, '--standalone', '--verbose', start=False, expected_errors=OUTAGE_ERRORS)
    operator.start()
    operator.wait_for(r"Starting the watch-stream for stables\.v1\.outage\.kopf\.dev", timeout=60)
    create(cluster, namespace, 'Stable', 'before-outage')
    wait_handled(cluster, namespace, 'before-outage')
    cluster.stop_apiserver()
    try:
        # Each reconnection outlasts the client's retries (the connection is refused): the stream goes on.
        operator.wait_for(r"The watch-stream of stables\.v1\.outage\.kopf\.dev is interrupted", count=3, timeout=90)
    finally:
        cluster.start_apiserver()
    create(cluster, namespace, 'Stable', 'after-outage')
    wait_handled(cluster, namespace, 'after-outage')
    assert operator.process is not None and operator.process.poll() is None, operator.log


def test_crd_deleted_mid_handling_lets_every_delete_handler_run(
        cluster: Cluster, namespace: str, operator_process: Callable[..., OperatorProcess]) -> None:
    kubeobjects.apply_crds(cluster, STABLE)
    operator = operator_process(OPERATOR, '--standalone', '--verbose', expected_errors=REINITIALIZING)
    try:
        _delete_the_crd_mid_handling_thrice(cluster, namespace, operator)
    finally:  # the other tests of the group must not find its stream (e.g. cut with the group's watches)
        cluster.kubectl('delete', 'crd', 'dyings.outage.kopf.dev', '--ignore-not-found', '--wait=false')


def _delete_the_crd_mid_handling_thrice(cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    uids: list[str] = []
    for round_ in range(3):
        kubeobjects.apply_crds(cluster, DYING)
        operator.wait_for(r"Starting the watch-stream for dyings\.v1\.outage\.kopf\.dev", count=round_ + 1,
                          timeout=60)
        names = [f'r{round_}-{i}' for i in range(4)]
        for name in names:
            create(cluster, namespace, 'Dying', name)
        for name in names:  # the finalizer is added, the slow create handler is running
            obj = kubeobjects.wait_for_object(
                cluster, namespace, 'dyings.outage.kopf.dev', name,
                lambda o: kubeobjects.FINALIZER in o['metadata'].get('finalizers', []))
            uids.append(obj['metadata']['uid'])
        cluster.kubectl('delete', 'crd', 'dyings.outage.kopf.dev', '--wait=false')

        def crd_gone() -> bool:
            result = cluster.kubectl('get', 'crd', 'dyings.outage.kopf.dev', '--ignore-not-found', '-o', 'name')
            return result.stdout.strip() == ''
        crd_gone.__doc__ = f'the CRD deleted in round {round_} is gone'
        poll(crd_gone, timeout=90, interval=0.5)
        operator.wait_for(r"The CRD 'dyings\.outage\.kopf\.dev' is deleted", count=round_ + 1, timeout=30)

    log = operator.log
    # Served from the CRD's creation until it is gone: never restarted as the CRD starts terminating
    # (a restart mid-handling is how an object with a fresh finalizer missed its deletion).
    starts = re.findall(r"Starting the watch-stream for dyings\.v1\.outage\.kopf\.dev", log)
    assert len(starts) == 3, log
    for uid in uids:
        runs = log.count(f"dying_delete_fn handled {uid}")
        assert runs == 1, f"the delete handler ran {runs} times for {uid}:\n{log}"
    create(cluster, namespace, 'Stable', 'after-deletions')
    wait_handled(cluster, namespace, 'after-deletions')
    assert not re.search(r"has failed and stopped", log), log
