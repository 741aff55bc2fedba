"""
A short chaos soak of three sharded replicas: faults, kills among the replicas, and nothing lost or run twice.

Inputs: the soak's operator (``integration/chaos/operator.py``) run as three
``kopf run --shards=auto`` replicas behind the chaos proxy, the fault schedule
of a fixed seed with kills of random replicas (each restarted at once, under its
identity), and the soak's workload of objects created, updated and deleted.
Outputs: the invariant checks of ``integration.chaos._invariants``: no lost
change, no handler re-run after its success (other than after a kill of the
replica that ran it, or a failed store). Longer soaks:
``python -m integration.chaos --replicas 3 --minutes 30 --objects 1000``.
"""
import pathlib

import pytest

from integration.chaos import _schedule
from integration.chaos._harness import SoakConfig, run_soak
from integration.controlplane import Cluster

# Kills among the replicas most of all; the wire's faults also strike the Leases' requests.
RATES = dict(_schedule.DEFAULT_RATES, **{_schedule.KILL_OPERATOR: 2.0, _schedule.DROP_WATCH: 2.0})


@pytest.mark.timeout(1200)
def test_sharded_replicas_lose_nothing_and_rerun_nothing_after_success(
        cluster: Cluster, tmp_path: pathlib.Path) -> None:
    if cluster.control_plane is None:
        pytest.fail("The soak restarts the API server and etcd: run it on the local control plane (--cluster=local).")
    config = SoakConfig(minutes=2, objects=24, seed=31, rates=RATES, workdir=tmp_path / 'soak', replicas=3)
    kills = [fault for fault in _schedule.make_schedule(config.seed, config.duration, config.rates)
             if fault.kind == _schedule.KILL_OPERATOR]
    assert len(kills) >= 2, "The schedule of this seed kills too few replicas."

    result = run_soak(config, cluster.control_plane)

    print(f"\n{result.report.line()}")
    problems = '\n'.join(result.report.problems())
    assert result.report.ok, f"{result.report.line()}\n{problems}\n(see the journals in {config.workdir})"
    assert result.report.handled == result.report.expected == 24 * (2 + 3 + 1)
    assert not result.report.lost and not result.report.reruns_after_success
    logs = [(config.workdir / f'operator-{index}.log').read_text() for index in range(3)]
    assert all('Serving the slots' in log for log in logs)  # all three took part
