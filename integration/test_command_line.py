"""
The command line as users type it: ``python -m kopf``, Kopf's short options and
environment variables, and bad input.

Inputs: the 01-minimal operator or small operators written to a temporary
directory, the options and variables, the local control plane. Outputs: what
the operator did in the cluster (handled objects, peering entries), its exit
code and its output. Nothing is mocked.
"""
import json
import os
import pathlib
import re
import subprocess
import sys
from collections.abc import Sequence
from typing import Optional

import pytest

from integration.controlplane import Cluster
from integration.kubeobjects import apply_peering_crds, create_object, create_peering, get_object, wait_for_object
from integration.operating import EXAMPLES, REPO_ROOT, OperatorProcess, kopf_executable

EXAMPLE = str(EXAMPLES / '01-minimal' / 'example.py')
OBJECT = {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': 'kopf-example-1'}, 'spec': {}}


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> None:
    apply_peering_crds(cluster, EXAMPLES)


@pytest.fixture
def peering(cluster: Cluster, namespace: str) -> str:
    return create_peering(cluster, namespace, 'example')


def python_m_kopf(args: Sequence[str], *, log_path: pathlib.Path, env: Optional[dict[str, str]] = None,
                  ) -> OperatorProcess:
    process = OperatorProcess(args, log_path=log_path, env=env)
    process.args = [sys.executable, '-m', 'kopf', 'run', *args]
    return process


def kopf(*args: str, env: Optional[dict[str, str]] = None, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run([kopf_executable(), *args], capture_output=True, text=True, timeout=timeout,
                          env=dict(os.environ, **(env or {})), cwd=REPO_ROOT)


def peering_status(cluster: Cluster, namespace: str, name: str) -> dict[str, dict[str, object]]:
    return get_object(cluster, namespace, 'kopfpeering', name).get('status', {})  # type: ignore[no-any-return]


def test_python_m_kopf_runs_the_operator(cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    args = [EXAMPLE, '--standalone', '--verbose', '-n', namespace]
    with python_m_kopf(args, log_path=tmp_path / 'operator.log') as operator:
        create_object(cluster, namespace, OBJECT)
        log = operator.wait_for(r"Handler 'create_fn' succeeded\.", timeout=60)
    assert operator.process is not None and operator.process.returncode == 0
    # The process is the operator's own: its garbage collector is tuned for many live bodies.
    assert re.search(r"Garbage collection is tuned: \d+ objects of the start-up are frozen, "
                     r"the thresholds are \(7000, 10, 10\)\.", log)
    assert get_object(cluster, namespace, 'kopfexamples', 'kopf-example-1')['status']['create_fn'] == {
        'message': 'hello world'}


@pytest.mark.parametrize('args, env', [
    pytest.param(['-n', '{ns}', '-P', 'example', '-p', '123'], {}, id='short-options'),
    pytest.param([], {'KOPF_RUN_NAMESPACES': '{ns}', 'KOPF_RUN_PEERING': 'example', 'KOPF_RUN_PRIORITY': '123'},
                 id='environment'),
    pytest.param([], {'KOPF_RUN_NAMESPACE': '{ns}', 'KOPF_RUN_PEERING': 'example', 'KOPF_RUN_PRIORITY': '123'},
                 id='legacy-namespace-variable'),
])
def test_short_options_and_variables_configure_the_operator(
        cluster: Cluster, namespace: str, peering: str, tmp_path: pathlib.Path,
        args: list[str], env: dict[str, str],
) -> None:
    args = [arg.replace('{ns}', namespace) for arg in args]
    env = {key: val.replace('{ns}', namespace) for key, val in env.items()}
    with OperatorProcess([EXAMPLE, '--verbose', *args], log_path=tmp_path / 'op.log', env=env) as operator:
        operator.wait_for(rf"Keep-alive in 'example' in '{namespace}': ok\.", timeout=60)
        [entry] = peering_status(cluster, namespace, peering).values()
        assert entry['priority'] == 123
        create_object(cluster, namespace, OBJECT)
        operator.wait_for(rf"\[{namespace}/kopf-example-1\] Handler 'create_fn' succeeded\.", timeout=60)


@pytest.mark.parametrize('freeze, resume, env', [
    pytest.param(['-P', 'example', '-i', 'freezer', '-p', '200', '-t', '60', '-n', '{ns}'],
                 ['-P', 'example', '-i', 'freezer', '-n', '{ns}'], {}, id='short-options'),
    pytest.param([], [], {'KOPF_FREEZE_PEERING': 'example', 'KOPF_FREEZE_ID': 'freezer', 'KOPF_FREEZE_PRIORITY': '200',
                          'KOPF_FREEZE_LIFETIME': '60', 'KOPF_FREEZE_NAMESPACES': '{ns}',
                          'KOPF_RESUME_PEERING': 'example', 'KOPF_RESUME_ID': 'freezer',
                          'KOPF_RESUME_NAMESPACES': '{ns}'}, id='environment'),
])
def test_freeze_and_resume_with_short_options_and_variables(
        cluster: Cluster, namespace: str, peering: str,
        freeze: list[str], resume: list[str], env: dict[str, str],
) -> None:
    env = {key: val.replace('{ns}', namespace) for key, val in env.items()}
    result = kopf('freeze', *[arg.replace('{ns}', namespace) for arg in freeze], env=env)
    assert result.returncode == 0, result.stderr
    entry = peering_status(cluster, namespace, peering)['freezer']
    assert (entry['priority'], entry['lifetime']) == (200, 60)
    result = kopf('resume', *[arg.replace('{ns}', namespace) for arg in resume], env=env)
    assert result.returncode == 0, result.stderr
    assert 'freezer' not in peering_status(cluster, namespace, peering)


def assert_one_error_line(result: subprocess.CompletedProcess[str], returncode: int, text: str) -> str:
    assert result.returncode == returncode, result.stderr
    assert 'Traceback' not in result.stderr
    errors = [line for line in result.stderr.splitlines() if line.startswith('Error: ')]
    assert len(errors) == 1, result.stderr
    assert text in errors[0], result.stderr
    return errors[0]


def write(tmp_path: pathlib.Path, name: str, code: str) -> str:
    path = tmp_path / name
    path.write_text(code)
    return str(path)


def test_a_missing_file(namespace: str, tmp_path: pathlib.Path) -> None:
    result = kopf('run', '-n', namespace, str(tmp_path / 'absent.py'))
    assert_one_error_line(result, 2, "absent.py' does not exist.")


def test_a_file_failing_to_import(namespace: str, tmp_path: pathlib.Path) -> None:
    helper = write(tmp_path, 'helper_module.py', "import kopf\n\nCONFIG = {}\nVALUE = CONFIG['missing']\n")
    path = write(tmp_path, 'operator.py', "import kopf\nimport helper_module\n")
    result = kopf('run', '-n', namespace, path)
    line = assert_one_error_line(result, 1, f"Failed to load {path}: KeyError: 'missing'")
    assert result.stderr.splitlines()[-4:] == [  # the user's traceback, without the framework's frames
        f'  File "{path}", line 2, in <module>', "    import helper_module",
        f'  File "{helper}", line 4, in <module>', "    VALUE = CONFIG['missing']"]
    assert 'importlib' not in result.stderr and 'kopf_cli' not in result.stderr, line


def test_no_handlers_at_all(namespace: str, tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, 'operator.py', "import kopf\n")
    result = kopf('run', '-n', namespace, path)
    assert_one_error_line(result, 1, "No handlers are registered: nothing to run.")


def test_an_unknown_option(namespace: str) -> None:
    result = kopf('run', '-n', namespace, '--no-such-option', EXAMPLE)
    assert_one_error_line(result, 2, "No such option '--no-such-option'")


def test_no_cluster_reachable(namespace: str, tmp_path: pathlib.Path) -> None:
    kubeconfig = tmp_path / 'unreachable.kubeconfig'
    kubeconfig.write_text(json.dumps({
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'nowhere',
        'clusters': [{'name': 'nowhere', 'cluster': {'server': 'https://127.0.0.1:9',
                                                     'insecure-skip-tls-verify': True}}],
        'users': [{'name': 'someone', 'user': {'token': 'irrelevant'}}],
        'contexts': [{'name': 'nowhere', 'context': {'cluster': 'nowhere', 'user': 'someone'}}],
    }))
    # The client retries the network errors with growing delays (as documented); shorten them.
    path = write(tmp_path, 'operator.py', (
        "import kopf\n\n"
        "@kopf.on.startup()\n"
        "def configure(settings, **_):\n"
        "    settings.networking.error_backoffs = [0.1]\n\n"
        "@kopf.on.create('kopfexamples')\n"
        "def create_fn(**_):\n"
        "    pass\n"))
    result = kopf('run', '--standalone', '-n', namespace, path, env={'KUBECONFIG': str(kubeconfig)})
    assert_one_error_line(result, 1, "Cannot reach the cluster")
    assert '127.0.0.1:9' in result.stderr


def test_a_resource_that_does_not_exist(cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    path = write(tmp_path, 'operator.py', (
        "import kopf\n\n"
        "@kopf.on.create('kopfexamples')\n"
        "def create_fn(**_):\n"
        "    return 'handled'\n\n"
        "@kopf.on.create('nonexistents')\n"
        "def typo_fn(**_):\n"
        "    pass\n"))
    with OperatorProcess([path, '--standalone', '-n', namespace], log_path=tmp_path / 'op.log') as operator:
        operator.wait_for(r"Unresolved resources cannot be served \(try creating their CRDs\): "
                                r"Selector\(any_name='nonexistents'\)", timeout=60)
        # The operator goes on serving what exists (Kopf does so: the CRD may be created later).
        create_object(cluster, namespace, OBJECT)
        wait_for_object(cluster, namespace, 'kopfexamples', 'kopf-example-1',
                        lambda obj: obj.get('status', {}).get('create_fn') == 'handled', timeout=60)
