"""
Which Lease the leader election uses: its name, its namespace, the checks of both.

Inputs: the settings, the served namespaces, ``$POD_NAMESPACE`` and the service
account's namespace file (a temporary file stands for the mounted one).
Outputs: the Lease's reference, or one clear :class:`LeaseError`.
"""
import pathlib

import pytest

from kopf._cogs.configs import configuration
from kopf._core.engines.coordination import leadership, leases


@pytest.fixture(autouse=True)
def outside_a_pod(monkeypatch: pytest.MonkeyPatch, tmp_path: pathlib.Path) -> pathlib.Path:
    monkeypatch.delenv('POD_NAMESPACE', raising=False)
    path = tmp_path / 'namespace'
    monkeypatch.setattr(leadership, 'SERVICE_ACCOUNT_NAMESPACE_PATH', str(path))
    return path


def resolve(settings: configuration.OperatorSettings, *served: str, clusterwide: bool = False) -> leases.LeaseRef:
    ref, _ = leadership.resolve_lease(settings, served=served, clusterwide=clusterwide)
    return ref


def test_the_default_name_derives_from_the_peering_name() -> None:
    settings = configuration.OperatorSettings()
    assert resolve(settings, 'ns1') == leases.LeaseRef(namespace='ns1', name='kopf-leader-default')
    settings.peering.name = 'My_Peering'
    assert resolve(settings, 'ns1').name == 'kopf-leader-my-peering'


def test_the_given_name_and_namespace_are_used() -> None:
    settings = configuration.OperatorSettings()
    settings.leader_election.lease_name = 'my-lease'
    settings.leader_election.lease_namespace = 'ops'
    assert resolve(settings, 'ns1') == leases.LeaseRef(namespace='ops', name='my-lease')


def test_the_pods_namespace_comes_first(monkeypatch: pytest.MonkeyPatch, outside_a_pod: pathlib.Path) -> None:
    outside_a_pod.write_text('mounted\n')
    assert resolve(configuration.OperatorSettings(), 'ns1').namespace == 'mounted'
    monkeypatch.setenv('POD_NAMESPACE', 'from-env')
    assert resolve(configuration.OperatorSettings(), 'ns1').namespace == 'from-env'


def test_the_first_namespace_served_by_name_is_used_out_of_a_pod() -> None:
    assert resolve(configuration.OperatorSettings(), 'app-*', '!x', 'ns2', 'ns3').namespace == 'ns2'


@pytest.mark.parametrize('served, clusterwide, scope', [
    pytest.param((), True, "serves the whole cluster", id='cluster-wide'),
    pytest.param(('app-*',), False, "serves no namespace by its name", id='patterns-only'),
])
def test_no_namespace_to_be_found_is_refused(served: tuple[str, ...], clusterwide: bool, scope: str) -> None:
    with pytest.raises(leases.LeaseError) as err:
        resolve(configuration.OperatorSettings(), *served, clusterwide=clusterwide)
    assert str(err.value) == (
        f"Leader election needs a namespace for its Lease: the operator is not in a pod ($POD_NAMESPACE is "
        f"unset, no service account is mounted) and {scope}. Set --leader-election-namespace=NAMESPACE "
        f"(or settings.leader_election.lease_namespace).")


@pytest.mark.parametrize('name', ['Bad_Name!', '', '-lead', 'a' * 254, 'UPPER'])
def test_names_that_kubernetes_refuses_are_refused(name: str) -> None:
    settings = configuration.OperatorSettings()
    settings.leader_election.lease_name = name
    with pytest.raises(leases.LeaseError, match=r"^The leader election's Lease name .* is not valid in Kubernetes"):
        resolve(settings, 'ns1')


def test_bad_timings_are_refused() -> None:
    settings = configuration.OperatorSettings()
    settings.leader_election.renew_deadline = 20
    with pytest.raises(leases.LeaseError, match=r"lease_duration \(15\) must be longer than renew_deadline \(20\)"):
        resolve(settings, 'ns1')


def test_the_defaults_are_client_gos() -> None:
    election = configuration.OperatorSettings().leader_election
    assert not election.enabled
    assert (election.lease_duration, election.renew_deadline, election.retry_period) == (15, 10, 2)
