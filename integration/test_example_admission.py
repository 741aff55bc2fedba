"""
The 17-admission example end to end: the manual's admission handlers on the real API server.

Inputs: the example's CRD and object (``examples/crd.yaml``, ``obj.yaml``) and
the operator ``examples/17-admission/admission.py`` run by the ``kopf`` command
(a ``kopf.WebhookAutoServer``, which is a plain local server for the local
control plane). Outputs: what ``kubectl`` prints and what the API server
stores. The managed configurations are deleted after each test.
"""
import json
import pathlib
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from integration import kubeobjects
from integration.controlplane import Cluster
from integration.operating import EXAMPLES, OperatorProcess

EXAMPLE = str(EXAMPLES / '17-admission' / 'admission.py')
MANAGED = 'auto.kopf.dev'


@pytest.fixture(scope='module', autouse=True)
def crd(cluster: Cluster) -> None:
    cluster.kubectl('apply', '-f', str(EXAMPLES / 'crd.yaml'))
    cluster.kubectl('wait', '--for=condition=established', '--timeout=60s', 'crd/kopfexamples.kopf.dev')


@pytest.fixture
def operator(cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> Iterator[OperatorProcess]:
    process = OperatorProcess([EXAMPLE, '-n', namespace, '--verbose'], log_path=tmp_path / 'operator.log')
    process.start()
    process.wait_for(r"The MutatingWebhookConfiguration 'auto\.kopf\.dev' is (created|patched)", timeout=60)
    yield process
    try:
        process.stop()
    finally:
        # Even if the operator had to be killed: the configurations of a dead server would make
        # every later creation of these objects fail, in all namespaces (they are cluster-wide).
        for kind in ('validatingwebhookconfiguration', 'mutatingwebhookconfiguration'):
            cluster.kubectl('delete', kind, MANAGED, '--ignore-not-found')


def example_object(**spec: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
                           'metadata': {'name': 'kopf-example-1'}, 'spec': {'field': 'value', **spec}}
    return obj


def create(cluster: Cluster, namespace: str, obj: dict[str, Any], *args: str) -> Any:
    return cluster.kubectl('create', '-n', namespace, '-f', '-', *args, input=json.dumps(obj), check=False)


def wait_until_hooked(cluster: Cluster, namespace: str) -> None:
    """Wait until the apiserver uses the new webhooks (it picks them up asynchronously)."""
    def hooked() -> bool:
        """the apiserver calls the example's webhooks"""
        probe = create(cluster, namespace, example_object(), '--dry-run=server')
        return "Warning: Verified with the operator's hook." in probe.stderr
    kubeobjects.poll(hooked, timeout=60, interval=0.5)


def test_defaults_are_added_and_a_warning_is_shown(cluster: Cluster, namespace: str,
                                                   operator: OperatorProcess) -> None:
    wait_until_hooked(cluster, namespace)
    result = create(cluster, namespace, example_object())
    assert result.returncode == 0, result.stderr
    assert "Warning: Verified with the operator's hook." in result.stderr
    stored = kubeobjects.get_object(cluster, namespace, 'kopfexamples.kopf.dev', 'kopf-example-1')
    assert stored['spec']['numbers'] == [1, 2, 3]


def test_convertible_strings_are_stored_as_numbers(cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    wait_until_hooked(cluster, namespace)
    result = create(cluster, namespace, example_object(numbers=['5', 6.5]))
    assert result.returncode == 0, result.stderr
    stored = kubeobjects.get_object(cluster, namespace, 'kopfexamples.kopf.dev', 'kopf-example-1')
    assert stored['spec']['numbers'] == [5.0, 6.5]


# Kubernetes calls the webhooks in parallel and shows the first denial, so some inputs have two messages.
@pytest.mark.parametrize('numbers, messages', [
    pytest.param([500], ["Numbers must be below 0..100."], id='range'),
    pytest.param('many', ["Numbers must be a list if present."], id='not-a-list'),
    pytest.param(['abc'], ["Cannot convert 'abc' to a number.",  # by convertible_numbers
                           "could not convert string to float: 'abc'"],  # numbers_range's arbitrary error
                 id='not-convertible'),
])
def test_invalid_numbers_are_rejected(cluster: Cluster, namespace: str, operator: OperatorProcess,
                                      numbers: Any, messages: list[str]) -> None:
    wait_until_hooked(cluster, namespace)
    result = create(cluster, namespace, example_object(numbers=numbers))
    assert result.returncode != 0
    assert any(f"denied the request: {message}\n" in result.stderr for message in messages), result.stderr
    assert cluster.kubectl('get', '-n', namespace, 'kex', 'kopf-example-1', check=False).returncode != 0


def test_the_operator_stops_while_reviews_keep_coming(cluster: Cluster, namespace: str,
                                                      operator: OperatorProcess) -> None:
    # The API server keeps its connections to the webhook server open and goes on sending reviews
    # over them (as when many objects change cluster-wide): the stopping server must not wait for it.
    wait_until_hooked(cluster, namespace)
    stopping = threading.Event()

    def review_until_stopped() -> None:
        while not stopping.is_set():
            create(cluster, namespace, example_object(), '--dry-run=server')

    reviewers = [threading.Thread(target=review_until_stopped) for _ in range(4)]
    for reviewer in reviewers:
        reviewer.start()
    try:
        reviewed = operator.log.count("Webhook 'say_hello' succeeded")
        operator.wait_for(r"Webhook 'say_hello' succeeded", timeout=30, count=reviewed + 8)  # they do keep coming
        operator.stop()  # fails if the operator does not stop in time (20 s)
    finally:
        stopping.set()
        for reviewer in reviewers:
            reviewer.join()
