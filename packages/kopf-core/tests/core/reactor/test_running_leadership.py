"""
The embedding API's leader election options: checked at the call, applied to the settings.

Inputs: ``kopf.spawn_tasks()``/``kopf.operator()`` options with a client driver
that must never be asked anything (a bad option is refused before any request).
"""
from typing import Any, Sequence

import pytest

import kopf
from kopf._core.reactor import options


class UnusedDriver:
    def create_client(self, **_: Any) -> Any:
        raise AssertionError("No client is needed to refuse a bad option.")

    def default_login_fns(self) -> Sequence[Any]:
        return []


def test_leader_election_of_a_wrong_type_is_refused() -> None:
    with pytest.raises(TypeError, match=r"^leader_election= must be True, False, a Lease name, or None; got int\.$"):
        options.OperatorOptions(leader_election=1)  # type: ignore[arg-type]


def test_a_namespace_with_leader_election_off_is_refused() -> None:
    with pytest.raises(ValueError, match=r"^leader_election_namespace= is given, but leader_election=False"):
        options.OperatorOptions(leader_election=False, leader_election_namespace='ops')


@pytest.mark.parametrize('kwargs, message', [
    (dict(leader_election='Bad_Name!'), r"^The leader election's Lease name 'Bad_Name!' is not valid"),
    (dict(leader_election=True, leader_election_namespace='Ops!'), r"^The leader election's namespace 'Ops!'"),
])
async def test_bad_leases_are_refused_before_anything_starts(kwargs: Any, message: str) -> None:
    with pytest.raises(kopf.LeaseError, match=message):
        await kopf.spawn_tasks(client=UnusedDriver(), namespaces=['ns1'], registry=kopf.OperatorRegistry(),
                               **kwargs)


async def test_the_options_go_into_the_settings() -> None:
    settings = kopf.OperatorSettings()
    tasks = await kopf.spawn_tasks(client=UnusedDriver(), namespaces=['ns1'], registry=kopf.OperatorRegistry(),
                                   settings=settings, leader_election='my-lease', leader_election_namespace='ops')
    for task in tasks:
        task.cancel()
    assert settings.leader_election.enabled
    assert settings.leader_election.lease_name == 'my-lease'
    assert settings.leader_election.lease_namespace == 'ops'
