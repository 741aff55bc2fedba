"""The plugin's fixtures as ``pytest --fixtures`` lists them: all ``kopf_``-prefixed, all documented."""
import re

import pytest

pytest_plugins = ['pytester']

EXPECTED = {
    'kopf_cluster', 'kopf_cluster_kind', 'kopf_crd', 'kopf_feature_gates', 'kopf_gated_cluster', 'kopf_kube',
    'kopf_memory_api', 'kopf_namespace', 'kopf_operator', 'kopf_operator_process', 'kopf_registry', 'kopf_runner',
}
GENERIC = ['cluster', 'namespace', 'kube', 'crd', 'operator', 'operator_process']


def _plugin_fixtures(pytester: pytest.Pytester) -> dict[str, str]:
    """The plugin's fixtures by name, each with the first line of its docstring as ``--fixtures`` shows it."""
    result = pytester.runpytest_subprocess('--fixtures', '-p', 'no:randomly')
    lines = result.stdout.lines
    fixtures: dict[str, str] = {}
    for index, line in enumerate(lines):
        match = re.match(r'^(\w+)(?: \[[a-z ]+\])? -- .*kopf_testing[/\\]pytest_plugin\.py', line)
        if match:
            following = lines[index + 1] if index + 1 < len(lines) else ''
            fixtures[match[1]] = following.strip() if following.startswith('    ') else ''
    return fixtures


def test_every_fixture_is_prefixed_and_documented(pytester: pytest.Pytester) -> None:
    fixtures = _plugin_fixtures(pytester)
    assert set(fixtures) == EXPECTED
    undocumented = sorted(name for name, doc in fixtures.items() if not doc or doc == 'no docstring available')
    assert undocumented == []


def test_generic_names_are_left_to_the_users_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(''.join(f'def test_{name}({name}):\n    pass\n\n' for name in GENERIC))
    result = pytester.runpytest_subprocess('-p', 'no:randomly', '--kopf-cluster=memory')
    result.assert_outcomes(errors=len(GENERIC))
    result.stdout.fnmatch_lines([f"*fixture '{name}' not found*" for name in GENERIC])


def test_a_users_own_fixture_of_a_generic_name_is_not_shadowed(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('import pytest\n\n@pytest.fixture\ndef cluster():\n    return "mine"\n')
    pytester.makepyfile('def test_it(cluster, kopf_cluster_kind):\n    assert cluster == "mine"\n')
    pytester.runpytest_subprocess('-p', 'no:randomly', '--kopf-cluster=memory').assert_outcomes(passed=1)
