"""Pinning the operator and the control plane to separate CPUs: the options, the command prefix, the header."""
import os
import shutil
import subprocess

import pytest

from benchmarks import pinning, sides

needs_taskset = pytest.mark.skipif(shutil.which('taskset') is None, reason='taskset (util-linux) is not installed')


def test_the_pinning_is_parsed_as_operator_and_control_plane_cpus() -> None:
    assert pinning.parse('0:1', available=[0, 1]) == pinning.Pinning(operator='0', control_plane='1')
    assert pinning.parse('0,2-3:1', available=[0, 1, 2, 3]) == pinning.Pinning(operator='0,2-3', control_plane='1')
    assert pinning.expand('0,2-3') == {0, 2, 3}


@pytest.mark.parametrize('text, message', [
    pytest.param('0', 'expected OPERATOR:CONTROL_PLANE', id='one-list'),
    pytest.param('a:1', 'expected OPERATOR:CONTROL_PLANE', id='not-cpus'),
    pytest.param('0:2', r'the control plane CPUs \[2\] are not available', id='absent-cpu'),
    pytest.param('0-1:1', 'share CPUs', id='overlapping'),
])
def test_a_wrong_pinning_is_refused(text: str, message: str) -> None:
    with pytest.raises(pinning.PinningError, match=message):
        pinning.parse(text, available=[0, 1])


@needs_taskset
def test_a_pinned_side_runs_under_taskset() -> None:
    taskset = shutil.which('taskset')
    go = sides.Side('go', ('/bin/gopeer',), version='', is_framework=False, cpus='0')
    assert go.command('ns') == [taskset, '-c', '0', '/bin/gopeer', '--namespace', 'ns']
    ours = sides.Side('ours', ('/venv/bin/kopf', 'run'), version='', cpus='0')
    assert ours.command('ns') == [taskset, '-c', '0', '/venv/bin/kopf', 'run', str(sides.OPERATOR_FILE),
                                  '--standalone', '-n', 'ns']


def test_an_unpinned_side_runs_as_it_is() -> None:
    assert pinning.prefix(None) == []
    assert sides.Side('bare', ('python', '-m', 'benchmarks.bare'), version='', is_framework=False).command('ns') \
        == ['python', '-m', 'benchmarks.bare', '--namespace', 'ns']


@needs_taskset
def test_a_running_process_is_pinned_with_all_its_threads() -> None:
    cpu = min(os.sched_getaffinity(0))
    process = subprocess.Popen(['sleep', '30'])
    try:
        assert pinning.pin_processes({'sleeper': process.pid}, str(cpu)) == {'sleeper': str(cpu)}
    finally:
        process.kill()
        process.wait()


def test_the_header_says_where_everything_ran() -> None:
    assert pinning.describe({}) == \
        'Pinning: none (the operator, the control plane and the harness share all CPUs).'
    pinned = {'pinning': {'operator': '0', 'control_plane': '1',
                          'control_plane_allowed': {'etcd': '1', 'kube-apiserver': '1'}}}
    assert pinning.describe(pinned) == ('Pinning (taskset): the operator under test on CPU 0, the control plane on '
                                        'CPU 1 (allowed as read back: etcd 1, kube-apiserver 1); the harness unpinned.')
