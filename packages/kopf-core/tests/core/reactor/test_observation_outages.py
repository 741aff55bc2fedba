"""
An unavailable API during the observation of resources: logged, retried, never fatal once reached.

The API client is a fake whose discovery and CRD watching fail as configured;
the registry and the insights are real.
"""
import asyncio
import logging
from typing import Any, AsyncIterator, Collection, List, Optional

import pytest

import kopf
from kopf._cogs.aiokits import aioretries
from kopf._cogs.clients import errors as apierrors
from kopf._cogs.clients import protocols
from kopf._cogs.structs import references
from kopf._core.intents import registries
from kopf._core.reactor import observation

EXAMPLES = references.Resource('kopf.dev', 'v1', 'kopfexamples', namespaced=True,
                               verbs=frozenset({'list', 'watch', 'patch'}))


@pytest.fixture(autouse=True)
def instant_backoffs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(aioretries, 'BACKOFFS', (0,))


class FlakyClient:
    """Discovery and CRD watching fail with the given errors first, then work."""

    def __init__(self, *, scan_errors: List[Exception], watch_errors: List[Exception]) -> None:
        self.scan_errors = scan_errors
        self.watch_errors = watch_errors
        self.scans = 0
        self.watched = asyncio.Event()

    async def scan_resources(self, *, groups: Optional[Collection[str]] = None) -> Collection[references.Resource]:
        self.scans += 1
        if self.scan_errors:
            raise self.scan_errors.pop(0)
        return [EXAMPLES]

    async def list_objects(self, resource: references.Resource, **_: Any) -> protocols.ObjectPage:
        return protocols.ObjectPage(items=[], resource_version='1', continue_token=None)

    async def watch_objects(self, resource: references.Resource, **_: Any) -> AsyncIterator[Any]:
        if self.watch_errors:
            raise self.watch_errors.pop(0)
        self.watched.set()
        await asyncio.Event().wait()
        yield {}  # never reached: makes it an async generator


def make_registry() -> registries.OperatorRegistry:
    registry = registries.OperatorRegistry()
    kopf.on.event('kopfexamples', registry=registry)(lambda **_: None)
    return registry


async def test_the_first_discovery_failure_ends_the_observer() -> None:
    # The API was never reached: more likely a wrong kubeconfig than an outage; the operator says so and exits.
    client = FlakyClient(scan_errors=[ConnectionRefusedError('refused')], watch_errors=[])
    settings = kopf.OperatorSettings()
    with pytest.raises(ConnectionRefusedError):
        await observation.resource_observer(client=client, settings=settings,  # type: ignore[arg-type]
                                            registry=make_registry(), insights=observation.Insights())
    assert client.scans == 1


async def test_later_discovery_failures_are_retried_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    client = FlakyClient(scan_errors=[apierrors.APIServerError(status=503), ConnectionResetError('dropped')],
                         watch_errors=[])
    caplog.set_level(logging.INFO)
    insights = observation.Insights()
    await observation._rescan(client=client, registry=make_registry(), insights=insights)  # type: ignore[arg-type]
    assert insights.resources == {EXAMPLES}
    assert client.scans == 3
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2
    assert all(e.startswith("Failed to discover the resources (GET /api, /apis); retrying in 0s") for e in errors)
    assert "(attempt 2)" in errors[1] and "ConnectionResetError('dropped')" in errors[1]
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert "Succeeded to discover the resources (GET /api, /apis) after 2 failure(s)." in infos


async def test_crd_watch_failures_do_not_end_the_observer(caplog: pytest.LogCaptureFixture) -> None:
    client = FlakyClient(scan_errors=[], watch_errors=[RuntimeError('connection lost'),
                                                       apierrors.APIClientError(status=400)])
    settings = kopf.OperatorSettings()
    settings.watching.reconnect_backoff = 0
    insights = observation.Insights()
    task = asyncio.create_task(observation.resource_observer(
        client=client, settings=settings, registry=make_registry(), insights=insights))  # type: ignore[arg-type]
    await asyncio.wait_for(client.watched.wait(), timeout=5)
    assert not task.done()
    task.cancel()
    await asyncio.wait([task])
    assert insights.resources == {EXAMPLES}
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    # The stream reconnects by itself after a transport error; the observer retries after what escapes it.
    assert [e.split(';')[0] for e in errors] == [
        "Failed to stream customresourcedefinitions.v1.apiextensions.k8s.io cluster-wide",
        "Failed to watch the CRDs"]
    assert "serving the 1 resource(s) known so far meanwhile" in errors[1]


async def test_forbidden_crd_watch_ends_the_observer_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    client = FlakyClient(scan_errors=[], watch_errors=[apierrors.APIForbiddenError(status=403)])
    settings = kopf.OperatorSettings()
    insights = observation.Insights()
    await asyncio.wait_for(observation.resource_observer(
        client=client, settings=settings, registry=make_registry(), insights=insights), timeout=5)  # type: ignore[arg-type]
    assert insights.resources == {EXAMPLES}
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == ["Not enough permissions to watch CRDs: resources created later will not be served "
                        "until the operator restarts."]


async def test_namespace_watch_failures_do_not_end_the_observer(caplog: pytest.LogCaptureFixture) -> None:
    client = FlakyClient(scan_errors=[], watch_errors=[RuntimeError('connection lost'),
                                                       apierrors.APIClientError(status=400)])
    settings = kopf.OperatorSettings()
    settings.watching.reconnect_backoff = 0
    insights = observation.Insights()
    task = asyncio.create_task(observation.namespace_observer(
        client=client, settings=settings, clusterwide=False,  # type: ignore[arg-type]
        patterns=['ns-*'], insights=insights))
    await asyncio.wait_for(client.watched.wait(), timeout=5)
    assert not task.done()
    task.cancel()
    await asyncio.wait([task])
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert [e.split(';')[0] for e in errors] == ["Failed to stream namespaces.v1 cluster-wide",
                                                 "Failed to watch the namespaces"]
    assert [r for r in caplog.records if r.levelno == logging.WARNING] == []
