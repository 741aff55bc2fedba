"""
The smoke run: every side through every scenario at tiny sizes, so that the harness never rots.

It asserts only that the sides completed and produced figures, not how fast
they are: the figures of a tiny run on a shared machine mean nothing.
It needs the local control plane's binaries (built on first use) and
network access to PyPI for upstream Kopf's environment (built once, cached).
The Go peer runs too when its binary is cached or Go is there to build it: with the
control plane built, Go's build cache holds most of its packages, and the build takes
tens of seconds, once (then it is cached like the control plane's binaries).
"""
import json
import pathlib
import shutil
import subprocess
import sys
from typing import Any

import pytest

from benchmarks import gopeer_build

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
GO_SIDE = ('go',) if gopeer_build.find_binary() is not None or shutil.which('go') else ()
SIDES = ('ours', 'upstream', *GO_SIDE)
SCENARIOS = {
    'burst': ('wall_s', 'cpu_per_object_ms', 'server_cpu_per_object_ms', 'requests_per_object', 'peak_rss_mib',
              'create_latency_p50_ms', 'create_latency_p99_ms',
              'finalizer_latency_p50_ms', 'finalizer_latency_p99_ms'),
    'lifecycle': ('requests_total',),
    'restart': ('wall_s', 'cpu_s', 'peak_rss_mib', 'initial_server_cpu_s'),
    'idle': ('cpu_percent',),
    'burst-defaults': ('wall_s', 'cpu_per_object_ms', 'events_per_object'),
    'burst-large': ('wall_s', 'create_action_s', 'cpu_per_object_ms', 'create_latency_p99_ms'),
    'scale': ('peak_rss_mib', 'cpu_s', 'initial_wall_s'),
    'burst-uvloop': ('wall_s', 'cpu_per_object_ms', 'peak_rss_mib', 'create_latency_p99_ms'),
    'burst-defaults-uvloop': ('wall_s', 'cpu_per_object_ms', 'peak_rss_mib'),
}
# The Go peer has neither a default posting of its own nor a Python event loop: the rest only.
GO_SCENARIOS = ('burst', 'lifecycle', 'restart', 'idle', 'burst-large', 'scale')
PAIRS = [pytest.param(scenario, side, id=f'{scenario}-{side}') for side in SIDES for scenario in SCENARIOS
         if side != 'go' or scenario in GO_SCENARIOS]


@pytest.fixture(scope='module')
def smoke_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], str]:
    out = tmp_path_factory.mktemp('smoke') / 'smoke'
    if GO_SIDE:  # before the run and outside its time limit: a build failure says so here, in its own words
        gopeer_build.ensure_binary()
    subprocess.run([sys.executable, '-m', 'benchmarks', 'smoke', '--sides', ','.join(SIDES), '--out', str(out)],
                   cwd=REPO_ROOT, check=True, timeout=900)
    return json.loads(out.with_suffix('.json').read_text()), out.with_suffix('.md').read_text()


def _records(results: dict[str, Any], scenario: str, side: str) -> list[dict[str, Any]]:
    return [run for run in results['runs'] if (run['scenario'], run['side']) == (scenario, side)]


@pytest.mark.parametrize('scenario, side', PAIRS)
def test_every_side_completes_every_scenario(smoke_run: tuple[dict[str, Any], str], scenario: str, side: str) -> None:
    results, _ = smoke_run
    records = _records(results, scenario, side)
    assert records
    failed = [f"{run['error']}\n{run.get('log_tail', '')}" for run in records if not run['ok']]
    assert not failed, '\n\n'.join(failed)


@pytest.mark.parametrize('scenario, side', PAIRS)
def test_every_completed_scenario_has_its_figures(
        smoke_run: tuple[dict[str, Any], str], scenario: str, side: str) -> None:
    results, _ = smoke_run
    for run in _records(results, scenario, side):
        figures = run.get('figures', {})
        missing = [name for name in SCENARIOS[scenario] if not isinstance(figures.get(name), (int, float))]
        assert not missing, f'{scenario}/{side} lacks {missing}: {figures}'


def test_the_table_compares_the_sides(smoke_run: tuple[dict[str, Any], str]) -> None:
    _, markdown = smoke_run
    assert '| ours | upstream | ours/upstream |' in markdown
    assert '## Targets' in markdown


@pytest.mark.skipif(not GO_SIDE, reason='no Go to build the Go peer with, and no binary of it cached')
def test_the_table_compares_ours_with_the_go_peer(smoke_run: tuple[dict[str, Any], str]) -> None:
    _, markdown = smoke_run
    assert '## Against the Go peer (controller-runtime)' in markdown
    assert '| burst | status | CPU per object (ms) |' in markdown


def test_the_pictures_are_drawn_and_linked(smoke_run: tuple[dict[str, Any], str]) -> None:
    _, markdown = smoke_run
    assert '![burst: latency distribution, status](smoke-burst-status.png)' in markdown
