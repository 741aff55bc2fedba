"""
Two operators in one process (the embedding manual's threads), each with its own registry, settings and memo.

Inputs: ``operators_src/two_operators.py`` started as a process: the operators "alpha" and "beta", each in
a thread with its own event loop, serving the resources ``alphas`` and ``betas`` of one namespace, with
their own finalizers and annotations' prefixes. One object of each resource, created, then deleted.
Outputs: each object's finalizers, annotations, status (which operator handled it and what its memo held),
the k8s-events posted for it, and the process's log. Nothing is mocked.
"""
import functools
import json
import pathlib
import sys

import pytest

from integration.controlplane import Cluster
from integration.kubeobjects import apply_crds, crd_manifest, create_object, poll, wait_for_object
from integration.operating import OperatorProcess

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'two_operators.py')
GROUP = 'embedding.kopf.dev'
OPERATORS = {'alpha': 'alphas', 'beta': 'betas'}


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_crds(cluster, crd_manifest(GROUP, 'alphas', 'Alpha'), crd_manifest(GROUP, 'betas', 'Beta'))


def events_of(cluster: Cluster, namespace: str, name: str) -> set[str]:
    listed = json.loads(cluster.kubectl('get', 'events', '-n', namespace, '-o', 'json',
                                        '--field-selector', f'involvedObject.name={name}').stdout)
    return {event['reason'] for event in listed['items']}


def test_two_operators_in_one_process_keep_their_registries_settings_memos_and_events_apart(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    process = OperatorProcess([], log_path=tmp_path / 'operators.log')
    process.args = [sys.executable, OPERATOR, namespace]
    process.start()
    try:
        for plural in OPERATORS.values():
            process.wait_for(rf"Starting the watch-stream for {plural}\.v1\.{GROUP}", timeout=60)
        for name, plural in OPERATORS.items():
            create_object(cluster, namespace, {'apiVersion': f'{GROUP}/v1', 'kind': plural[:-1].capitalize(),
                                               'metadata': {'name': f'{name}-object'}, 'spec': {}})
        for name, plural in OPERATORS.items():
            obj = wait_for_object(cluster, namespace, f'{plural}.{GROUP}', f'{name}-object',
                                  lambda o: 'create_fn' in o.get('status', {}), timeout=60)
            # Its own operator's handler, memo, finalizer and annotations; none of the other's.
            assert obj['status']['create_fn'] == {'operator': name, 'memo': name}
            assert obj['metadata']['finalizers'] == [f'{name}.{GROUP}/finalizer']
            prefixes = {key.split('/', 1)[0] for key in obj['metadata'].get('annotations', {})}
            assert prefixes == {f'{name}.{GROUP}'}, obj['metadata'].get('annotations')
            reasons = poll(functools.partial(events_of, cluster, namespace, f'{name}-object'), timeout=30)
            assert reasons == {f'HandledBy-{name}'}
        for name, plural in OPERATORS.items():
            cluster.kubectl('delete', f'{plural}.{GROUP}', f'{name}-object', '-n', namespace, '--timeout=60s')
        for name in OPERATORS:
            process.wait_for(rf"Deleted, as seen by the operator {name}\.", timeout=30)
    finally:
        process.stop()
    log = process.log
    assert "The operator alpha has returned." in log
    assert "The operator beta has returned." in log
    assert "Both operators have returned." in log
    assert "Traceback" not in log
    # Each operator's log lines are about its own objects only.
    assert "Deleted, as seen by the operator alpha." in log and "Deleted, as seen by the operator beta." in log
    for line in log.splitlines():
        if "as seen by the operator alpha" in line:
            assert "/alpha-object]" in line, line
        if "as seen by the operator beta" in line:
            assert "/beta-object]" in line, line
