"""
Objects too big for their diff-base in Kopf's format: handled once per change, across restarts.

Inputs: objects with a 1 MiB spec (a realistic one: many similar entries; and an
incompressible one: random data), handled by ``operators_src/big_objects.py``
with the default (annotations) and the status diff-base storages, for CRDs with
and without the status subresource. Each handler appends a line to a file.
Outputs: that file (how many times each handler has run, and with which old and
new revisions), the object as stored (where the diff-base is), and the log
(where the operator says it has put the diff-base; no refused patch).

The annotations hold 256 KiB in all and etcd takes 1.5 MiB per object, so a
1 MiB essence is stored compressed (``...-packed``) or, if even that does not
fit, not at all: the operator then keeps it in memory, says so once per stored
change, and a restart handles the object as a new one.
"""
import base64
import gzip
import json
import os
import pathlib
import re
from typing import Any, Optional

import pytest

from integration.controlplane import Cluster
from integration.kubeobjects import FINISHED, apply_crds, crd_manifest, poll
from integration.operating import OperatorProcess
from kopf_testing import Kube

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'big_objects.py')
GROUP = 'bigobjects.kopf.dev'
WITH_STATUS = 'bigsubs'  # with the status subresource
WITHOUT_STATUS = 'bigplains'  # without it: the status is a part of the main object
PLAIN_ANNOTATION = 'kopf.zalando.org/last-handled-configuration'
PACKED_ANNOTATION = 'kopf.zalando.org/last-handled-configuration-packed'
PACKED_HEADER = 'v1:gzip+base64:'
REFUSALS = ['Too long', 'Unprocessable', 'rejected', 'request is too large', 'Internal Server Error',
            'APIServerError', 'APIUnprocessableEntityError']  # 422s and 500s, as logged
KINDS = {WITH_STATUS: 'Bigsub', WITHOUT_STATUS: 'Bigplain'}
SPEC_SIZE = 1024 * 1024
IDLE = r"Something has changed, but we are not interested \(the essence is the same\)\."  # its own patch
GONE = r"Deleted, really deleted, and we are notified\."
TIMEOUT = 120  # a cycle of a 1 MiB object takes seconds on a busy machine (the API server's too)

Object = dict[str, Any]


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_crds(cluster, crd_manifest(GROUP, WITH_STATUS, KINDS[WITH_STATUS], status_subresource=True),
               crd_manifest(GROUP, WITHOUT_STATUS, KINDS[WITHOUT_STATUS], status_subresource=False))


def realistic_spec() -> Object:
    """About 1 MiB of similar entries, as big specs usually are (e.g. generated configurations)."""
    workers: list[Object] = []
    size = 0
    while size < SPEC_SIZE:
        i = len(workers)
        workers.append({'name': f'worker-{i:05d}', 'image': f'registry.example.com/team/worker:1.{i % 17}.{i % 5}',
                        'replicas': 1 + i % 3,
                        'resources': {'cpu': f'{100 + 10 * (i % 8)}m', 'memory': f'{128 << i % 4}Mi'},
                        'env': [{'name': 'LOG_LEVEL', 'value': 'info'}, {'name': 'SHARD', 'value': str(i)}]})
        size += len(json.dumps(workers[-1], separators=(',', ':'))) + 1  # as the API server keeps it
    return {'revision': 0, 'workers': workers}


def incompressible_spec() -> Object:
    """About 1 MiB of random data: compressed, it is as big as it is (e.g. embedded binaries)."""
    return {'revision': 0, 'blobs': [base64.b64encode(os.urandom(3 * 1024)).decode() for _ in range(256)]}


class Operator:
    """The operator, run and re-run on one object, with its handlers' calls and its log."""

    def __init__(self, cluster: Cluster, namespace: str, tmp_path: pathlib.Path, plural: str, diffbase: str):
        self.kube = Kube(cluster, namespace)
        self.namespace = namespace
        self.plural = f'{plural}.{GROUP}'
        self.calls_path = tmp_path / 'calls.txt'
        self.tmp_path = tmp_path
        self.env = {'BIG_PLURAL': self.plural, 'BIG_CALLS': str(self.calls_path), 'BIG_DIFFBASE': diffbase}
        self.logs: list[str] = []
        self.process: Optional[OperatorProcess] = None

    def start(self) -> OperatorProcess:
        log_path = self.tmp_path / f'run{len(self.logs) + 1}.log'
        self.process = OperatorProcess([OPERATOR, '-n', self.namespace, '--verbose'], log_path=log_path, env=self.env)
        self.process.start()
        return self.process

    def stop(self) -> str:
        assert self.process is not None
        assert self.process.stop(timeout=TIMEOUT) == 0
        self.logs.append(self.process.log)
        self.process = None
        return self.logs[-1]

    @property
    def calls(self) -> list[str]:
        return self.calls_path.read_text().splitlines() if self.calls_path.exists() else []

    def wait_for_calls(self, count: int) -> list[str]:
        def enough() -> Optional[list[str]]:
            """the handlers' calls"""
            calls = self.calls
            return calls if len(calls) >= count else None
        return poll(enough, timeout=TIMEOUT)

    def create(self, spec: Object) -> None:
        kind = KINDS[self.plural.split('.')[0]]
        self.kube.create({'apiVersion': f'{GROUP}/v1', 'kind': kind, 'metadata': {'name': 'obj'}, 'spec': spec})

    def update(self, revision: int) -> None:
        self.kube.patch(self.plural, 'obj', {'spec': {'revision': revision}})

    def get(self) -> Object:
        return self.kube.get(self.plural, 'obj')


def refusals(log: str) -> list[str]:
    return [line for line in log.splitlines() if any(word in line for word in REFUSALS)]


def placements(log: str, level: str = 'INFO') -> list[str]:
    """The lines saying where the diff-base has gone, at one level."""
    return re.findall(rf"\[{level}\s*\] \[[^\]]*/obj\] (The last-handled configuration .*)$", log, re.MULTILINE)


def stored_essence(obj: Object, diffbase: str) -> Object:
    """The packed diff-base, decoded as any user can (and only the packed one is there)."""
    if diffbase == 'annotations':
        annotations = obj['metadata']['annotations']
        assert PLAIN_ANNOTATION not in annotations
        value = annotations[PACKED_ANNOTATION]
    else:
        kopf_status = obj['status']['kopf']
        assert 'last-handled-configuration' not in kopf_status
        value = kopf_status['last-handled-configuration-packed']
    assert value.startswith(PACKED_HEADER)
    return json.loads(gzip.decompress(base64.b64decode(value[len(PACKED_HEADER):])))  # type: ignore[no-any-return]


@pytest.mark.parametrize('plural, diffbase', [
    (WITH_STATUS, 'annotations'),
    (WITHOUT_STATUS, 'annotations'),
    (WITH_STATUS, 'status'),
])
def test_big_object_is_handled_once_per_change_and_after_a_restart(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path, plural: str, diffbase: str) -> None:
    operator = Operator(cluster, namespace, tmp_path, plural, diffbase)
    spec = realistic_spec()
    operator.create(spec)
    first = operator.start()
    try:
        assert operator.wait_for_calls(1) == ['create 0']
        first.wait_for(FINISHED, timeout=TIMEOUT)
        for revision in [1, 2, 3]:
            operator.update(revision)
            assert operator.wait_for_calls(1 + revision)[-1] == f'update {revision - 1}->{revision}'
            first.wait_for(FINISHED, count=1 + revision, timeout=TIMEOUT)
        first.wait_for(IDLE, count=4, timeout=TIMEOUT)  # stopped when idle: each patch comes back as an event
    finally:
        log = operator.stop()
    essence = stored_essence(operator.get(), diffbase)
    assert essence['spec'] == {**spec, 'revision': 3}
    where = 'the annotation kopf.zalando.org/last-handled-configuration-packed' if diffbase == 'annotations' else \
        'the field status.kopf.last-handled-configuration-packed'
    said = placements(log)  # once: when it has moved there
    assert len(said) == 1
    assert re.fullmatch(rf"The last-handled configuration \(1\.0 MiB\) exceeds the room in the "
                        rf"{'annotations' if diffbase == 'annotations' else 'object'} \(.*\): "
                        rf"it is stored compressed \(\d+\.\d KiB\) in {re.escape(where)}\.", said[0])
    assert refusals(log) == [] and first.error_lines == []

    # A new operator reads the diff-base back: nothing to do until the next change, which is an update.
    second = operator.start()
    try:
        second.wait_for(FINISHED, timeout=TIMEOUT)  # listed at the start: resumed, with no handlers to resume
        assert len(operator.calls) == 4
        operator.update(4)
        assert operator.wait_for_calls(5)[-1] == 'update 3->4'
        second.wait_for(FINISHED, count=2, timeout=TIMEOUT)
        second.wait_for(IDLE, timeout=TIMEOUT)
        operator.kube.delete(operator.plural, 'obj', wait=True, timeout=TIMEOUT)
        assert operator.wait_for_calls(6)[-1] == 'delete 4'
        second.wait_for(GONE, timeout=TIMEOUT)
    finally:
        log = operator.stop()
    assert refusals(log) == [] and second.error_lines == []
    assert placements(log) == []  # it is where it was: no news
    assert operator.calls == ['create 0', 'update 0->1', 'update 1->2', 'update 2->3', 'update 3->4', 'delete 4']


@pytest.mark.parametrize('plural, diffbase', [(WITH_STATUS, 'annotations'), (WITHOUT_STATUS, 'status')])
def test_incompressible_big_object_is_said_once_per_change_and_does_not_loop(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path, plural: str, diffbase: str) -> None:
    operator = Operator(cluster, namespace, tmp_path, plural, diffbase)
    operator.create(incompressible_spec())
    first = operator.start()
    try:
        assert operator.wait_for_calls(1) == ['create 0']
        first.wait_for(FINISHED, timeout=TIMEOUT)
        for revision in [1, 2]:
            operator.update(revision)
            assert operator.wait_for_calls(1 + revision)[-1] == f'update {revision - 1}->{revision}'
            first.wait_for(FINISHED, count=1 + revision, timeout=TIMEOUT)
    finally:
        log = operator.stop()
    obj = operator.get()
    assert PLAIN_ANNOTATION not in obj['metadata'].get('annotations', {})
    assert PACKED_ANNOTATION not in obj['metadata'].get('annotations', {})
    assert not obj.get('status', {}).get('kopf')
    warnings = placements(log, 'WARNING')
    assert len(warnings) == 3  # one per handled change: the creation, two updates
    limit = 'the annotations' if diffbase == 'annotations' else 'the object'
    assert all("even compressed: it is not stored" in line and f"exceeds the room in {limit}" in line
               for line in warnings)
    assert "after a restart, the object is handled as a new one (its creation handlers run again)" in warnings[0]
    assert refusals(log) == [] and first.error_lines == []
    assert operator.calls == ['create 0', 'update 0->1', 'update 1->2']

    # As said: with nothing stored, a new operator sees a new object.
    second = operator.start()
    try:
        assert operator.wait_for_calls(4)[-1] == 'create 2'
        second.wait_for(FINISHED, timeout=TIMEOUT)
        operator.kube.delete(operator.plural, 'obj', wait=True, timeout=TIMEOUT)
        assert operator.wait_for_calls(5)[-1] == 'delete 2'
        second.wait_for(GONE, timeout=TIMEOUT)
    finally:
        log = operator.stop()
    assert len(placements(log, 'WARNING')) == 1
    assert refusals(log) == [] and second.error_lines == []
    assert operator.calls == ['create 0', 'update 0->1', 'update 1->2', 'create 2', 'delete 2']
