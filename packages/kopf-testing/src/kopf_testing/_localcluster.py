"""
The plugin's local control plane: its build's progress on pytest's terminal, a failed build as one clear failure.

While a fixture sets up, pytest captures stdout and stderr, so the progress lines
of a first build (minutes) would only appear after it, if at all: they go to
pytest's terminal instead, past the capturing, as the build goes.
"""
from __future__ import annotations

import contextlib
import sys
from typing import Any, Callable, Iterator

import pytest

from kopf_testing.controlplane import BuildError, Cluster, FeatureGates, report_progress_to, run_local_cluster


@contextlib.contextmanager
def started_local_cluster(
        config: pytest.Config, tmp_path_factory: pytest.TempPathFactory, *, feature_gates: FeatureGates,
        dir_name: str = 'controlplane',
) -> Iterator[Cluster]:
    """
    A local control plane, its build's progress on the terminal, and a failed build as one clear failure.

    The build's message (Go missing, or the build log's tail) says all there is to
    say: the traceback through the plugin and the builder would only bury it.
    """
    with contextlib.ExitStack() as stack:
        try:
            with report_progress_to(terminal_writer(config)):  # only while it starts: builds happen then
                cluster = stack.enter_context(run_local_cluster(tmp_path_factory.mktemp(dir_name),
                                                                feature_gates=feature_gates))
        except BuildError as e:
            failure = str(e)
        else:
            failure = ''
        if failure:  # outside of the handler: else pytest shows the message twice, as an exception's context
            pytest.fail(failure, pytrace=False)
        yield cluster


def terminal_writer(config: pytest.Config) -> Callable[[str], None]:
    """Write a line to pytest's terminal even while the test's output is captured (else it shows only later)."""
    # Both are pytest's own plugins, typed as mere objects by the plugin manager.
    capture: Any = config.pluginmanager.getplugin('capturemanager')
    reporter: Any = config.pluginmanager.getplugin('terminalreporter')

    def write(line: str) -> None:
        with capture.global_and_fixture_disabled() if capture is not None else contextlib.nullcontext():
            if reporter is not None:
                reporter.ensure_newline()
                reporter.write_line(line)
            else:  # -p no:terminal
                print(line, file=sys.stderr, flush=True)
    return write
