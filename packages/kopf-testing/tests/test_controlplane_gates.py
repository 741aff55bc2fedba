"""
Feature gates of the local control plane: their parsing, the servers' flags, and the plugin's option.

No server runs here; that the API server honours the gates is shown by
``integration/test_controlplane_gates.py``.
"""
import json
import pathlib
from typing import Any

import pytest

from kopf_testing.controlplane import (
    ControlPlane,
    FeatureGatesError,
    Ports,
    format_feature_gates,
    parse_feature_gates,
)
from kopf_testing.controlplane._commands import Layout, make_apiserver_argv, make_controller_manager_argv

pytest_plugins = ['pytester']
PORTS = Ports(etcd_client=2379, etcd_peer=2380, apiserver=6443, controller_manager=10257)


@pytest.mark.parametrize('text, expected', [
    ('', {}),
    ('ShardedListAndWatch=true', {'ShardedListAndWatch': True}),
    ('ShardedListAndWatch=TRUE, WatchList=false', {'ShardedListAndWatch': True, 'WatchList': False}),
    ('A=true,,', {'A': True}),
])
def test_gates_are_parsed_as_the_servers_flag_takes_them(text: str, expected: dict[str, bool]) -> None:
    assert parse_feature_gates(text) == expected


@pytest.mark.parametrize('text, message', [
    ('ShardedListAndWatch', 'Name=true or Name=false'),
    ('ShardedListAndWatch=on', "'ShardedListAndWatch=on' is not"),
    ('Sharded-List=true', "'Sharded-List=true' is not"),
    ('=true', "'=true' is not"),
    ('A=true,A=false', 'given twice'),
])
def test_malformed_gates_are_refused_with_what_is_expected(text: str, message: str) -> None:
    with pytest.raises(FeatureGatesError, match=message):
        parse_feature_gates(text)


def test_gates_are_formatted_in_a_stable_order() -> None:
    assert format_feature_gates({'WatchList': False, 'ShardedListAndWatch': True}) == \
        'ShardedListAndWatch=true,WatchList=false'


@pytest.mark.parametrize('gates, message', [
    ({'ShardedListAndWatch': 'true'}, 'True or False'),
    ({'Sharded List': True}, 'CamelCase'),
])
def test_control_planes_refuse_gates_that_are_not_names_and_bools(gates: Any, message: str) -> None:
    with pytest.raises(FeatureGatesError, match=message):
        ControlPlane(feature_gates=gates)


@pytest.mark.parametrize('make_argv', [make_apiserver_argv, make_controller_manager_argv])
def test_both_servers_get_the_gates(make_argv: Any, tmp_path: pathlib.Path) -> None:
    argv = make_argv(pathlib.Path('/bin'), Layout(tmp_path), PORTS, feature_gates={'ShardedListAndWatch': True})
    assert '--feature-gates=ShardedListAndWatch=true' in argv


@pytest.mark.parametrize('make_argv', [make_apiserver_argv, make_controller_manager_argv])
def test_without_gates_the_servers_keep_the_release_defaults(make_argv: Any, tmp_path: pathlib.Path) -> None:
    argv = make_argv(pathlib.Path('/bin'), Layout(tmp_path), PORTS)
    assert not [arg for arg in argv if arg.startswith('--feature-gates')]


def test_gates_are_kept_in_the_state_for_restarts_from_another_process(tmp_path: pathlib.Path) -> None:
    state = {'bin_dir': '/bin', 'ports': {'etcd_client': 1, 'etcd_peer': 2, 'apiserver': 3, 'controller_manager': 4},
             'pids': {}, 'admin_token': 'a', 'user_token': 'u', 'feature_gates': {'ShardedListAndWatch': True}}
    (tmp_path / 'state.json').write_text(json.dumps(state))
    assert ControlPlane.load(tmp_path).feature_gates == {'ShardedListAndWatch': True}


def test_the_option_refuses_malformed_gates_before_any_test(pytester: pytest.Pytester) -> None:
    pytester.makepyfile('def test_it():\n    pass\n')
    result = pytester.runpytest_subprocess('--kopf-cluster=local', '--kopf-feature-gates=ShardedListAndWatch')
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(['*--kopf-feature-gates: Feature gates are Name=true or Name=false*'])


@pytest.mark.parametrize('kind', ['existing', 'memory'])
def test_the_option_refuses_clusters_not_started_here(pytester: pytest.Pytester, kind: str) -> None:
    pytester.makepyfile('def test_it():\n    pass\n')
    result = pytester.runpytest_subprocess(f'--kopf-cluster={kind}', '--kopf-feature-gates=WatchList=false')
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f'*sets the gates of the local control plane, but the cluster is {kind}*'])


def test_gated_clusters_are_skipped_on_clusters_not_started_here(pytester: pytest.Pytester) -> None:
    pytester.makepyfile('''
        def test_it(kopf_gated_cluster):
            kopf_gated_cluster({'ShardedListAndWatch': True})
    ''')
    result = pytester.runpytest_subprocess('--kopf-cluster=memory', '-rs')
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(['*sets feature gates, which needs the local control plane*not memory*'])
