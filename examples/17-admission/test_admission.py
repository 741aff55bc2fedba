"""
The admission example: its webhooks as the API server calls them, and what kubectl shows.

The operator runs as ``kopf run admission.py -n NAMESPACE`` (its
``kopf.WebhookAutoServer`` is a plain local server for the local control plane)
and the objects are created with kubectl, whose warnings and denials are read
from its stderr. The managed configurations are cluster-wide: they are deleted
after each test, even when the operator had to be killed (the webhooks of a dead
server would refuse these objects in the later tests, in every namespace).
"""
import json
import pathlib
import subprocess
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kopf_testing import OperatorProcess, poll
from kopf_testing.controlplane import Cluster

HERE = pathlib.Path(__file__).parent
CRD = HERE.parent / 'crd.yaml'
MANAGED = 'auto.kopf.dev'
HOOKED = "Warning: Verified with the operator's hook."

# For ['abc'], numbers_range fails with an arbitrary error (not an AdmissionError): it is logged.
EXPECTED_ERRORS = [r"Webhook 'numbers_range' failed with an exception"]


@pytest.fixture
def operator(kopf_cluster: Cluster, kopf_crd: Callable[..., list[str]],
             kopf_operator_process: Callable[..., OperatorProcess]) -> Iterator[OperatorProcess]:
    kopf_crd(CRD)
    process = kopf_operator_process(str(HERE / 'admission.py'), '--verbose', expected_errors=EXPECTED_ERRORS)
    try:
        process.wait_for(rf"The MutatingWebhookConfiguration '{MANAGED}' is (created|patched)", timeout=60)
        yield process
        process.stop()
    finally:
        for kind in ('validatingwebhookconfiguration', 'mutatingwebhookconfiguration'):
            kopf_cluster.kubectl('delete', kind, MANAGED, '--ignore-not-found')


def example_object(**spec: Any) -> dict[str, Any]:
    return {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
            'metadata': {'name': 'kopf-example-1'}, 'spec': {'field': 'value', **spec}}


def create(cluster: Cluster, namespace: str, obj: dict[str, Any], *args: str) -> 'subprocess.CompletedProcess[str]':
    return cluster.kubectl('create', '-n', namespace, '-f', '-', *args, input=json.dumps(obj), check=False)


def wait_until_hooked(cluster: Cluster, namespace: str) -> None:
    """The API server picks up new webhooks asynchronously: wait until it calls the example's."""
    poll(lambda: HOOKED in create(cluster, namespace, example_object(), '--dry-run=server').stderr,
         timeout=60, interval=0.5)


def stored_numbers(cluster: Cluster, namespace: str) -> Any:
    output = cluster.kubectl('get', '-n', namespace, 'kex', 'kopf-example-1', '-o', 'json').stdout
    return json.loads(output)['spec']['numbers']


def test_defaults_are_added_and_a_warning_is_shown(kopf_cluster: Cluster, kopf_namespace: str,
                                                   operator: OperatorProcess) -> None:
    wait_until_hooked(kopf_cluster, kopf_namespace)
    result = create(kopf_cluster, kopf_namespace, example_object())
    assert result.returncode == 0, result.stderr
    assert HOOKED in result.stderr
    assert stored_numbers(kopf_cluster, kopf_namespace) == [1, 2, 3]


def test_convertible_strings_are_stored_as_numbers(kopf_cluster: Cluster, kopf_namespace: str,
                                                   operator: OperatorProcess) -> None:
    wait_until_hooked(kopf_cluster, kopf_namespace)
    result = create(kopf_cluster, kopf_namespace, example_object(numbers=['5', 6.5]))
    assert result.returncode == 0, result.stderr
    assert stored_numbers(kopf_cluster, kopf_namespace) == [5.0, 6.5]


# The validating webhooks are called in parallel and kubectl shows the first denial: some inputs have two.
@pytest.mark.parametrize('numbers, messages', [
    pytest.param([500], ["Numbers must be below 0..100."], id='range'),
    pytest.param('many', ["Numbers must be a list if present."], id='not-a-list'),
    pytest.param(['abc'], ["Cannot convert 'abc' to a number.",  # convertible_numbers
                           "could not convert string to float: 'abc'"],  # numbers_range's arbitrary error
                 id='not-convertible'),
])
def test_invalid_numbers_are_denied(kopf_cluster: Cluster, kopf_namespace: str, operator: OperatorProcess,
                                    numbers: Any, messages: list[str]) -> None:
    wait_until_hooked(kopf_cluster, kopf_namespace)
    result = create(kopf_cluster, kopf_namespace, example_object(numbers=numbers))
    assert result.returncode != 0
    assert any(f"denied the request: {message}\n" in result.stderr for message in messages), result.stderr
    found = kopf_cluster.kubectl('get', '-n', kopf_namespace, 'kex', 'kopf-example-1', check=False)
    assert found.returncode != 0


def test_the_operator_stops_while_reviews_keep_coming(kopf_cluster: Cluster, kopf_namespace: str,
                                                      operator: OperatorProcess) -> None:
    # The API server keeps its connections to the webhook server open and goes on sending reviews
    # over them (as when many objects change cluster-wide): the stopping server must not wait for it.
    wait_until_hooked(kopf_cluster, kopf_namespace)
    stopping = threading.Event()

    def review_until_stopped() -> None:
        while not stopping.is_set():
            create(kopf_cluster, kopf_namespace, example_object(), '--dry-run=server')

    reviewers = [threading.Thread(target=review_until_stopped) for _ in range(4)]
    for reviewer in reviewers:
        reviewer.start()
    try:
        reviewed = operator.log.count("Webhook 'say_hello' succeeded")
        operator.wait_for(r"Webhook 'say_hello' succeeded", timeout=30, count=reviewed + 8)  # they do keep coming
        operator.stop(timeout=20)  # fails if the operator does not stop in time
    finally:
        stopping.set()
        for reviewer in reviewers:
            reviewer.join()
