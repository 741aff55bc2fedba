"""The event loops of the frameworks: which sessions run on which, how uvloop is hidden, how it is checked."""
import os
import pathlib
import subprocess
import sys

import pytest

from benchmarks import loops, runner, sides


def test_the_bursts_run_again_on_the_other_loops_before_the_rate_sweep() -> None:
    options = runner.Options(rates=(5.0,), large_objects=0, scale_objects=0, loops=('asyncio', 'uvloop'))
    assert runner._kinds(options) == [('churn', 'asyncio'), ('restart', 'asyncio'), ('defaults', 'asyncio'),
                                      ('churn', 'uvloop'), ('defaults', 'uvloop'), ('rate-5', 'asyncio')]


def test_only_the_frameworks_run_on_the_other_loops() -> None:
    options = runner.Options(sides=('ours', 'upstream', 'bare', 'ours-metrics'), loops=('asyncio', 'uvloop'))
    assert runner._loops_and_sides(options) == [
        ('asyncio', 'ours'), ('asyncio', 'upstream'), ('asyncio', 'bare'), ('asyncio', 'ours-metrics'),
        ('uvloop', 'ours'), ('uvloop', 'upstream'),
    ]


def test_the_records_of_other_loops_are_named_with_the_loop() -> None:
    assert loops.scenario_on('burst', 'asyncio', ('asyncio', 'uvloop')) == 'burst'
    assert loops.scenario_on('burst-defaults', 'uvloop', ('asyncio', 'uvloop')) == 'burst-defaults-uvloop'
    assert loops.scenario_on('burst', 'asyncio', ('uvloop', 'asyncio')) == 'burst-asyncio'


def test_uvloop_is_hidden_from_an_operator_on_asyncio() -> None:
    env = dict(os.environ, PYTHONPATH=str(sides.WITHOUT_UVLOOP))
    result = subprocess.run([sys.executable, '-c', 'import uvloop'], env=env, capture_output=True, text=True)
    assert result.returncode == 1
    assert 'ImportError: uvloop is hidden from this operator by the benchmarks' in result.stderr


@pytest.mark.parametrize('loop, logged', [
    pytest.param('uvloop', 'Event loop: asyncio\n', id='not-the-one'),
    pytest.param('asyncio', 'Event loop: asyncio\nEvent loop: uvloop\n', id='one-start-of-two'),
    pytest.param('asyncio', 'Handler succeeded.\n', id='not-reported'),
])
def test_an_operator_on_another_loop_fails_its_record(tmp_path: pathlib.Path, loop: str, logged: str) -> None:
    (tmp_path / 'operator.log').write_text(logged)
    side = sides.Side('ours', ('kopf', 'run'), version='', loop=loop)
    with pytest.raises(sides.WrongLoop, match=f'was to run on {loop}; its log reports'):
        sides.check_loop(side, tmp_path / 'operator.log')


def test_an_operator_on_its_loop_passes(tmp_path: pathlib.Path) -> None:
    (tmp_path / 'operator.log').write_text('[x] Event loop: uvloop\n[y] Event loop: uvloop\n')
    sides.check_loop(sides.Side('upstream', ('kopf', 'run'), version='', loop='uvloop'), tmp_path / 'operator.log')
    sides.check_loop(sides.Side('bare', ('python',), version='', is_framework=False), tmp_path / 'missing.log')


def test_the_bound_runs_on_asyncio_only() -> None:
    with pytest.raises(sides.SideUnavailable, match="runs on asyncio's own loop only"):
        sides.make_side('bare', 'uvloop')
    with pytest.raises(ValueError, match="Unknown event loop: 'tokio'"):
        sides.make_side('ours', 'tokio')
