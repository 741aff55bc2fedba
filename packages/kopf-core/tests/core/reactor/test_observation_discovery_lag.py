"""
A CRD established before discovery lists its resource: scanned for again until it does.

The CRD's last event is its ``Established`` condition; the API server's discovery
may list the resource a moment later (or skip its API group while the group
fails), and no further CRD event would come.
"""
import asyncio
import contextlib
from typing import Any, AsyncIterator, Collection, Dict, List, Optional

import pytest

import kopf
from kopf._cogs.structs import references
from kopf._core.intents import registries
from kopf._core.reactor import observation

EXAMPLES = references.Resource('kopf.dev', 'v1', 'kopfexamples', kind='KopfExample', singular='kopfexample',
                               namespaced=True, verbs=frozenset({'watch'}))
ESTABLISHED = {'conditions': [{'type': 'Established', 'status': 'True'}]}
CRD: Dict[str, Any] = {'metadata': {'name': 'kopfexamples.kopf.dev'},
                       'spec': {'group': 'kopf.dev', 'names': {'plural': 'kopfexamples', 'kind': 'KopfExample'},
                                'versions': [{'name': 'v1', 'served': True}]},
                       'status': ESTABLISHED}


class LaggingDiscovery:
    """Lists nothing for the first ``lag`` scans, then the resources."""

    def __init__(self, *resources: references.Resource, lag: int) -> None:
        self.resources = resources
        self.lag = lag
        self.scans = 0

    async def scan_resources(self, *, groups: Optional[Collection[str]] = None) -> Collection[references.Resource]:
        self.scans += 1
        return self.resources if self.scans > self.lag else ()


@pytest.fixture(autouse=True)
def no_delays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(observation, 'DISCOVERY_LAG_DELAYS', (0.0, 0.0, 0.0))


def registry_for(name: str) -> registries.OperatorRegistry:
    registry = registries.OperatorRegistry()
    kopf.on.event(name, registry=registry)(lambda **_: None)
    return registry


@contextlib.asynccontextmanager
async def catching_up(client: LaggingDiscovery, registry: registries.OperatorRegistry,
                      insights: observation.Insights) -> AsyncIterator[None]:
    """The discovery's catch-up running in the background while the block runs; cancelled after it."""
    task = asyncio.create_task(observation._catch_up_with_discovery(
        client=client, registry=registry, insights=insights))  # type: ignore[arg-type]
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def outwait(client: LaggingDiscovery, registry: registries.OperatorRegistry,
                  insights: observation.Insights, crd: Dict[str, Any]) -> None:
    """Let the catch-up run with this CRD seen, until it waits for CRD changes (nothing awaited anymore)."""
    insights.crds[crd['metadata']['name']] = crd
    insights.crds_changed.set()
    async with catching_up(client, registry, insights):
        for _ in range(1000):
            await asyncio.sleep(0)
            if not insights.crds_changed.is_set() and not any(
                    observation._awaited_in_discovery(c, registry=registry, insights=insights)
                    for c in insights.crds.values()):
                break
        await asyncio.sleep(0)


async def test_lagging_discovery_is_scanned_until_the_resource_is_served() -> None:
    client = LaggingDiscovery(EXAMPLES, lag=2)
    insights = observation.Insights()
    await outwait(client, registry_for('kopfexamples'), insights, CRD)
    assert insights.resources == {EXAMPLES}
    assert client.scans == 3


async def test_lagging_discovery_is_scanned_beyond_the_delays_at_the_last_one() -> None:
    client = LaggingDiscovery(EXAMPLES, lag=20)  # more scans than delays (3): the last delay repeats
    insights = observation.Insights()
    await outwait(client, registry_for('kopfexamples'), insights, CRD)
    assert insights.resources == {EXAMPLES}
    assert client.scans == 21


async def test_a_changed_crd_restarts_the_delays(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(observation, 'DISCOVERY_LAG_DELAYS', (0.0, 0.0, 3600.0))
    client = LaggingDiscovery(EXAMPLES, lag=100)
    insights = observation.Insights()
    async with catching_up(client, registry_for('kopfexamples'), insights):
        insights.crds[CRD['metadata']['name']] = CRD
        insights.crds_changed.set()
        for _ in range(50):
            await asyncio.sleep(0)
        assert client.scans == 2  # then waiting for an hour
        insights.crds_changed.set()
        for _ in range(50):
            await asyncio.sleep(0)
        assert client.scans == 4  # no hour waited: the first two delays again


async def test_a_deleted_crd_is_not_waited_for() -> None:
    client = LaggingDiscovery(EXAMPLES, lag=100)
    insights = observation.Insights()
    observation._remember_crd(insights, None, CRD)
    observation._remember_crd(insights, 'DELETED', CRD)
    assert insights.crds == {}
    await outwait(client, registry_for('kopfexamples'), insights, {**CRD, 'status': {}})
    assert client.scans == 0


@pytest.mark.parametrize('crd', [
    pytest.param({**CRD, 'status': {}}, id='not-established'),
    pytest.param({**CRD, 'status': {'conditions': [{'type': 'Established', 'status': 'False'}]}}, id='establishing'),
    pytest.param({**CRD, 'metadata': {**CRD['metadata'], 'deletionTimestamp': 'x'}}, id='being-deleted'),
    pytest.param({**CRD, 'spec': {**CRD['spec'], 'versions': [{'name': 'v1', 'served': False}]}}, id='not-served'),
])
async def test_crds_not_ready_to_be_listed_are_not_waited_for(crd: Dict[str, Any]) -> None:
    client = LaggingDiscovery(EXAMPLES, lag=0)
    await outwait(client, registry_for('kopfexamples'), observation.Insights(), crd)
    assert client.scans == 0


async def test_crds_of_no_handler_are_not_waited_for() -> None:
    client = LaggingDiscovery(EXAMPLES, lag=0)
    await outwait(client, registry_for('otherexamples'), observation.Insights(), CRD)
    assert client.scans == 0


async def test_resources_already_served_are_not_waited_for() -> None:
    client = LaggingDiscovery(EXAMPLES, lag=0)
    insights = observation.Insights()
    insights.update(resources={EXAMPLES})
    await outwait(client, registry_for('kopfexamples'), insights, CRD)
    assert client.scans == 0


@pytest.mark.parametrize('name', ['KopfExample', 'kopfexamples.kopf.dev', 'kopfexample'])
async def test_any_name_of_the_crd_counts(name: str) -> None:
    client = LaggingDiscovery(EXAMPLES, lag=1)
    crd: Dict[str, Any] = {**CRD, 'spec': {**CRD['spec'], 'names': {**CRD['spec']['names'], 'singular': 'kopfexample'}}}
    insights = observation.Insights()
    await outwait(client, registry_for(name), insights, crd)
    assert client.scans == 2
    scanned: List[references.Resource] = sorted(insights.resources, key=repr)
    assert scanned == [EXAMPLES]


async def test_a_crd_is_kept_without_its_schemas_and_still_waited_for() -> None:
    schema = {'openAPIV3Schema': {'type': 'object', 'properties': {'spec': {'type': 'object'}}}}
    crd: Dict[str, Any] = {**CRD, 'spec': {**CRD['spec'], 'versions': [{'name': 'v1', 'served': True,
                                                                         'schema': schema}]}}
    insights = observation.Insights()
    observation._remember_crd(insights, None, crd)
    kept = insights.crds['kopfexamples.kopf.dev']
    assert 'schema' not in kept['spec']['versions'][0]
    client = LaggingDiscovery(EXAMPLES, lag=1)
    await outwait(client, registry_for('kopfexamples'), insights, dict(kept))
    assert insights.resources == {EXAMPLES}
