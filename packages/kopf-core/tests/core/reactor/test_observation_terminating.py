"""
A CRD being deleted: its resource is served until the CRD is gone, never restarted.

Kubernetes deletes a CRD's objects first and the CRD itself last; while it
terminates, discovery advertises fewer verbs, or may drop the resource early.
"""
import logging
from typing import Any, Collection, Dict, Optional

import pytest

import kopf
from kopf._cogs.structs import references
from kopf._core.intents import registries
from kopf._core.reactor import observation

FULL_VERBS = frozenset({'create', 'delete', 'get', 'list', 'patch', 'update', 'watch'})
DYING_VERBS = frozenset({'delete', 'deletecollection', 'get', 'list', 'watch'})
EXAMPLES = references.Resource('kopf.dev', 'v1', 'kopfexamples', namespaced=True, verbs=FULL_VERBS)
DYING_EXAMPLES = references.Resource('kopf.dev', 'v1', 'kopfexamples', namespaced=True, verbs=DYING_VERBS)
CRD: Dict[str, Any] = {'metadata': {'name': 'kopfexamples.kopf.dev'},
                       'spec': {'group': 'kopf.dev', 'names': {'plural': 'kopfexamples'}}}
TERMINATING_CRD: Dict[str, Any] = {**CRD, 'metadata': {**CRD['metadata'], 'deletionTimestamp': '2026-01-01T00:00:00Z'}}


class DiscoveryClient:
    def __init__(self, *resources: references.Resource) -> None:
        self.resources: Collection[references.Resource] = resources

    async def scan_resources(self, *, groups: Optional[Collection[str]] = None) -> Collection[references.Resource]:
        return self.resources


@pytest.fixture()
def registry() -> registries.OperatorRegistry:
    registry = registries.OperatorRegistry()
    kopf.on.event('kopfexamples', registry=registry)(lambda **_: None)
    return registry


async def scan(registry: registries.OperatorRegistry, insights: observation.Insights,
               *resources: references.Resource) -> None:
    await observation.scan_resources(client=DiscoveryClient(*resources),  # type: ignore[arg-type]
                                     registry=registry, insights=insights)


async def test_fewer_verbs_keep_the_same_resource_served(registry: registries.OperatorRegistry) -> None:
    insights = observation.Insights()
    await scan(registry, insights, EXAMPLES)
    insights.changed.clear()
    await scan(registry, insights, DYING_EXAMPLES)
    assert [r.verbs for r in insights.resources] == [FULL_VERBS]  # the same stream key: not restarted
    assert not insights.changed.is_set()


async def test_terminating_crd_keeps_its_resource_until_deleted(
        registry: registries.OperatorRegistry, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    insights = observation.Insights()
    await scan(registry, insights, EXAMPLES)
    assert observation._track_termination(insights, 'MODIFIED', TERMINATING_CRD)
    await scan(registry, insights)  # dropped from discovery early
    assert insights.resources == {EXAMPLES}
    assert observation._track_termination(insights, 'DELETED', TERMINATING_CRD)
    await scan(registry, insights)
    assert insights.resources == set()
    assert insights.terminating == {}
    messages = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert messages == ["The CRD 'kopfexamples.kopf.dev' is being deleted: its objects are served until they are gone.",
                        "The CRD 'kopfexamples.kopf.dev' is deleted: its resource is not served anymore."]


async def test_termination_is_noted_once(registry: registries.OperatorRegistry) -> None:
    insights = observation.Insights()
    await scan(registry, insights, EXAMPLES)
    assert observation._track_termination(insights, 'MODIFIED', TERMINATING_CRD)
    assert not observation._track_termination(insights, 'MODIFIED', TERMINATING_CRD)


async def test_live_crds_are_not_terminating(registry: registries.OperatorRegistry) -> None:
    insights = observation.Insights()
    await scan(registry, insights, EXAMPLES)
    assert not observation._track_termination(insights, 'MODIFIED', CRD)
    assert not observation._track_termination(insights, None, CRD)
    assert insights.terminating == {}


async def test_other_resources_are_dropped_as_usual(registry: registries.OperatorRegistry) -> None:
    insights = observation.Insights()
    await scan(registry, insights, EXAMPLES)
    await scan(registry, insights)
    assert insights.resources == set()


async def test_a_deleted_crd_is_not_served_while_discovery_still_lists_it(
        registry: registries.OperatorRegistry) -> None:
    insights = observation.Insights()
    await scan(registry, insights, EXAMPLES)
    assert observation._track_termination(insights, 'MODIFIED', TERMINATING_CRD)
    assert observation._track_termination(insights, 'DELETED', TERMINATING_CRD)
    await scan(registry, insights, DYING_EXAMPLES)  # discovery is updated a moment after the deletion
    assert insights.resources == set()


async def test_a_crd_created_again_is_served_again(registry: registries.OperatorRegistry) -> None:
    insights = observation.Insights()
    await scan(registry, insights, EXAMPLES)
    observation._track_termination(insights, 'DELETED', CRD)
    await scan(registry, insights, EXAMPLES)
    assert insights.resources == set()
    assert observation._track_termination(insights, 'ADDED', CRD)
    assert not observation._track_termination(insights, 'MODIFIED', CRD)  # noted once
    await scan(registry, insights, EXAMPLES)
    assert insights.resources == {EXAMPLES}


async def test_a_crd_listed_again_after_its_deletion_is_served_again(registry: registries.OperatorRegistry) -> None:
    insights = observation.Insights()
    observation._track_termination(insights, 'DELETED', CRD)
    assert observation._track_termination(insights, None, CRD)  # e.g. the CRDs' stream re-listed
    await scan(registry, insights, EXAMPLES)
    assert insights.resources == {EXAMPLES}
