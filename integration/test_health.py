"""
Health checks of a real operator: ``kopf run --liveness=URL`` as the manual's Deployment probes it.

Inputs: the operator ``operators_src/health_probes.py`` with three probe handlers
(one fails while a file exists) and a startup handler that holds the start back
until another file exists; plain HTTP requests to the liveness URL and to ``/readyz``.
Outputs: the HTTP status codes and bodies, and the operator's log.
"""
import json
import pathlib
import socket
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Optional

import pytest

from integration.controlplane import Cluster
from integration.kubeobjects import apply_crds, crd_manifest, create_object, poll
from integration.operating import OperatorProcess
from integration.probes import free_port
from kopf_testing._polling import DEFAULT_TIMEOUT, patient

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'health_probes.py')
GROUP = 'health.kopf.dev'


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_crds(cluster, crd_manifest(GROUP, 'healthobjs', 'HealthObj'))


def fetch(url: str) -> Optional[tuple[int, bytes]]:
    """The status and body, or None if nothing listens there (yet)."""
    try:
        with urllib.request.urlopen(url, timeout=10) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except (urllib.error.URLError, ConnectionError):
        return None


class Files:
    def __init__(self, tmp_path: pathlib.Path) -> None:
        self.gate = tmp_path / 'gate'
        self.fail = tmp_path / 'fail'


@pytest.fixture
def files(tmp_path: pathlib.Path) -> Files:
    return Files(tmp_path)


@pytest.fixture
def operator(namespace: str, tmp_path: pathlib.Path, files: Files) -> Iterator[tuple[OperatorProcess, str]]:
    base = f'http://127.0.0.1:{free_port()}'
    process = OperatorProcess([OPERATOR, '--verbose', '-n', namespace, f'--liveness={base}/healthz'],
                              log_path=tmp_path / 'operator.log',
                              env={'HEALTH_GATE_FILE': str(files.gate), 'HEALTH_FAIL_FILE': str(files.fail)})
    process.start()
    yield process, base
    process.stop()


def test_liveness_answers_with_the_probes_results(operator: tuple[OperatorProcess, str], files: Files) -> None:
    process, base = operator
    files.gate.touch()
    process.wait_for(r"The startup gate is open\.", timeout=60)  # the memo is filled by then
    status, body = poll(lambda: fetch(f'{base}/healthz'), timeout=60)
    assert status == 200
    assert json.loads(body) == {'static': 'ok', 'memo': 'hello', 'gate': True}
    assert f"Serving health status at {base}/healthz" in process.log


def test_liveness_fails_while_a_probe_fails(operator: tuple[OperatorProcess, str], files: Files) -> None:
    process, base = operator
    files.gate.touch()
    assert poll(lambda: fetch(f'{base}/healthz'), timeout=60)[0] == 200
    files.fail.touch()
    # The results are cached for a while: the failure shows up once they expire.
    status, body = poll(lambda: (r if (r := fetch(f'{base}/healthz')) and r[0] != 200 else None), timeout=60)
    assert (status, body) == (500, b"Probe 'gate' has failed.\n")  # the error is in the log only
    assert "Activity 'gate' failed with an exception and will stop now: the fail file exists" in process.log
    files.fail.unlink()
    _, body = poll(lambda: (r if (r := fetch(f'{base}/healthz')) and r[0] == 200 else None), timeout=60)
    assert json.loads(body)['gate'] is True


def test_readiness_before_and_after_the_initial_listing(cluster: Cluster, namespace: str,
                                                         operator: tuple[OperatorProcess, str],
                                                         files: Files) -> None:
    process, base = operator
    create_object(cluster, namespace, {'apiVersion': f'{GROUP}/v1', 'kind': 'HealthObj',
                                       'metadata': {'name': 'obj'}, 'spec': {}})
    process.wait_for(r"Waiting for the startup gate\.", timeout=60)
    # Alive (the startup is in progress), but not ready: nothing is listed yet.
    assert poll(lambda: fetch(f'{base}/healthz'), timeout=60)[0] == 200
    assert fetch(f'{base}/readyz') == (503, b"The operator has not listed all its resources yet.\n")
    assert "Starting the watch-stream" not in process.log

    files.gate.touch()
    ready = poll(lambda: (r if (r := fetch(f'{base}/readyz')) and r[0] == 200 else None), timeout=60)
    assert ready == (200, b"OK\n")
    assert "Starting the watch-stream for healthobjs.v1.health.kopf.dev" in process.log
    process.wait_for(r"\[.*/obj\] Created\.", timeout=60)  # the listed object is served


def test_nothing_listens_after_the_exit(operator: tuple[OperatorProcess, str], files: Files) -> None:
    process, base = operator
    files.gate.touch()
    assert poll(lambda: fetch(f'{base}/readyz'), timeout=60)[0] in (200, 503)
    assert process.stop() == 0
    assert fetch(f'{base}/healthz') is None


def test_a_busy_port_stops_the_operator_with_one_line(namespace: str, tmp_path: pathlib.Path,
                                                      files: Files) -> None:
    files.gate.touch()
    with socket.socket() as busy:
        busy.bind(('127.0.0.1', 0))
        busy.listen()
        url = f'http://127.0.0.1:{busy.getsockname()[1]}/healthz'
        process = OperatorProcess([OPERATOR, '-n', namespace, f'--liveness={url}'], log_path=tmp_path / 'op.log',
                                  env={'HEALTH_GATE_FILE': str(files.gate), 'HEALTH_FAIL_FILE': str(files.fail)})
        process.start()
        assert process.process is not None
        assert process.process.wait(timeout=patient(DEFAULT_TIMEOUT)) == 1
    assert f"Error: Cannot serve the liveness endpoint {url}: " in process.log
    assert "Choose another port or host in --liveness." in process.log
    assert "Traceback" not in process.log
