"""The Go peer's side: its command line, its build's cache key and errors, its section of the report."""
import pathlib
import shutil

import pytest

from benchmarks import gopeer_build, sides
from benchmarks.peer_report import render_peer
from benchmarks.tests.test_plots import burst_record, results_of


def test_the_go_sides_command_line_is_its_binary_with_the_namespace() -> None:
    side = sides.Side('go', ('/cache/bin/gopeer',), version='controller-runtime v0.25.2', is_framework=False)
    assert side.command('ns-1') == ['/cache/bin/gopeer', '--namespace', 'ns-1']


def test_the_module_pins_controller_runtime_and_the_control_planes_release() -> None:
    assert gopeer_build.module_requirement('sigs.k8s.io/controller-runtime').startswith('v0.25.')
    assert gopeer_build.module_requirement('k8s.io/client-go') == 'v0.37.2'
    assert gopeer_build.module_requirement('example.com/absent') == 'unknown'


def copy_module(tmp_path: pathlib.Path) -> pathlib.Path:
    module = tmp_path / 'gopeer'
    shutil.copytree(gopeer_build.MODULE_DIR, module)
    return module


def test_the_cache_key_follows_the_sources(tmp_path: pathlib.Path) -> None:
    module = copy_module(tmp_path)
    assert gopeer_build.source_key(module) == gopeer_build.source_key(gopeer_build.MODULE_DIR)
    (module / 'main.go').write_text((module / 'main.go').read_text() + '\n// edited\n')
    assert gopeer_build.source_key(module) != gopeer_build.source_key(gopeer_build.MODULE_DIR)


def test_without_go_the_build_fails_in_one_clear_line(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    monkeypatch.setenv('PATH', str(tmp_path / 'nothing'))
    module = copy_module(tmp_path)
    with pytest.raises(gopeer_build.BuildError, match=r'^Go is not found on PATH; .*\(install Go 1\.26') as error:
        gopeer_build.ensure_binary(module)
    assert '\n' not in str(error.value)
    assert gopeer_build.find_binary(module) is None
    assert not (gopeer_build.cache_dir(module) / 'bin').exists()  # nothing half-built is left as if complete


def test_a_cached_binary_is_used_without_building(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    monkeypatch.setenv('PATH', str(tmp_path / 'nothing'))  # no Go: building would fail
    module = copy_module(tmp_path)
    binary = gopeer_build.cache_dir(module) / 'bin' / gopeer_build.BINARY
    binary.parent.mkdir(parents=True)
    binary.write_text('#!/bin/sh\n')
    binary.chmod(0o755)
    (binary.parent / gopeer_build.GO_VERSION_FILE).write_text('go1.26.8\n')
    assert gopeer_build.ensure_binary(module) == binary
    assert gopeer_build.built_with(binary) == 'go1.26.8'


def test_the_report_compares_ours_with_the_go_peer_as_ratios() -> None:
    results = results_of(burst_record('ours', cpu=10.0, rss=80.0), burst_record('upstream', cpu=25.0, rss=140.0),
                         burst_record('go', cpu=2.5, rss=40.0))
    lines = render_peer(results)
    assert '## Against the Go peer (controller-runtime)' in lines
    assert '| burst | status | CPU per object (ms) | 10.0 | 25.0 |  | 2.50 | 4.00 | 10.00 |' in lines
    assert '| burst | status | peak RSS (MiB) | 80.0 | 140 |  | 40.0 | 2.00 | 3.50 |' in lines


def test_without_the_go_peer_the_report_has_no_such_section() -> None:
    assert render_peer(results_of(burst_record('ours', cpu=10.0, rss=80.0))) == []
