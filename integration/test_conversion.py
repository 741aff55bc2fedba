"""
Conversion webhooks end to end: the real kube-apiserver converts objects through the operator.

Inputs: two CRDs of this module with the versions v1 and v2 (one stored in
v1, the other in v2), and the conversion functions of
``operators_src/conversion_functions.py``, served by a ``kopf.WebhookServer``
on 127.0.0.1 with a generated certificate; the CRDs' conversion is managed
under a name of the test's namespace. Outputs: the objects as ``kubectl``
reads them in each version, kubectl's error for a failing conversion, the
operator's answer to a malformed review, and the CRDs' ``spec.conversion``
while the operator runs and after its graceful exit. Nothing is mocked.
"""
import base64
import json
import pathlib
import ssl
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from integration import kubeobjects
from integration.controlplane import Cluster
from integration.operating import OperatorProcess

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'conversion_functions.py')
GROUP = 'conversion.kopf.dev'
KINDS = {'v1': 'StoredInV1', 'v2': 'StoredInV2'}  # by the storage version
STORED_IN_V1 = f'storedinv1s.{GROUP}'
STORED_IN_V2 = f'storedinv2s.{GROUP}'

Object = dict[str, Any]


def two_version_crd(kind: str, storage: str) -> Object:
    schema = {'openAPIV3Schema': {'type': 'object', 'properties': {
        'spec': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True}}}}
    plural = f'{kind.lower()}s'
    return {
        'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
        'metadata': {'name': f'{plural}.{GROUP}'},
        'spec': {'group': GROUP, 'scope': 'Namespaced',
                 'names': {'plural': plural, 'singular': kind.lower(), 'kind': kind},
                 'versions': [{'name': version, 'served': True, 'storage': version == storage, 'schema': schema}
                              for version in ['v1', 'v2']]},
    }


@pytest.fixture(scope='module', autouse=True)
def crds(cluster: Cluster) -> Iterator[None]:
    kubeobjects.apply_crds(cluster, *[two_version_crd(kind, storage) for storage, kind in KINDS.items()])
    yield
    # Whatever a test left behind (e.g. a killed operator's webhook): the CRDs and their objects go.
    cluster.kubectl('delete', 'crd', STORED_IN_V1, STORED_IN_V2, '--ignore-not-found', '--wait=false')


MANAGED = 'conversion-tests.kopf.dev'


@pytest.fixture(scope='module')
def operator(crds: None, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OperatorProcess]:
    """
    One operator for the module (it watches nothing: conversions are cluster-wide, not per namespace).

    The last test stops it to see the CRDs restored; the others only convert.
    """
    log_path = tmp_path_factory.mktemp('conversion') / 'operator.log'
    process = OperatorProcess([OPERATOR, '--all-namespaces', '--standalone', '--verbose'], log_path=log_path,
                              env={'CONVERSION_MANAGED': MANAGED})
    process.start()
    process.wait_for(r"The conversion of the CRD '[^']+' is pointed at", timeout=60, count=2)
    yield process
    process.stop()


def manifest(kind: str, version: str, name: str, spec: Object) -> Object:
    return {'apiVersion': f'{GROUP}/{version}', 'kind': kind, 'metadata': {'name': name}, 'spec': spec}


def get_in(cluster: Cluster, namespace: str, crd: str, version: str, name: str) -> Any:
    """``kubectl get plural.version.group``: the object in that version, as the apiserver gives it."""
    plural, group = crd.split('.', 1)
    return cluster.kubectl('get', '-n', namespace, f'{plural}.{version}.{group}', name, '-o', 'json', check=False)


def read_converted(cluster: Cluster, namespace: str, crd: str, version: str, name: str, key: str) -> Object:
    """
    The object read in the version once it has the field ``key`` of that version (i.e. converted by us).

    The apiserver takes the CRD's new conversion into use asynchronously, within a second or so:
    until then, it only rewrites the apiVersion.
    """
    def converted() -> Any:
        """the apiserver converts the object through the operator"""
        result = get_in(cluster, namespace, crd, version, name)
        return json.loads(result.stdout) if result.returncode == 0 and key in result.stdout else None
    return kubeobjects.poll(converted, timeout=60, interval=0.5)


def get_crd(cluster: Cluster, name: str) -> Object:
    return json.loads(cluster.kubectl('get', 'crd', name, '-o', 'json').stdout)  # type: ignore[no-any-return]


def test_stored_in_v1_and_read_as_v2(cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    cluster.kubectl('create', '-n', namespace, '-f', '-',
                    input=json.dumps(manifest('StoredInV1', 'v1', 'one', {'item': 'apple'})))
    obj = read_converted(cluster, namespace, STORED_IN_V1, 'v2', 'one', '"items"')
    assert obj['apiVersion'] == f'{GROUP}/v2'
    assert obj['spec'] == {'items': ['apple']}
    assert "converting to v2: 'apple'" in operator.log


def test_stored_in_v2_and_read_as_v1(cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    cluster.kubectl('create', '-n', namespace, '-f', '-',
                    input=json.dumps(manifest('StoredInV2', 'v2', 'two', {'items': ['pear', 'plum']})))
    obj = read_converted(cluster, namespace, STORED_IN_V2, 'v1', 'two', '"item"')
    assert obj['apiVersion'] == f'{GROUP}/v1'
    assert obj['spec'] == {'item': 'pear'}
    stored = json.loads(get_in(cluster, namespace, STORED_IN_V2, 'v2', 'two').stdout)
    assert stored['spec'] == {'items': ['pear', 'plum']}  # the storage version itself is as written


def test_written_in_v2_is_stored_converted_to_v1(cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    body = manifest('StoredInV1', 'v2', 'written', {'items': ['fig']})

    def created() -> bool:
        """the object written in v2 is created through the operator's conversion to v1"""
        result = cluster.kubectl('create', '-n', namespace, '-f', '-', input=json.dumps(body), check=False)
        if result.returncode != 0:
            return False
        spec = json.loads(get_in(cluster, namespace, STORED_IN_V1, 'v1', 'written').stdout)['spec']
        if spec != {'item': 'fig'}:  # converted by the apiserver alone (apiVersion only): retry
            cluster.kubectl('delete', '-n', namespace, STORED_IN_V1, 'written', '--wait=true')
            return False
        return True
    kubeobjects.poll(created, timeout=60, interval=0.5)
    assert "converting to v1: ['fig']" in operator.log


def test_failing_conversion_is_reported_by_kubectl_with_our_message(
        cluster: Cluster, namespace: str, operator: OperatorProcess) -> None:
    cluster.kubectl('create', '-n', namespace, '-f', '-',
                    input=json.dumps(manifest('StoredInV1', 'v1', 'bomb', {'item': 'explode'})))

    def refused() -> Any:
        """kubectl reports the conversion's failure"""
        result = get_in(cluster, namespace, STORED_IN_V1, 'v2', 'bomb')
        return result.stderr if result.returncode != 0 and 'conversion webhook' in result.stderr else None
    stderr = kubeobjects.poll(refused, timeout=60, interval=0.5)
    assert f"conversion webhook for {GROUP}/v1, Kind=StoredInV1 failed: " in stderr
    assert "bomb cannot be converted to v2: the item 'explode' has no v2 form." in stderr
    assert "Conversion 'storedinv1s-v1-to-v2' failed permanently: bomb cannot be converted" in operator.log
    # Deleted in its stored version (no conversion): the namespace's deletion would list it in v2.
    cluster.kubectl('delete', '-n', namespace, f'storedinv1s.v1.{GROUP}', 'bomb', '--wait=false')


def test_malformed_review_is_answered_400_with_one_clear_message(
        cluster: Cluster, operator: OperatorProcess) -> None:
    client_config = get_crd(cluster, STORED_IN_V1)['spec']['conversion']['webhook']['clientConfig']
    context = ssl.create_default_context(cadata=base64.b64decode(client_config['caBundle']).decode('ascii'))
    data = json.dumps({'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'ConversionReview',
                       'request': {'uid': 'u1', 'objects': []}}).encode()
    request = urllib.request.Request(client_config['url'], data=data, headers={'Content-Type': 'application/json'})
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(request, context=context, timeout=30)
    assert err.value.code == 400
    assert err.value.read().decode() == ("The conversion review is malformed: The conversion review's "
                                         "desiredAPIVersion must be 'group/version', not None.")


def test_managed_crds_point_at_the_server_and_are_restored_at_exit(
        cluster: Cluster, operator: OperatorProcess) -> None:
    # The last test of the module: it stops the module's operator.
    for name in [STORED_IN_V1, STORED_IN_V2]:
        crd = get_crd(cluster, name)
        conversion = crd['spec']['conversion']
        assert conversion['strategy'] == 'Webhook'
        assert conversion['webhook']['conversionReviewVersions'] == ['v1']
        url = conversion['webhook']['clientConfig']['url']
        assert url.startswith('https://127.0.0.1:') and url.endswith('/conversion')
        assert base64.b64decode(conversion['webhook']['clientConfig']['caBundle']).startswith(b'-----BEGIN')
        assert json.loads(crd['metadata']['annotations'][f'{MANAGED}/original-conversion']) == {'strategy': 'None'}

    assert operator.stop() == 0
    for name in [STORED_IN_V1, STORED_IN_V2]:
        crd = get_crd(cluster, name)
        assert crd['spec']['conversion'] == {'strategy': 'None'}
        assert f'{MANAGED}/original-conversion' not in (crd['metadata'].get('annotations') or {})
