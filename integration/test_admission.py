"""
Admission control end to end: the real kube-apiserver calls the operator's webhook server.

Inputs: objects of a CRD of this module, labelled to select the admission
handler of ``operators_src/admission_handlers.py``; the operator runs a
``kopf.WebhookServer`` on 127.0.0.1 with a generated certificate and manages
the webhook configurations named after the test's namespace. Outputs: what
``kubectl`` prints (denials, warnings), what the API server stores (mutations,
nothing on dry-runs), and the managed configurations themselves, before and
after the operator's graceful exit. Nothing is mocked.
"""
import base64
import json
import pathlib
import re
import socket
import ssl
import subprocess
from collections.abc import Iterator
from typing import Any

import pytest

from integration import kubeobjects
from integration.controlplane import Cluster
from integration.operating import OperatorProcess
from kopf_testing._polling import DEFAULT_TIMEOUT, patient

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'admission_handlers.py')
WITHOUT_SERVER = str(pathlib.Path(__file__).parent / 'operators_src' / 'admission_without_server.py')
GROUP = 'admission.kopf.dev'
PLURAL = 'admissionobjs'
RESOURCE = f'{PLURAL}.{GROUP}'

Object = dict[str, Any]


@pytest.fixture(scope='module', autouse=True)
def crd(cluster: Cluster) -> None:
    kubeobjects.apply_crds(cluster, kubeobjects.crd_manifest(GROUP, PLURAL, 'AdmissionObj'))


@pytest.fixture
def managed(cluster: Cluster, namespace: str) -> Iterator[str]:
    """The name of the managed configurations; they are deleted after the test, whatever remains."""
    name = f'{namespace}.kopf.dev'
    yield name
    for kind in ('validatingwebhookconfiguration', 'mutatingwebhookconfiguration'):
        cluster.kubectl('delete', kind, name, '--ignore-not-found')


@pytest.fixture
def operator(namespace: str, managed: str, tmp_path: pathlib.Path) -> Iterator[OperatorProcess]:
    process = OperatorProcess([OPERATOR, '-n', namespace, '--verbose'], log_path=tmp_path / 'operator.log',
                              env={'ADMISSION_MANAGED': managed})
    process.start()
    process.wait_for(r"The MutatingWebhookConfiguration '[^']+' is (created|patched)", timeout=60)
    yield process
    process.stop()


def manifest(name: str, mode: str, **spec: Any) -> Object:
    return {'apiVersion': f'{GROUP}/v1', 'kind': 'AdmissionObj',
            'metadata': {'name': name, 'labels': {'mode': mode}}, 'spec': spec}


def kubectl_create(cluster: Cluster, namespace: str, obj: Object, *args: str) -> subprocess.CompletedProcess[str]:
    return cluster.kubectl('create', '-n', namespace, '-f', '-', *args, input=json.dumps(obj), check=False)


def create_when_admitted(cluster: Cluster, namespace: str, obj: Object, *args: str,
                         expected: str) -> subprocess.CompletedProcess[str]:
    """
    Create the object once the apiserver consults the webhooks (``expected`` in kubectl's output).

    The apiserver picks up new webhook configurations asynchronously, within a
    second or so: until then, the objects are admitted without the webhooks.
    Dry-runs probe it without storing anything, so the real attempt is the first
    one made when the webhook is already in effect.
    """
    def admitted_by_webhook() -> bool:
        """the webhook is consulted by the apiserver"""
        probe = kubectl_create(cluster, namespace, obj, '--dry-run=server', *args)
        return expected in probe.stdout + probe.stderr
    kubeobjects.poll(admitted_by_webhook, timeout=60, interval=0.5)
    return kubectl_create(cluster, namespace, obj, *args)


def get_configuration(cluster: Cluster, kind: str, name: str) -> Object:
    return json.loads(cluster.kubectl('get', kind, name, '-o', 'json').stdout)  # type: ignore[no-any-return]


def webhooks_by_name(cluster: Cluster, kind: str, name: str) -> dict[str, Object]:
    return {webhook['name']: webhook for webhook in get_configuration(cluster, kind, name).get('webhooks') or []}


def test_rejection_shows_the_code_and_message_in_kubectl(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    obj = manifest('rejected', 'reject', field='value')
    result = create_when_admitted(cluster, namespace, obj, '-v=6', expected="Meh!")
    assert result.returncode != 0
    assert ("admission webhook \"rejecting." in result.stderr and
            "denied the request: Meh! I don't like 'value'. Change the field." in result.stderr)
    assert re.search(r'"Response" verb="POST" url="https://\S+/apis/admission\.kopf\.dev/v1/namespaces/\S+" '
                     r'status="499 "', result.stderr)
    assert cluster.kubectl('get', '-n', namespace, RESOURCE, 'rejected', check=False).returncode != 0


def test_warnings_reach_kubectl(cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    result = create_when_admitted(cluster, namespace, manifest('warned', 'warn'), expected="Warning: Checked")
    assert result.returncode == 0, result.stderr
    assert "Warning: Checked for admin with dryrun=False." in result.stderr
    assert "created" in result.stdout


def test_mutation_is_stored(cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    obj = manifest('mutated', 'mutate', field='value')
    create_when_admitted(cluster, namespace, obj, '-o', 'json', expected='"numbers"')
    stored = kubeobjects.get_object(cluster, namespace, RESOURCE, 'mutated')
    assert stored['spec'] == {'field': 'value', 'numbers': [1, 2, 3]}
    assert stored['metadata']['labels'] == {'mode': 'mutate', 'mutated': 'yes'}


def test_server_side_dry_run_calls_the_handler_with_dryrun_and_stores_nothing(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    obj = manifest('dry', 'warn')
    result = create_when_admitted(cluster, namespace, obj, '--dry-run=server', expected="Warning: Checked")
    assert result.returncode == 0, result.stderr
    assert "Warning: Checked for admin with dryrun=True." in result.stderr
    assert "warning: dryrun=True" in operator.log
    assert cluster.kubectl('get', '-n', namespace, RESOURCE, 'dry', check=False).returncode != 0


def test_arbitrary_exception_rejects_with_its_message(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    result = create_when_admitted(cluster, namespace, manifest('crashed', 'crash'), '-v=6',
                                  expected="Something went really wrong.")
    assert result.returncode != 0
    assert "denied the request: Something went really wrong." in result.stderr
    assert re.search(r'"Response" verb="POST" url="https://\S+/apis/admission\.kopf\.dev/v1/namespaces/\S+" '
                     r'status="500 Internal Server Error"', result.stderr)
    assert "Webhook 'crashing' failed with an exception." in operator.log


def test_managed_configurations_have_one_webhook_per_handler_with_our_ca(
        cluster: Cluster, managed: str, operator: OperatorProcess) -> None:
    validating = webhooks_by_name(cluster, 'validatingwebhookconfiguration', managed)
    mutating = webhooks_by_name(cluster, 'mutatingwebhookconfiguration', managed)
    assert set(validating) == {f'{id}.{managed}' for id in
                               ['rejecting', 'warning', 'crashing', 'tolerant', 'persistent']}
    assert set(mutating) == {f'mutating.{managed}'}
    tolerant = validating[f'tolerant.{managed}']
    assert tolerant['failurePolicy'] == 'Ignore'
    assert validating[f'crashing.{managed}']['failurePolicy'] == 'Fail'
    assert tolerant['objectSelector'] == {'matchExpressions': [
        {'key': 'mode', 'operator': 'In', 'values': ['tolerant']}]}
    assert tolerant['rules'] == [{'apiGroups': [GROUP], 'apiVersions': ['v1'], 'resources': [PLURAL],
                                  'operations': ['*'], 'scope': '*'}]
    assert mutating[f'mutating.{managed}']['rules'][0]['operations'] == ['CREATE']
    assert re.fullmatch(r'https://127\.0\.0\.1:\d+/tolerant', tolerant['clientConfig']['url'])

    # The CA bundle is the generated one: it verifies the server's certificate for 127.0.0.1.
    cadata = base64.b64decode(tolerant['clientConfig']['caBundle']).decode('ascii')
    context = ssl.create_default_context(cadata=cadata)
    host, port = re.fullmatch(r'https://([^:/]+):(\d+)/.*', tolerant['clientConfig']['url']).groups()  # type: ignore[union-attr]
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        with context.wrap_socket(sock, server_hostname=host) as tls:
            assert tls.getpeercert() is not None


def test_tolerant_webhooks_deny_on_errors_but_are_skipped_when_unreachable(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    # As in Kopf 1.45, the handler's own exceptions deny the admission: failurePolicy is about the calls.
    denied = create_when_admitted(cluster, namespace, manifest('tolerated', 'tolerant'),
                                  expected="It does not matter.")
    assert denied.returncode != 0
    assert "denied the request: It does not matter." in denied.stderr

    # A forced exit leaves the webhooks behind: the tolerant one is skipped, the strict one blocks.
    assert operator.process is not None
    operator.process.kill()
    operator.process.wait()
    admitted = kubectl_create(cluster, namespace, manifest('tolerated', 'tolerant'))
    assert admitted.returncode == 0, admitted.stderr
    blocked = kubectl_create(cluster, namespace, manifest('blocked', 'crash'))
    assert blocked.returncode != 0
    assert 'failed calling webhook "crashing.' in blocked.stderr


def test_graceful_exit_keeps_only_the_persistent_webhooks(
        cluster: Cluster, managed: str, operator: OperatorProcess) -> None:
    assert operator.stop() == 0
    validating = webhooks_by_name(cluster, 'validatingwebhookconfiguration', managed)
    mutating = webhooks_by_name(cluster, 'mutatingwebhookconfiguration', managed)
    assert set(validating) == {f'persistent.{managed}'}
    assert mutating == {}


def run_until_exit(path: str, namespace: str, log_path: pathlib.Path,
                   env: dict[str, str] | None = None) -> tuple[int, str]:
    """Run an operator that is expected to exit by itself; return its exit code and log."""
    process = OperatorProcess([path, '-n', namespace, '--verbose'], log_path=log_path, env=env)
    process.start()
    assert process.process is not None
    return process.process.wait(timeout=patient(DEFAULT_TIMEOUT)), process.log


def test_operator_refuses_to_start_without_a_server(namespace: str, tmp_path: pathlib.Path) -> None:
    returncode, log = run_until_exit(WITHOUT_SERVER, namespace, tmp_path / 'operator.log')
    assert returncode != 0
    assert ("Error: Admission handlers exist, but no webhook server is configured: "
            "set settings.admission.server in a @kopf.on.startup handler, "
            "e.g. to kopf.WebhookAutoServer().") in log
    assert "Traceback" not in log
    assert "Starting the watch-stream" not in log


@pytest.fixture
def limited_kubeconfig(cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> Iterator[pathlib.Path]:
    """A service account that may do everything the operator needs except managing the webhooks."""
    role = f'{namespace}-no-webhooks'
    cluster.kubectl('create', 'serviceaccount', 'operator', '-n', namespace)
    cluster.kubectl('apply', '-f', '-', input=json.dumps({
        'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'ClusterRole', 'metadata': {'name': role},
        'rules': [{'apiGroups': ['', 'apiextensions.k8s.io', 'events.k8s.io', 'coordination.k8s.io',
                                 'kopf.dev', GROUP], 'resources': ['*'], 'verbs': ['*']}]}))
    cluster.kubectl('create', 'clusterrolebinding', role, f'--clusterrole={role}',
                    f'--serviceaccount={namespace}:operator')
    token = cluster.kubectl('create', 'token', 'operator', '-n', namespace).stdout.strip()
    config = json.loads(cluster.kubectl('config', 'view', '--raw', '--minify', '-o', 'json').stdout)
    config['users'] = [{'name': 'operator', 'user': {'token': token}}]
    config['contexts'][0]['context']['user'] = 'operator'
    path = tmp_path / 'limited.kubeconfig'
    path.write_text(json.dumps(config))
    yield path
    cluster.kubectl('delete', 'clusterrolebinding', role, '--ignore-not-found')
    cluster.kubectl('delete', 'clusterrole', role, '--ignore-not-found')


def test_missing_rbac_stops_the_operator_with_one_clear_error(
        namespace: str, managed: str, limited_kubeconfig: pathlib.Path, tmp_path: pathlib.Path) -> None:
    returncode, log = run_until_exit(OPERATOR, namespace, tmp_path / 'operator.log',
                                     env={'ADMISSION_MANAGED': managed, 'KUBECONFIG': str(limited_kubeconfig)})
    assert returncode != 0
    assert ("Error: The operator is not allowed to manage "
            "validatingwebhookconfigurations.admissionregistration.k8s.io (needs the verbs 'create' and 'patch'): "
            "grant them in its ClusterRole, or unset settings.admission.managed.") in log
    assert "Traceback" not in log
