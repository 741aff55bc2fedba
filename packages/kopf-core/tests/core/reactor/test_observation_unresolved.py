"""
Handlers for resources that the cluster does not have: a warning, not silence.

The API client is a fake with a fixed discovery; the registry is real.
"""
import logging
from typing import Any, Collection, List, Optional

import pytest

import kopf
from kopf._cogs.structs import references
from kopf._core.intents import registries
from kopf._core.reactor import observation

VERBS = frozenset({'list', 'watch', 'patch'})
EXAMPLES = references.Resource('kopf.dev', 'v1', 'kopfexamples', namespaced=True, verbs=VERBS)
OTHERS = references.Resource('other.dev', 'v1', 'kopfexamples', namespaced=True, verbs=VERBS)


class DiscoveryClient:
    def __init__(self, resources: Collection[references.Resource]) -> None:
        self.resources = resources

    async def scan_resources(self, *, groups: Optional[Collection[str]] = None) -> Collection[references.Resource]:
        return self.resources


async def scan(resources: List[references.Resource], *selected: Any) -> observation.Insights:
    registry = registries.OperatorRegistry()
    for args in selected:
        kopf.on.event(*args, registry=registry)(lambda **_: None)
    insights = observation.Insights()
    await observation.scan_resources(client=DiscoveryClient(resources),  # type: ignore[arg-type]
                                     registry=registry, insights=insights)
    return insights


async def test_unresolved_resources_are_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    insights = await scan([EXAMPLES], ('kopfexamples',), ('nonexistents',), ('kopf.dev', 'absents'))
    assert insights.resources == {EXAMPLES}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["Unresolved resources cannot be served (try creating their CRDs): "
                        "Selector(any_name='nonexistents'), Selector(group='kopf.dev', any_name='absents')"]


async def test_resolved_resources_are_not_warned_about(caplog: pytest.LogCaptureFixture) -> None:
    insights = await scan([EXAMPLES], ('kopfexamples',))
    assert insights.resources == {EXAMPLES}
    assert [r for r in caplog.records if r.levelno >= logging.WARNING] == []


async def test_ambiguous_resources_are_not_called_unresolved(caplog: pytest.LogCaptureFixture) -> None:
    insights = await scan([EXAMPLES, OTHERS], ('kopfexamples',))
    assert insights.resources == set()
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(warnings) == 1
    assert warnings[0].startswith("Ambiguous resources will not be served")
