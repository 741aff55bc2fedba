"""The pictures: drawn from small synthetic results into valid PNGs, linked from the Markdown, redrawn by command."""
import json
import pathlib
import subprocess
import sys
from typing import Any

import matplotlib.image

from benchmarks import plots

REPO_ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
PNG_SIGNATURE = b'\x89PNG\r\n\x1a\n'


def burst_record(side: str, *, cpu: float, rss: float, scale_ms: float = 100.0, repeat: int = 0) -> dict[str, Any]:
    cdf = [round(scale_ms * (1 + share / 25), 1) for share in range(101)]
    return {'scenario': 'burst', 'variant': 'status', 'side': side, 'loop': 'asyncio', 'repeat': repeat, 'ok': True,
            'figures': {'cpu_per_object_ms': cpu, 'peak_rss_mib': rss, 'create_latency_p50_ms': cdf[50],
                        'create_latency_p99_ms': cdf[99], 'create_latency_cdf_ms': cdf}}


def rate_record(side: str, rate: float, p50: float, p99: float, *, lower_bound: bool = False) -> dict[str, Any]:
    return {'scenario': 'rates', 'variant': 'status', 'side': side, 'loop': 'asyncio', 'repeat': 0, 'ok': True,
            'rate': rate, 'figures': {'latency_p50_ms': p50, 'latency_p99_ms': p99, 'cpu_per_object_ms': 5.0,
                                      'latency_p99_lower_bound': lower_bound, 'creator_behind': False,
                                      'load_average_after': [1.0, 1.0, 1.0]}}


def results_of(*runs: dict[str, Any], rates: tuple[float, ...] = ()) -> dict[str, Any]:
    return {'options': {'variants': ['status'], 'objects': 300, 'rates': list(rates), 'rate_seconds': 10.0},
            'runs': list(runs)}


def synthetic() -> dict[str, Any]:
    return results_of(
        burst_record('ours', cpu=10, rss=80, scale_ms=120), burst_record('upstream', cpu=25, rss=140, scale_ms=90),
        burst_record('bare', cpu=4, rss=40, scale_ms=30), burst_record('go', cpu=2, rss=35, scale_ms=25),
        burst_record('go', cpu=2, rss=35, scale_ms=28, repeat=1),
        *(rate_record(side, rate, p50=base * rate, p99=base * rate * 3, lower_bound=side == 'upstream' and rate == 28)
          for side, base in (('ours', 8.0), ('upstream', 6.0), ('bare', 2.0), ('go', 1.5)) for rate in (10.0, 28.0)),
        rates=(10.0, 28.0))


def assert_valid_png(path: pathlib.Path) -> None:
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    height, width, _ = matplotlib.image.imread(path).shape  # decodes the whole picture
    assert (width, height) == (750, 450)
    assert path.stat().st_size < 200_000


def test_the_pictures_are_valid_pngs_of_each_burst_and_the_sweep(tmp_path: pathlib.Path) -> None:
    drawn = plots.draw(synthetic(), tmp_path / 'run')
    assert [path.name for path in drawn] == ['run-burst-status.png', 'run-rates-status.png']
    for path in drawn:
        assert_valid_png(path)


def test_the_markdown_shows_the_pictures_that_exist(tmp_path: pathlib.Path) -> None:
    results = synthetic()
    assert plots.links(results, tmp_path / 'run') == []
    plots.draw(results, tmp_path / 'run')
    assert plots.links(results, tmp_path / 'run') == [
        '', '## Pictures',
        '', '![burst: latency distribution, status](run-burst-status.png)',
        '', '![the rate sweep, status](run-rates-status.png)',
    ]


def test_results_without_latency_distributions_have_only_the_sweep(tmp_path: pathlib.Path) -> None:
    results = synthetic()
    for record in results['runs']:
        record['figures'].pop(plots.CDF_FIGURE, None)  # as written before the pictures existed
    assert [path.name for path in plots.draw(results, tmp_path / 'old')] == ['old-rates-status.png']


def test_the_plot_command_redraws_from_a_saved_run(tmp_path: pathlib.Path) -> None:
    results = synthetic()
    results.update(started='2026-01-01T00:00:00+00:00', duration_s=60.0, load_average={'start': [1, 1, 1],
                                                                                        'end': [1, 1, 1]},
                   machine={'cpus_logical': 2, 'cpu_model': 'test', 'memory_gib': 4, 'platform': 'linux',
                            'python': '3.12'},
                   versions={}, unavailable={}, baseline={})
    results['options'].update(scenario='rates', repeats=1, settings={'posting_loggers': False})
    path = tmp_path / 'saved.json'
    path.write_text(json.dumps(results))
    subprocess.run([sys.executable, '-m', 'benchmarks', 'plot', str(path)], cwd=REPO_ROOT, check=True,
                   capture_output=True, timeout=120)
    assert_valid_png(tmp_path / 'saved-rates-status.png')
    assert '![the rate sweep, status](saved-rates-status.png)' in (tmp_path / 'saved.md').read_text()
