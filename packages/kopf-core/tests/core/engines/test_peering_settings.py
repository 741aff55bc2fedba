"""
``settings.peering``: what the keep-alives say and log, and whether a missing peering object pauses.

The client is a small fake: it records the keep-alive patches, and has no
peering objects at all (every read is a 404). Time is fake (looptime).
"""
import asyncio
import itertools
import logging
from typing import Any, List, Tuple

import pytest

from kopf._cogs.clients.errors import APINotFoundError
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._core.engines.coordination import peering


class NoPeeringsClient:
    def __init__(self) -> None:
        self.patches: List[Tuple[float, Any]] = []

    async def get_object(self, resource: Any, **_: Any) -> Any:
        raise APINotFoundError(status=404)

    async def patch_object(self, resource: Any, *, patch: Any, **_: Any) -> Any:
        self.patches.append((asyncio.get_running_loop().time(), patch))
        return {}


TARGET = peering.PeeringTarget(resource=peering.NAMESPACED_PEERINGS[0], namespace='ns', name='default')


async def keepalive_for(settings: OperatorSettings, client: NoPeeringsClient, seconds: float) -> None:
    task = asyncio.create_task(peering.keepalive(client=client, settings=settings,  # type: ignore[arg-type]
                                                 identity='me', target=TARGET))
    await asyncio.sleep(seconds)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)


@pytest.mark.looptime(start=0)
@pytest.mark.parametrize('lifetime, priority', [(60, 0), (30, 100)])
async def test_keepalives_announce_the_priority_and_lifetime_and_come_within_the_lifetime(
        lifetime: int, priority: int) -> None:
    settings = OperatorSettings()
    settings.peering.lifetime = lifetime
    settings.peering.priority = priority
    client = NoPeeringsClient()
    await keepalive_for(settings, client, lifetime * 3)
    entries = [patch['status']['me'] for _, patch in client.patches]
    assert {(entry['priority'], entry['lifetime']) for entry in entries} == {(priority, lifetime)}
    times = [when for when, _ in client.patches]
    assert len(times) >= 3
    assert all(lifetime - 10 <= later - earlier <= lifetime - 5 for earlier, later in itertools.pairwise(times))


@pytest.mark.looptime
@pytest.mark.parametrize('stealth, logged', [(False, True), (True, False)])
async def test_keepalives_are_logged_unless_stealth(
        caplog: pytest.LogCaptureFixture, stealth: bool, logged: bool) -> None:
    settings = OperatorSettings()
    settings.peering.stealth = stealth
    client = NoPeeringsClient()
    with caplog.at_level(logging.DEBUG, logger='kopf'):
        await keepalive_for(settings, client, 1)
    assert client.patches  # sent anyway
    assert ("Keep-alive in 'default' in 'ns': ok." in caplog.messages) is logged


@pytest.mark.looptime
@pytest.mark.parametrize('mandatory, paused', [(False, False), (True, True)])
async def test_a_missing_peering_object_pauses_only_when_mandatory(
        caplog: pytest.LogCaptureFixture, mandatory: bool, paused: bool) -> None:
    settings = OperatorSettings()
    settings.peering.mandatory = mandatory
    task = asyncio.create_task(peering.find_targets(client=NoPeeringsClient(),  # type: ignore[arg-type]
                                                    settings=settings, scopes=['ns']))
    await asyncio.sleep(60)
    assert task.done() is not paused
    if paused:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        assert any("is mandatory, but it is absent" in message for message in caplog.messages)
    else:
        assert task.result() == []
