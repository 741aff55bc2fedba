"""
A 2-minute chaos soak: the operator under all kinds of faults, and nothing lost or run twice.

Inputs: the soak's operator (``integration/chaos/operator.py``) behind the
fault-injecting proxy, 24 objects created, updated 3 times and deleted in
overlapping waves, a schedule of faults of every kind (seed 29) including a
kill -9 of the operator, restarts of the API server and of etcd.
Outputs: the invariant checks of ``integration.chaos._invariants`` pass; the
figures are printed (``-s`` shows them). The long soak is the same with other
sizes: ``python -m integration.chaos --minutes 30 --objects 1000``.
"""
import pathlib

import pytest

from integration.chaos import _schedule
from integration.chaos._harness import SoakConfig, run_soak
from integration.controlplane import Cluster

# Two minutes give few faults at the default rates: these make every kind happen at least once.
RATES = dict(_schedule.DEFAULT_RATES, **{
    _schedule.KILL_OPERATOR: 1.0, _schedule.RESTART_APISERVER: 0.5, _schedule.RESTART_ETCD: 0.5,
    _schedule.DROP_WATCH: 3.0, _schedule.STALL_WATCH: 2.0, _schedule.GONE_WATCH: 2.0,
})


@pytest.mark.timeout(1200)
def test_a_short_soak_loses_nothing_and_reruns_nothing_after_success(
        cluster: Cluster, tmp_path: pathlib.Path) -> None:
    if cluster.control_plane is None:
        pytest.fail("The soak restarts the API server and etcd: run it on the local control plane (--cluster=local).")
    config = SoakConfig(minutes=2, objects=24, seed=29, rates=RATES, workdir=tmp_path / 'soak')
    kinds = {fault.kind for fault in _schedule.make_schedule(config.seed, config.duration, config.rates)}
    assert kinds == set(_schedule.KINDS), "The schedule of this seed does not cover every kind of fault."

    result = run_soak(config, cluster.control_plane)

    print(f"\n{result.report.line()}")
    problems = '\n'.join(result.report.problems())
    assert result.report.ok, f"{result.report.line()}\n{problems}\n(see the journals in {config.workdir})"
    assert result.report.objects == 24
    assert result.report.handled == result.report.expected == 24 * (2 + 3 + 1)
    assert result.report.memory_warm is not None and result.report.memory_end is not None
