"""
The example operator's tests: the same on the in-memory API and on a real cluster.

The fixtures come from kopf-testing's pytest plugin: ``kopf_crd`` installs the CRD,
``kopf_operator`` runs ``greeter.py`` in the test's namespace (and fails the test
if it logs an error), ``kopf_kube`` creates, patches and deletes objects and waits
for their expected state.
"""
import pathlib
from collections.abc import Callable
from typing import Any

import pytest

from kopf_testing import InProcessOperator, KubeClient

HERE = pathlib.Path(__file__).parent
CRD = HERE.parent / 'crd.yaml'
RESOURCE = 'kopfexamples.kopf.dev'


@pytest.fixture(autouse=True)
def running(kopf_crd: Callable[..., list[str]],
            kopf_operator: Callable[..., InProcessOperator]) -> InProcessOperator:
    kopf_crd(CRD)
    return kopf_operator(HERE / 'greeter.py')


def example(object_name: str, /, *, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    return {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
            'metadata': {'name': object_name, 'labels': labels or {}}, 'spec': spec}


def greeted(text: str) -> Callable[[dict[str, Any]], bool]:
    return lambda obj: obj.get('status', {}).get('greeting') == text


def test_a_new_object_is_greeted(kopf_kube: KubeClient) -> None:
    kopf_kube.create(example('one', name='Alice'))
    kopf_kube.wait_for(RESOURCE, 'one', greeted('Hello, Alice!'))


def test_labelled_objects_are_greeted_loudly(kopf_kube: KubeClient) -> None:
    kopf_kube.create(example('loud', name='Bob', labels={'greet': 'loudly'}))
    kopf_kube.wait_for(RESOURCE, 'loud', greeted('HELLO, BOB!'))


def test_the_greeting_follows_the_name(kopf_kube: KubeClient) -> None:
    kopf_kube.create(example('renamed', name='Carol'))
    kopf_kube.wait_for(RESOURCE, 'renamed', greeted('Hello, Carol!'))
    kopf_kube.patch(RESOURCE, 'renamed', {'spec': {'name': 'Dave'}})
    kopf_kube.wait_for(RESOURCE, 'renamed', greeted('Hello, Dave!'))


def test_deletion_waits_for_the_goodbye(kopf_kube: KubeClient, running: InProcessOperator) -> None:
    kopf_kube.create(example('leaving', name='Erin'))
    obj = kopf_kube.wait_for(RESOURCE, 'leaving', greeted('Hello, Erin!'))
    assert obj['metadata']['finalizers']  # the operator holds it until it has said goodbye
    kopf_kube.delete(RESOURCE, 'leaving', wait=True)
    running.wait_for(r'Goodbye, Erin!')
