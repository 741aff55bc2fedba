"""The plugin with --kopf-cluster=memory: the same fixtures without a cluster, and clear refusals of the rest."""
import textwrap

import pytest

pytest_plugins = ['pytester']

CRD = textwrap.dedent('''
    CRD = {'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
           'metadata': {'name': 'widgets.mem.kopf.dev'},
           'spec': {'group': 'mem.kopf.dev', 'scope': 'Namespaced',
                    'names': {'plural': 'widgets', 'singular': 'widget', 'kind': 'Widget'},
                    'versions': [{'name': 'v1', 'served': True, 'storage': True, 'subresources': {'status': {}},
                                  'schema': {'openAPIV3Schema': {'type': 'object',
                                             'x-kubernetes-preserve-unknown-fields': True}}}]}}
''')


def test_an_operator_with_handlers_of_the_test_runs_on_the_memory_api(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(CRD + textwrap.dedent('''
        import kopf

        def test_it(kopf_crd, kopf_kube, kopf_operator, kopf_namespace):
            assert kopf_crd(CRD) == ['widgets.mem.kopf.dev']

            @kopf.on.create('mem.kopf.dev', 'v1', 'widgets', id='mark')
            def mark(patch, **_):
                patch.status['marked'] = True

            kopf_operator()
            created = kopf_kube.create({'apiVersion': 'mem.kopf.dev/v1', 'kind': 'Widget', 'metadata': {'name': 'w'}})
            assert created['metadata']['namespace'] == kopf_namespace
            kopf_kube.wait_for('widgets', 'w', lambda obj: obj.get('status', {}).get('marked'), timeout=10)
    '''))
    pytester.runpytest_subprocess('--kopf-cluster=memory', '-p', 'no:randomly').assert_outcomes(passed=1)


@pytest.mark.parametrize('fixture', ['kopf_cluster', 'kopf_operator_process'])
def test_fixtures_that_need_a_real_cluster_fail_clearly(pytester: pytest.Pytester, fixture: str) -> None:
    pytester.makepyfile(f'def test_it({fixture}):\n    pass\n')
    result = pytester.runpytest_subprocess('--kopf-cluster=memory', '-p', 'no:randomly')
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(['*This test needs a real cluster*--kopf-cluster=local, existing or k3d*'])


def test_each_test_gets_a_fresh_memory_api(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(CRD + textwrap.dedent('''
        import pytest

        @pytest.mark.parametrize('attempt', [1, 2])
        def test_it(kopf_crd, kopf_kube, attempt):
            kopf_crd(CRD)
            assert kopf_kube.list('widgets') == []
            kopf_kube.create({'apiVersion': 'mem.kopf.dev/v1', 'kind': 'Widget', 'metadata': {'name': 'w'}})
    '''))
    pytester.runpytest_subprocess('--kopf-cluster=memory', '-p', 'no:randomly').assert_outcomes(passed=2)
