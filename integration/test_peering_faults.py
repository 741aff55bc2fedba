"""
Faults of the peering, survived: an API outage longer than the client's retries.

Inputs: the peering CRDs and a KopfPeering object in the test's namespace,
``operators_src/peering_outages.py`` in its own process in the peering mode,
with the client's retries made short and the keep-alives frequent; the local
control plane's API server stopped for longer than those retries.
Outputs: the operator's log and process (it keeps running, its keep-alives
resume), and an object created after the outage, as stored (handled).
"""
import json
import pathlib
import re
from collections.abc import Callable

from integration import kubeobjects
from integration.controlplane import Cluster
from integration.operating import EXAMPLES, OperatorProcess
from kopf_testing import Kube, poll

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'peering_outages.py')
PEERING = 'outage-peering'
OUTAGE_ERRORS = [r"Failed to renew the keep-alive in the peering object", r"Failed to stream ",
                 r"Failed to watch the CRDs", r"Failed to discover the resources",
                 r"Request attempt #\d+/\d+ failed"]


def wait_handled(cluster: Cluster, namespace: str, name: str, timeout: float = 90) -> None:
    def handled() -> bool:
        obj = Kube(cluster, namespace).get('kopfexamples.kopf.dev', name)
        return bool(obj.get('status', {}).get('example_fn') == {'handled': name})
    handled.__doc__ = f'the example {name!r} handled'
    poll(handled, timeout=timeout, interval=0.5)


def test_peering_outage_longer_than_the_retries_is_survived(
        cluster: Cluster, namespace: str, operator_process: Callable[..., OperatorProcess]) -> None:
    kubeobjects.apply_peering_crds(cluster, EXAMPLES)
    kubeobjects.create_peering(cluster, namespace, PEERING)
    operator = operator_process(OPERATOR, f'--peering={PEERING}', '--verbose', expected_errors=OUTAGE_ERRORS)
    keepalive_ok = rf"Keep-alive in '{PEERING}' in '{namespace}': ok\."
    operator.wait_for(keepalive_ok, timeout=90)
    cluster.stop_apiserver()
    try:
        operator.wait_for(r"Failed to renew the keep-alive in the peering object", count=3, timeout=120)
    finally:
        cluster.start_apiserver()
    operator.wait_for(rf"Succeeded to renew the keep-alive in the peering object '{PEERING}' in '{namespace}' "
                      r"after \d+ failure\(s\)\.", timeout=90)
    kubeobjects.create_object(cluster, namespace, {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
                                                   'metadata': {'name': 'after-outage'}, 'spec': {}})
    wait_handled(cluster, namespace, 'after-outage')
    assert operator.process is not None and operator.process.poll() is None, operator.log
    status = json.loads(cluster.kubectl('get', '-n', namespace, 'kopfpeering', PEERING, '-o', 'json').stdout)
    assert len(status.get('status', {})) == 1, status  # our keep-alive is there again
    assert not re.search(r"has failed", operator.log), operator.log
