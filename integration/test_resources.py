"""
Resource specifications resolved against the real API server's discovery.

Inputs: CRDs applied by ``kubectl`` (before and after the operator starts, and
one plural in two groups); an operator with one create handler per notation of
"Resource specification". Outputs: which handlers the operator called (their
results in the object's status), its log, and what it watches.
"""
import json
import pathlib
import time
from typing import Any

import pytest

from integration.controlplane import Cluster
from integration.operating import OperatorProcess

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'resources_specs.py')
NOTATIONS = ['by_group_version_plural', 'by_apiversion_and_plural', 'by_plural_dot_group', 'by_plural',
             'by_kind', 'by_group_and_plural', 'by_kind_positionally', 'by_shortname_positionally',
             'by_singular', 'by_plural_keyword', 'by_shortcut', 'by_category']


def crd(group: str, plural: str, kind: str, *, short_names: tuple[str, ...] = (),
        categories: tuple[str, ...] = ()) -> str:
    names: dict[str, Any] = {'plural': plural, 'singular': plural[:-1], 'kind': kind}
    if short_names:
        names['shortNames'] = list(short_names)
    if categories:
        names['categories'] = list(categories)
    schema = {'openAPIV3Schema': {'type': 'object', 'properties': {
        'spec': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True},
        'status': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}}}
    return json.dumps({
        'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
        'metadata': {'name': f'{plural}.{group}'},
        'spec': {'group': group, 'scope': 'Namespaced', 'names': names,
                 'versions': [{'name': 'v1', 'served': True, 'storage': True, 'schema': schema}]}})


def apply_crd(cluster: Cluster, definition: str) -> None:
    cluster.kubectl('apply', '-f', '-', input=definition)
    name = json.loads(definition)['metadata']['name']
    cluster.kubectl('wait', '--for=condition=established', '--timeout=60s', f'crd/{name}')


def create(cluster: Cluster, namespace: str, api_version: str, kind: str, name: str) -> None:
    cluster.kubectl('apply', '-n', namespace, '-f', '-', input=json.dumps({
        'apiVersion': api_version, 'kind': kind, 'metadata': {'name': name}, 'spec': {}}))


def wait_for_status(cluster: Cluster, namespace: str, resource: str, name: str, keys: list[str],
                    timeout: float = 30) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        output = cluster.kubectl('get', resource, name, '-n', namespace, '-o', 'json').stdout
        status: dict[str, Any] = json.loads(output).get('status') or {}
        if all(key in status for key in keys) or time.monotonic() > deadline:
            return status
        time.sleep(0.2)


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_crd(cluster, crd('resources.kopf.dev', 'widgets', 'Widget',
                           short_names=('wdg',), categories=('kopftests',)))
    apply_crd(cluster, crd('a.resources.kopf.dev', 'gadgets', 'Gadget'))
    apply_crd(cluster, crd('b.resources.kopf.dev', 'gadgets', 'Gadget'))


@pytest.fixture
def no_late_crd(cluster: Cluster) -> None:
    cluster.kubectl('delete', 'crd', 'lateones.late.kopf.dev', '--ignore-not-found', '--wait=true')


def test_every_notation_resolves_to_the_same_resource(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    with OperatorProcess([OPERATOR, '-n', namespace, '--verbose'], log_path=tmp_path / 'op.log') as op:
        op.wait_for(r"Starting the watch-stream for widgets\.v1\.resources\.kopf\.dev")
        create(cluster, namespace, 'resources.kopf.dev/v1', 'Widget', 'w1')
        op.wait_for(r"All handlers succeeded for creation\.")
        status = wait_for_status(cluster, namespace, 'widgets.resources.kopf.dev', 'w1', NOTATIONS)
    assert {key: status.get(key) for key in NOTATIONS} == {key: 'called' for key in NOTATIONS}
    # One resource, one watch-stream, however many notations name it.
    assert op.log.count("Starting the watch-stream for widgets.v1.resources.kopf.dev") == 1


def test_ambiguous_resources_are_warned_about_once_and_not_served(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    with OperatorProcess([OPERATOR, '-n', namespace, '--verbose'], log_path=tmp_path / 'op.log') as op:
        op.wait_for(r"Starting the watch-stream for widgets\.v1\.resources\.kopf\.dev")
        create(cluster, namespace, 'a.resources.kopf.dev/v1', 'Gadget', 'g1')
        create(cluster, namespace, 'resources.kopf.dev/v1', 'Widget', 'w2')  # a marker of time passing
        op.wait_for(r"\[.*/w2\] All handlers succeeded for creation\.")
    assert op.log.count("Ambiguous resources will not be served") == 1
    assert "gadgets" in op.log.split("Ambiguous resources will not be served", 1)[1].splitlines()[0]
    assert "watch-stream for gadgets" not in op.log
    assert "ambiguous_fn" not in op.log


def test_resources_defined_after_the_start_are_served(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path, no_late_crd: None) -> None:
    with OperatorProcess([OPERATOR, '-n', namespace, '--verbose'], log_path=tmp_path / 'op.log') as op:
        op.wait_for(r"Starting the watch-stream for widgets\.v1\.resources\.kopf\.dev")
        assert "lateones" not in op.log
        apply_crd(cluster, crd('late.kopf.dev', 'lateones', 'LateOne'))
        op.wait_for(r"Starting the watch-stream for lateones\.v1\.late\.kopf\.dev")
        create(cluster, namespace, 'late.kopf.dev/v1', 'LateOne', 'l1')
        status = wait_for_status(cluster, namespace, 'lateones.late.kopf.dev', 'l1', ['late_fn'])
        assert status.get('late_fn') == 'called'

        # The CRD disappears (with its objects): the operator stops watching it and goes on.
        # A finalizer of ours would keep the CRD from being deleted: there is none (no delete handler).
        cluster.kubectl('delete', 'crd', 'lateones.late.kopf.dev', '--wait=true')
        op.wait_for(r"Stopping the watch-stream for lateones\.v1\.late\.kopf\.dev", timeout=30)
        create(cluster, namespace, 'resources.kopf.dev/v1', 'Widget', 'w3')
        op.wait_for(r"\[.*/w3\] All handlers succeeded for creation\.")
        assert op.process is not None and op.process.poll() is None
    assert "Traceback" not in op.log


def test_everything_serves_all_resources_but_events(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    with OperatorProcess([OPERATOR, '-n', namespace, '--verbose'], log_path=tmp_path / 'op.log',
                         env={'TEST_EVERYTHING': 'true'}) as op:
        op.wait_for(r"Starting the watch-stream for widgets\.v1\.resources\.kopf\.dev")
        create(cluster, namespace, 'resources.kopf.dev/v1', 'Widget', 'w4')
        cluster.kubectl('create', 'configmap', 'cm1', '-n', namespace)
        op.wait_for(r"Seen: widgets\.resources\.kopf\.dev/w4")
        op.wait_for(r"Seen: configmaps\.core/cm1")
    # Neither group of the k8s-events is served: both hold the very same objects, which the
    # operator itself posts (events.v1 is the core API, events.v1.events.k8s.io the newer one).
    assert "watch-stream for events.v1 " not in op.log
    assert "watch-stream for events.v1.events.k8s.io " not in op.log
    assert "Seen: events." not in op.log
