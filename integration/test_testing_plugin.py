"""
kopf-testing's pytest plugin, used as an operator author uses it, against the real API server.

Inputs: CRDs from YAML files and bodies, objects created and patched via the
``kopf_kube`` fixture, operators run by the ``kopf_operator`` fixture from handlers
defined in the test and from files. Outputs: the objects as stored, the
failures' messages (a timeout reports the last state seen), and the outcome
of a whole pytest run (via ``pytester``) whose operator logs an error.
"""
import pathlib
import textwrap
from collections.abc import Callable
from typing import Any

import pytest

import kopf
from integration.controlplane import Cluster
from integration.operating import EXAMPLES
from kopf_testing import InProcessOperator, Kube, crd_manifest

pytest_plugins = ['pytester']

GROUP = 'plugin.kopf.dev'
RESOURCE = f'plugintests.{GROUP}'


def widget(name: str, **spec: Any) -> dict[str, Any]:
    return {'apiVersion': f'{GROUP}/v1', 'kind': 'PluginTest', 'metadata': {'name': name}, 'spec': spec}


@pytest.fixture
def widgets(kopf_crd: Callable[..., list[str]]) -> None:
    assert kopf_crd(crd_manifest(GROUP, 'plugintests', 'PluginTest')) == [RESOURCE]


def test_crds_from_a_yaml_file_are_established(kopf_crd: Callable[..., list[str]], kopf_cluster: Cluster) -> None:
    names = kopf_crd(EXAMPLES / 'peering.yaml')
    assert sorted(names) == ['clusterkopfpeerings.kopf.dev', 'kopfpeerings.kopf.dev']
    conditions = kopf_cluster.kubectl('get', 'crd/kopfpeerings.kopf.dev', '-o',
                                      'jsonpath={.status.conditions[?(@.type=="Established")].status}').stdout
    assert conditions == 'True'


def test_a_file_without_crds_is_refused(kopf_crd: Callable[..., list[str]], tmp_path: pathlib.Path) -> None:
    path = tmp_path / 'cm.yaml'
    path.write_text('apiVersion: v1\nkind: ConfigMap\nmetadata: {name: not-a-crd, namespace: default}\n')
    with pytest.raises(ValueError, match='No CustomResourceDefinition'):
        kopf_crd(path)


@pytest.mark.usefixtures('widgets')
def test_kube_creates_patches_and_deletes_in_the_tests_namespace(kopf_kube: Kube, kopf_namespace: str) -> None:
    created = kopf_kube.create(widget('one', size=1))
    assert created['metadata']['namespace'] == kopf_namespace
    patched = kopf_kube.patch(RESOURCE, 'one', {'spec': {'size': 2}})
    assert patched['spec'] == {'size': 2}
    patched = kopf_kube.patch(RESOURCE, 'one', [{'op': 'test', 'path': '/spec/size', 'value': 2},
                                                {'op': 'replace', 'path': '/spec/size', 'value': 3}], type='json')
    assert patched['spec'] == {'size': 3}
    status = kopf_kube.patch(RESOURCE, 'one', {'status': {'ok': True}}, subresource='status')
    assert status['status'] == {'ok': True}
    kopf_kube.delete(RESOURCE, 'one', wait=True)
    assert kopf_kube.find(RESOURCE, 'one') is None


@pytest.mark.usefixtures('widgets')
def test_a_wait_that_times_out_reports_the_last_state_seen(kopf_kube: Kube, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv('KOPF_TESTING_PATIENCE', raising=False)  # the timeout as given, for the message
    kopf_kube.create(widget('stuck', size=7))
    def has_status(obj: dict[str, Any]) -> bool:
        """the status is set"""
        return 'status' in obj
    with pytest.raises(AssertionError) as info:
        kopf_kube.wait_for(RESOURCE, 'stuck', has_status, timeout=0.5)
    assert "did not satisfy the status is set in 0.5s" in str(info.value)
    assert '"size": 7' in str(info.value)


@pytest.mark.usefixtures('widgets')
def test_handlers_defined_in_the_test_run_in_its_namespace(
        kopf_kube: Kube, kopf_operator: Callable[..., InProcessOperator]) -> None:
    @kopf.on.create(GROUP, 'v1', 'plugintests', id='double')
    def double(spec: kopf.Spec, **_: Any) -> dict[str, Any]:
        return {'double': spec['size'] * 2}

    running = kopf_operator()
    kopf_kube.create(widget('w1', size=21))
    obj = kopf_kube.wait_for(RESOURCE, 'w1', lambda obj: 'double' in obj.get('status', {}), timeout=60)
    assert obj['status']['double'] == {'double': 42}
    running.wait_for(r"Handler 'double' succeeded\.")


def test_operator_files_run_in_the_tests_namespace(
        kopf_kube: Kube, kopf_operator: Callable[..., InProcessOperator]) -> None:
    kopf_kube.apply_crd(EXAMPLES / 'crd.yaml')
    kopf_operator(EXAMPLES / '01-minimal' / 'example.py')
    kopf_kube.create(EXAMPLES / 'obj.yaml')
    kopf_kube.wait_for('kopfexamples.kopf.dev', 'kopf-example-1',
                       lambda obj: obj.get('status', {}).get('create_fn', {}).get('message') == 'hello world',
                       timeout=60)


_FAILING_OPERATOR_TEST = textwrap.dedent('''
    import kopf

    def test_it(kopf_crd, kopf_kube, kopf_operator):
        kopf_crd({'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
                  'metadata': {'name': 'plugintests.plugin.kopf.dev'},
                  'spec': {'group': 'plugin.kopf.dev', 'scope': 'Namespaced',
                           'names': {'plural': 'plugintests', 'singular': 'plugintest', 'kind': 'PluginTest'},
                           'versions': [{'name': 'v1', 'served': True, 'storage': True, 'subresources': {'status': {}},
                                         'schema': {'openAPIV3Schema': {'type': 'object',
                                                    'x-kubernetes-preserve-unknown-fields': True}}}]}})

        @kopf.on.create('plugin.kopf.dev', 'v1', 'plugintests', id='broken')
        def broken(**_):
            raise kopf.PermanentError('this handler is broken')

        running = kopf_operator(expected_errors=EXPECTED)
        kopf_kube.create({'apiVersion': 'plugin.kopf.dev/v1', 'kind': 'PluginTest', 'metadata': {'name': 'w'}})
        running.wait_for(r"Handler 'broken' failed permanently", timeout=60)
''')


@pytest.mark.parametrize('expected, outcome', [
    ([], {'passed': 1, 'errors': 1}),
    (['this handler is broken'], {'passed': 1}),
])
def test_an_operators_unexpected_error_fails_the_test(
        pytester: pytest.Pytester, kopf_cluster: Cluster, expected: list[str], outcome: dict[str, int]) -> None:
    pytester.makepyfile(_FAILING_OPERATOR_TEST.replace('EXPECTED', repr(expected)))
    result = pytester.runpytest_subprocess('--kopf-cluster=existing', '-p', 'no:randomly')
    result.assert_outcomes(**outcome)
    if not expected:
        result.stdout.fnmatch_lines(['*The operator logged unexpected errors*', "*this handler is broken*"])
