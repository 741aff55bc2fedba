"""
Bad input must not break the operator: one clear log line, no loop, the other objects handled.

Inputs: objects of a CRD of this module, labelled to select the handler of
``operators_src/bad_inputs.py``: a handler returning what cannot be stored as
JSON, a handler whose id is not valid in an annotation key, and plain handlers
for objects with a spec too big for the annotations, deeply nested, or with
odd characters the API server accepts. After each bad object, plain objects
are created and handled one by one: the bad object's handler must not have run
again meanwhile (the failing state used to be retried in a loop).
Outputs: the operator's log, and the objects as stored.
"""
import json
import pathlib
import re
import secrets
from collections.abc import Iterator
from typing import Any

import pytest

from integration import kubeobjects
from integration.controlplane import Cluster
from integration.operating import OperatorProcess

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'bad_inputs.py')
GROUP, PLURAL, KIND = 'bad.kopf.dev', 'badinputs', 'BadInput'


@pytest.fixture(scope='module', autouse=True)
def crd(cluster: Cluster) -> None:
    kubeobjects.apply_crds(cluster, kubeobjects.crd_manifest(GROUP, PLURAL, KIND))


@pytest.fixture
def operator(namespace: str, tmp_path: pathlib.Path) -> Iterator[OperatorProcess]:
    process = OperatorProcess([OPERATOR, '-n', namespace, '--verbose'], log_path=tmp_path / 'operator.log')
    process.start()
    process.wait_for(rf"Starting the watch-stream for {PLURAL}\.v1\.{re.escape(GROUP)}")
    yield process
    process.stop()


def create(cluster: Cluster, namespace: str, name: str, mode: str, spec: dict[str, Any]) -> None:
    kubeobjects.create_object(cluster, namespace, {
        'apiVersion': f'{GROUP}/v1', 'kind': KIND,
        'metadata': {'name': name, 'labels': {'mode': mode}}, 'spec': spec})


def carry_on(cluster: Cluster, namespace: str, operator: OperatorProcess, count: int = 3) -> None:
    """Create plain objects one after another; each is handled (the operator carries on)."""
    for index in range(count):
        create(cluster, namespace, f'after-{index}', 'plain', {})
        operator.wait_for(rf"\[{namespace}/after-{index}\] plain_fn handled after-{index}", timeout=60)


def count(log: str, namespace: str, name: str, text: str) -> int:
    return sum(text in line for line in kubeobjects.object_log_lines(log, namespace, name))


def test_an_unstorable_result_is_dropped_once_and_the_success_kept(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create(cluster, namespace, 'unstorable', 'unserialisable', {})
    operator.wait_for(r"\[.*/unstorable\] Handler 'unserialisable_fn' succeeded, but its result cannot be stored",
                      timeout=60)
    carry_on(cluster, namespace, operator)

    log = operator.log
    assert count(log, namespace, 'unstorable', 'unserialisable_fn is called') == 1, log
    assert count(log, namespace, 'unstorable', 'cannot be stored in the status') == 1, log
    assert 'Traceback' not in log
    obj = kubeobjects.get_object(cluster, namespace, PLURAL, 'unstorable')
    assert kubeobjects.DIFFBASE in obj['metadata']['annotations']
    assert 'unserialisable_fn' not in obj.get('status', {})


def test_a_spec_too_big_for_the_annotations_is_stored_compressed(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create(cluster, namespace, 'huge', 'plain', {'blob': 'x' * 300_000})
    operator.wait_for(r"\[.*/huge\] The last-handled configuration .* it is stored compressed", timeout=60)
    carry_on(cluster, namespace, operator)

    log = operator.log
    assert count(log, namespace, 'huge', 'plain_fn handled huge') == 1, log
    assert count(log, namespace, 'huge', 'it is stored compressed') == 1, log
    assert 'rejected by the API server' not in log
    assert 'Traceback' not in log


def test_a_spec_too_big_even_compressed_is_reported_once_with_what_to_do(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create(cluster, namespace, 'huge', 'plain', {'blob': secrets.token_urlsafe(225_000)})  # ~300 KB, random
    operator.wait_for(r"\[.*/huge\] The last-handled configuration .* even compressed", timeout=60)
    carry_on(cluster, namespace, operator)

    log = operator.log
    assert count(log, namespace, 'huge', 'plain_fn handled huge') == 1, log
    assert count(log, namespace, 'huge', 'even compressed') == 1, log
    assert 'kopf.StatusDiffBaseStorage' in log
    assert 'rejected by the API server' not in log
    assert 'Traceback' not in log


def test_deeply_nested_and_oddly_charactered_specs_are_handled(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    deep: dict[str, Any] = {}
    level = deep
    for _ in range(200):
        level['a'] = {}
        level = level['a']
    create(cluster, namespace, 'deep', 'plain', {'deep': deep})
    create(cluster, namespace, 'odd', 'plain', {'text': 'nul\u0000 lone\udc80 astral\U0001F600 rtl\u202e'})
    for name in ('deep', 'odd'):
        obj = kubeobjects.wait_for_object(cluster, namespace, PLURAL, name,
                                          lambda o: kubeobjects.DIFFBASE in o['metadata'].get('annotations', {}),
                                          timeout=60)
        assert json.loads(obj['metadata']['annotations'][kubeobjects.DIFFBASE])['spec'] == obj['spec']
    carry_on(cluster, namespace, operator, count=1)
    log = operator.log
    assert count(log, namespace, 'deep', 'plain_fn handled deep') == 1, log
    assert count(log, namespace, 'odd', 'plain_fn handled odd') == 1, log
    assert 'ERROR' not in log and 'Traceback' not in log


def test_a_handler_id_invalid_as_an_annotation_key_is_stored_under_a_valid_key(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    create(cluster, namespace, 'badid', 'bad-id', {})
    obj = kubeobjects.wait_for_object(cluster, namespace, PLURAL, 'badid',
                                      lambda o: kubeobjects.DIFFBASE in o['metadata'].get('annotations', {}),
                                      timeout=60)
    carry_on(cluster, namespace, operator, count=1)
    log = operator.log
    assert count(log, namespace, 'badid', 'bad_id_fn is called') == 1, log
    assert 'ERROR' not in log and 'Traceback' not in log
    assert all(re.fullmatch(r'([a-z0-9.-]+/)?[A-Za-z0-9]([A-Za-z0-9_.-]{0,61}[A-Za-z0-9])?', key)
               for key in obj['metadata']['annotations']), obj['metadata']['annotations']
