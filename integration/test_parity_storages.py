"""
The diff-base storages' ``ignored_fields`` (Kopf 1.45) on a real API server.

Inputs: the operator ``operators_src/ignored_fields.py`` with an annotations or
status diff-base storage that ignores ``spec.ignored`` and the label ``noise``;
an object created with them, then changed only in them, then in another field.
Outputs: the stored diff-base (as read back from the API server) and the handlers'
log lines: changes of only the ignored fields run no update or field handlers.
"""
import json
import pathlib
import time
from typing import Any

import pytest

from integration import kubeobjects
from integration.controlplane import Cluster
from integration.operating import OperatorProcess

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'ignored_fields.py')
FINISHED = r"Handling cycle is finished, waiting for new changes\."

pytestmark = pytest.mark.usefixtures('example_crd')


def stored_essence(obj: dict[str, Any], storage: str) -> dict[str, Any]:
    if storage == 'status':
        raw = obj['status']['kopf']['last-handled-configuration']
    else:
        raw = obj['metadata']['annotations']['kopf.zalando.org/last-handled-configuration']
    essence: dict[str, Any] = json.loads(raw)
    return essence


def has_essence(storage: str, field: str, value: str) -> Any:
    def check(obj: dict[str, Any]) -> bool:
        try:
            return bool(stored_essence(obj, storage)['spec'][field] == value)
        except (KeyError, TypeError):
            return False
    return check


@pytest.mark.parametrize('storage', ['annotations', 'status'])
def test_changes_of_only_ignored_fields_run_no_handlers_and_are_not_stored(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path, storage: str) -> None:
    with OperatorProcess([OPERATOR, '-n', namespace, '--verbose', '--standalone'],
                         log_path=tmp_path / 'operator.log', env={'IGNORED_STORAGE': storage}) as operator:
        operator.wait_for(r"Starting the watch-stream for kopfexamples", timeout=60)
        kubeobjects.create_object(cluster, namespace, {
            'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
            'metadata': {'name': 'obj1', 'labels': {'noise': '1', 'app': 'x'}},
            'spec': {'field': 'a', 'ignored': 1}})
        obj = kubeobjects.wait_for_object(cluster, namespace, 'kopfexamples', 'obj1',
                                          has_essence(storage, 'field', 'a'))
        assert stored_essence(obj, storage) == {'spec': {'field': 'a'}, 'metadata': {'labels': {'app': 'x'}}}

        # Only the ignored fields: nothing to handle. Time for the operator to see it (and do nothing).
        kubeobjects.merge_patch(cluster, namespace, 'kopfexamples', 'obj1',
                                {'metadata': {'labels': {'noise': '2'}}, 'spec': {'ignored': 2}})
        time.sleep(3)
        # Then a meaningful change: its handler sees only it.
        kubeobjects.merge_patch(cluster, namespace, 'kopfexamples', 'obj1', {'spec': {'field': 'b'}})
        obj = kubeobjects.wait_for_object(cluster, namespace, 'kopfexamples', 'obj1',
                                          has_essence(storage, 'field', 'b'))
        operator.wait_for(r"update_fn is called")
        log = operator.log

    assert stored_essence(obj, storage) == {'spec': {'field': 'b'}, 'metadata': {'labels': {'app': 'x'}}}
    lines = kubeobjects.object_log_lines(log, namespace, 'obj1')
    calls = [line for line in lines if ' is called' in line]
    assert calls == ["create_fn is called",
                     "update_fn is called with [('change', ('spec', 'field'), 'a', 'b')]"]
    assert 'Traceback' not in log
