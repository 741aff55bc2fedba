"""
docs/architecture.md states the walk of one event as ``scripts/walk.py compare`` measures it now.

The figures are not copied by hand: the test command measures them (ours from this
checkout, upstream Kopf from its own environment) and fails if the page's table
differs, printing the measured table to paste. The walk counts calls, not time, so
its figures are the same on any machine and under any load.
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import re
import subprocess
import sys
from typing import Iterator

from integration import upstream
from integration.controlplane import Cluster, ControlPlane

REPO = pathlib.Path(__file__).resolve().parents[2]
PAGE = REPO / 'docs' / 'architecture.md'
TABLE = re.compile(r'<!-- walk-table: .*? -->\n(?P<table>.*?)\n<!-- /walk-table -->', re.DOTALL)


@contextlib.contextmanager
def walked_cluster(cluster: Cluster) -> Iterator[tuple[pathlib.Path, pathlib.Path]]:
    """
    A kubeconfig and a kubectl for the walk: a control plane of its own where the binaries are local.

    The walk's operator is cluster-wide: on a shared cluster, other tests' objects (e.g. in
    namespaces being deleted) would send it events during the walk.
    """
    if cluster.control_plane is None:  # a cluster given by the user: it is the walk's alone
        yield cluster.kubeconfig, cluster.kubectl_path
        return
    with ControlPlane(bin_dir=cluster.control_plane.bin_dir) as control_plane:
        yield control_plane.kubeconfig, control_plane.kubectl_path


def test_the_pages_walk_figures_are_the_measured_ones(cluster: Cluster) -> None:
    upstream_python = upstream.ensure_upstream().parent / 'python'
    with walked_cluster(cluster) as (kubeconfig, kubectl):
        env = {name: value for name, value in os.environ.items() if name != 'PYTHONPATH'}
        env['KUBECONFIG'] = str(kubeconfig)
        result = subprocess.run(
            [sys.executable, str(REPO / 'scripts' / 'walk.py'), 'compare', '--kubectl', str(kubectl),
             '--side', f'ours={sys.executable}', '--side', f'kopf-{upstream.UPSTREAM_VERSION}={upstream_python}'],
            capture_output=True, text=True, timeout=600, env=env, cwd=REPO)
    assert result.returncode == 0, f"The walk failed:\n{result.stdout}\n{result.stderr}"
    measured = result.stdout.strip()
    match = TABLE.search(PAGE.read_text())
    assert match is not None, f"{PAGE} has no table between <!-- walk-table: ... --> and <!-- /walk-table -->."
    assert match.group('table').strip() == measured, (
        f"The walk's table in {PAGE.name} is stale. The measured one (paste it there):\n{measured}")
