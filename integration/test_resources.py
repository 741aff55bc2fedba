"""
Resource specifications resolved against the real API server's discovery.

Inputs: CRDs applied by ``kubectl`` (before and after the operator starts, and
one plural in two groups); an operator with one create handler per notation of
"Resource specification". Outputs: which handlers the operator called (their
results in the object's status), its log, and what it watches.
"""
import json
import pathlib
from typing import Any

import pytest

from integration.controlplane import Cluster
from integration.kubeobjects import apply_crds, crd_manifest, get_object, poll
from integration.operating import OperatorProcess

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'resources_specs.py')
NOTATIONS = ['by_group_version_plural', 'by_apiversion_and_plural', 'by_plural_dot_group', 'by_plural',
             'by_kind', 'by_group_and_plural', 'by_kind_positionally', 'by_shortname_positionally',
             'by_singular', 'by_plural_keyword', 'by_shortcut', 'by_category']


def create(cluster: Cluster, namespace: str, api_version: str, kind: str, name: str) -> None:
    cluster.kubectl('apply', '-n', namespace, '-f', '-', input=json.dumps({
        'apiVersion': api_version, 'kind': kind, 'metadata': {'name': name}, 'spec': {}}))


def wait_for_status(cluster: Cluster, namespace: str, resource: str, name: str, keys: list[str]) -> dict[str, Any]:
    def status_with_keys() -> dict[str, Any] | None:
        """The object's status has the keys."""
        status: dict[str, Any] = get_object(cluster, namespace, resource, name).get('status') or {}
        return status if all(key in status for key in keys) else None
    return poll(status_with_keys, timeout=30)


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_crds(cluster,
               crd_manifest('resources.kopf.dev', 'widgets', 'Widget', short_names=['wdg'], categories=['kopftests']),
               crd_manifest('a.resources.kopf.dev', 'gadgets', 'Gadget'),
               crd_manifest('b.resources.kopf.dev', 'gadgets', 'Gadget'))


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
    # Only gadgets: the cluster is shared with other modules' tests, whose CRDs may make other names ambiguous.
    warnings = [line for line in op.log.splitlines() if "Ambiguous resources will not be served" in line]
    assert len([line for line in warnings if "any_name='gadgets'" in line]) == 1, warnings
    assert "watch-stream for gadgets" not in op.log
    assert "ambiguous_fn" not in op.log


def test_resources_defined_after_the_start_are_served(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path, no_late_crd: None) -> None:
    with OperatorProcess([OPERATOR, '-n', namespace, '--verbose'], log_path=tmp_path / 'op.log') as op:
        op.wait_for(r"Starting the watch-stream for widgets\.v1\.resources\.kopf\.dev")
        assert "watch-stream for lateones" not in op.log
        assert ("Unresolved resources cannot be served (try creating their CRDs): "
                "Selector(group='late.kopf.dev', version='v1', any_name='lateones')") in op.log
        apply_crds(cluster, crd_manifest('late.kopf.dev', 'lateones', 'LateOne'))
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
