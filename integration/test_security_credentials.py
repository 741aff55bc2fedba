"""
TLS verification as the kubeconfig says it, against a real API server (issue 27 §2).

Inputs: copies of the test cluster's admin kubeconfig (``kubectl config view
--raw --minify --flatten``), changed only in the cluster's TLS settings; an
operator run by ``kopf run`` in its own process with that kubeconfig, and with
the login libraries that the integration environment has (pykube-ng and
kubernetes: both read the file). Outputs: the operator's exit code and log, and
whether it handles objects; ``kubectl``'s verdict on the same files, to show
that both refuse the same ones. Nothing is faked: the API server's certificate
is real, and is either verified with the CA or not at all.
"""
import json
import pathlib
import re
from typing import Any

import pytest
import yaml

from integration.controlplane import Cluster
from integration.operating import EXAMPLES, OperatorProcess
from kopf_testing._polling import DEFAULT_TIMEOUT, patient

EXAMPLE = str(EXAMPLES / '01-minimal' / 'example.py')

INSECURE_LOGIN_OPERATOR = '''
import dataclasses
import kopf

@kopf.on.login()
def login_fn(**kwargs):
    info = kopf.login_with_kubeconfig(**kwargs)  # a secure one: the kubeconfig has its CA
    return dataclasses.replace(info, insecure=True, ca_path=None, ca_data=None)

@kopf.on.create('kopfexamples')
def create_fn(**_):
    return {'message': 'insecure, but working'}
'''

pytestmark = pytest.mark.usefixtures('example_crd')


@pytest.fixture
def admin_kubeconfig(cluster: Cluster) -> dict[str, Any]:
    """The admin kubeconfig's current context only, with its certificates inlined."""
    result = cluster.kubectl('config', 'view', '--raw', '--minify', '--flatten', '-o', 'json')
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def write_kubeconfig(path: pathlib.Path, doc: dict[str, Any], **cluster_fields: Any) -> pathlib.Path:
    """A copy with these fields of the cluster set (``None`` removes them), as YAML."""
    fields = doc['clusters'][0]['cluster']
    for key, value in cluster_fields.items():
        if value is None:
            fields.pop(key, None)
        else:
            fields[key] = value
    path.write_text(yaml.safe_dump(doc))
    return path


def where(doc: dict[str, Any], path: pathlib.Path) -> str:
    return f"the cluster {doc['clusters'][0]['name']!r} of the context {doc['current-context']!r} in {path}"


def run_until_exit(namespace: str, tmp_path: pathlib.Path, kubeconfig: pathlib.Path) -> tuple[int, str]:
    op = OperatorProcess([EXAMPLE, '-n', namespace], log_path=tmp_path / 'op.log', env={'KUBECONFIG': str(kubeconfig)})
    op.start()
    assert op.process is not None
    try:
        exit_code = op.process.wait(timeout=patient(DEFAULT_TIMEOUT))
    finally:
        op.stop()
    return exit_code, op.log


def create_object(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl('apply', '-n', namespace, '-f', '-', input=json.dumps({
        'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': 'kopf-example-1'}, 'spec': {}}))


def status_of(cluster: Cluster, namespace: str) -> dict[str, Any]:
    result = cluster.kubectl('get', '-n', namespace, 'kopfexample', 'kopf-example-1', '-o', 'json')
    return json.loads(result.stdout).get('status', {})  # type: ignore[no-any-return]


def test_quoted_false_fails_the_login_with_one_clear_message(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path, admin_kubeconfig: dict[str, Any]) -> None:
    path = write_kubeconfig(tmp_path / 'quoted.kubeconfig', admin_kubeconfig, **{'insecure-skip-tls-verify': 'false'})
    assert "insecure-skip-tls-verify: 'false'" in path.read_text()  # quoted: a string, as in the issue

    exit_code, log = run_until_exit(namespace, tmp_path, path)

    assert exit_code != 0
    message = (f"The kubeconfig's insecure-skip-tls-verify must be a YAML boolean, but it is the string 'false' "
               f"in {where(admin_kubeconfig, path)}; kubectl refuses it too. "
               f"Write it without quotes: `insecure-skip-tls-verify: false`.")
    # Each library that read the file says it once (both are installed here), in one line each.
    assert log.count(f"Activity 'login_via_pykube' failed permanently: {message}") == 1
    assert log.count(f"Activity 'login_via_client' failed permanently: {message}") == 1
    assert "Cannot log in to the cluster" in log
    assert 'Traceback' not in log
    assert 'TLS verification is off' not in log  # nothing was sent without the verification
    kubectl = cluster.kubectl('get', '--raw', '/version', kubeconfig=path, check=False)
    assert kubectl.returncode != 0 and 'insecure-skip-tls-verify' in kubectl.stderr


def test_insecure_flag_with_a_ca_fails_the_login_as_in_kubectl(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path, admin_kubeconfig: dict[str, Any]) -> None:
    assert admin_kubeconfig['clusters'][0]['cluster'].get('certificate-authority-data')
    path = write_kubeconfig(tmp_path / 'both.kubeconfig', admin_kubeconfig, **{'insecure-skip-tls-verify': True})

    exit_code, log = run_until_exit(namespace, tmp_path, path)

    assert exit_code != 0
    assert (f"The kubeconfig has both insecure-skip-tls-verify: true and certificate-authority-data "
            f"in {where(admin_kubeconfig, path)}; kubectl refuses it too") in log
    assert "Cannot log in to the cluster" in log
    assert 'Traceback' not in log
    kubectl = cluster.kubectl('get', '--raw', '/version', kubeconfig=path, check=False)
    assert kubectl.returncode != 0
    assert 'specifying a root certificates file with the insecure flag is not allowed' in kubectl.stderr


def test_insecure_true_without_a_ca_is_warned_about_and_works(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path, admin_kubeconfig: dict[str, Any]) -> None:
    path = write_kubeconfig(tmp_path / 'insecure.kubeconfig', admin_kubeconfig,
                            **{'insecure-skip-tls-verify': True, 'certificate-authority-data': None})
    env = {'KUBECONFIG': str(path)}
    with OperatorProcess([EXAMPLE, '-n', namespace], log_path=tmp_path / 'op.log', env=env) as op:
        create_object(cluster, namespace)
        log = op.wait_for(r"Handler 'create_fn' succeeded\.", timeout=60)
    assert status_of(cluster, namespace)['create_fn'] == {'message': 'hello world'}

    warning = (f"TLS verification is off for {admin_kubeconfig['clusters'][0]['cluster']['server']} "
               f"({where(admin_kubeconfig, path)}): the server's certificate is not checked")
    lines = [line for line in log.splitlines() if warning in line]
    assert len(lines) == 2  # once per login: pykube-ng's and the official client's (the client warns no more)
    assert all(re.search(r'\bWARNING\b', line) for line in lines)
    kubectl = cluster.kubectl('get', '--raw', '/version', kubeconfig=path, check=False)
    assert kubectl.returncode == 0  # kubectl accepts it too


def test_insecure_credentials_of_a_login_handler_are_warned_about_once(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    operator = tmp_path / 'insecure_login.py'
    operator.write_text(INSECURE_LOGIN_OPERATOR)
    with OperatorProcess([str(operator), '-n', namespace], log_path=tmp_path / 'op.log') as op:
        create_object(cluster, namespace)
        log = op.wait_for(r"Handler 'create_fn' succeeded\.", timeout=60)
    assert status_of(cluster, namespace)['create_fn'] == {'message': 'insecure, but working'}

    warning = (f"TLS verification is off for {cluster.server} (insecure=True in the login handler's "
               f"ConnectionInfo): the server's certificate is not checked")
    lines = [line for line in log.splitlines() if warning in line]
    assert len(lines) == 1  # for the many requests of the operator's run
