"""
Peering: pausing for peers with a higher or the same priority, resuming when they are gone,
forgetting the dead peers, finding the peering objects, and the keep-alives.

The API client is a fake at the client seam (records the patches, answers the reads);
the keep-alives run on fake time (looptime).
"""
import asyncio
import datetime
import logging
from typing import Any, Dict, List, Optional, Set, Tuple

import pytest

from kopf._cogs.clients.errors import APINotFoundError
from kopf._cogs.configs.configuration import OperatorSettings
from kopf._cogs.structs.references import Resource
from kopf._core.engines.coordination import peering

TARGET = peering.PeeringTarget(resource=peering.NAMESPACED_PEERINGS[0], namespace='ns', name='default')


class FakeClient:
    def __init__(self, existing: Set[Tuple[str, Optional[str]]] = frozenset()) -> None:  # type: ignore[assignment]
        self.existing = existing  # (group, namespace) of the peering objects that exist
        self.patches: List[Dict[str, Any]] = []

    async def get_object(self, resource: Resource, *, namespace: Optional[str], name: str) -> Dict[str, Any]:
        if (resource.group, namespace) not in self.existing:
            raise APINotFoundError(status=404, message='not found')
        return {}

    async def patch_object(self, resource: Resource, *, namespace: Optional[str], name: str,
                           patch: Dict[str, Any], **_: Any) -> Dict[str, Any]:
        self.patches.append(patch)
        return {}


def seen(seconds_ago: float = 0) -> str:
    return (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=seconds_ago)).isoformat()


async def react(client: FakeClient, status: Dict[str, Any], paused: Dict[Any, bool],
                operating: asyncio.Event, priority: int = 0, shard_selector: Optional[str] = None) -> None:
    settings = OperatorSettings()
    settings.peering.priority = priority
    if shard_selector is not None:
        settings.watching.shard_selectors['pods'] = shard_selector
    await peering.react(client=client, settings=settings, identity='me', target=TARGET,  # type: ignore[arg-type]
                        body={'status': status}, paused=paused, operating=operating)


async def test_a_peer_with_a_higher_priority_pauses_us(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    client, paused, operating = FakeClient(), dict[Any, bool](), asyncio.Event()
    await react(client, {'me': {'priority': 0, 'lastseen': seen()},
                         'other': {'priority': 10, 'lastseen': seen()}}, paused, operating)
    assert not operating.is_set() and paused == {TARGET: True}
    assert any(record.getMessage().startswith('Pausing operations in favour of') for record in caplog.records)


async def test_a_peer_with_the_same_priority_pauses_us_with_a_warning(caplog: pytest.LogCaptureFixture) -> None:
    client, paused, operating = FakeClient(), dict[Any, bool](), asyncio.Event()
    await react(client, {'other': {'priority': 0, 'lastseen': seen()}}, paused, operating)
    assert not operating.is_set()
    assert [r.levelname for r in caplog.records if 'conflicting' in r.getMessage()] == ['WARNING']


async def test_peers_with_the_same_priority_keep_working_when_shard_selectors_are_set(
        caplog: pytest.LogCaptureFixture) -> None:
    client, paused, operating = FakeClient(), dict[Any, bool](), asyncio.Event()
    await react(client, {'other': {'priority': 0, 'lastseen': seen()}}, paused, operating,
                shard_selector="shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')")
    assert operating.is_set() and paused == {TARGET: False}
    assert not [r for r in caplog.records if 'conflicting' in r.getMessage()]


async def test_a_peer_with_a_higher_priority_pauses_us_even_with_shard_selectors() -> None:
    client, paused, operating = FakeClient(), dict[Any, bool](), asyncio.Event()
    await react(client, {'other': {'priority': 10, 'lastseen': seen()}}, paused, operating,
                shard_selector="shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')")
    assert not operating.is_set() and paused == {TARGET: True}


async def test_we_resume_when_the_peers_are_gone_and_forget_the_dead_ones(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    client, paused, operating = FakeClient(), {TARGET: True}, asyncio.Event()
    await react(client, {'other': {'priority': 10, 'lifetime': 60, 'lastseen': seen(61)}}, paused, operating)
    assert operating.is_set() and paused == {TARGET: False}
    assert client.patches == [{'status': {'other': None}}]
    assert any(record.getMessage().startswith('Resuming operations') for record in caplog.records)


async def test_peers_with_a_lower_priority_do_not_pause_us() -> None:
    client, paused, operating = FakeClient(), dict[Any, bool](), asyncio.Event()
    await react(client, {'other': {'priority': 1, 'lastseen': seen()}}, paused, operating, priority=5)
    assert operating.is_set() and client.patches == []


async def test_the_current_group_is_preferred_and_the_legacy_one_is_found_too() -> None:
    both = FakeClient({('kopf.dev', 'ns'), ('zalando.org', 'ns')})
    legacy = FakeClient({('zalando.org', None)})
    found = await peering.find_target(client=both, name='default', namespace='ns')  # type: ignore[arg-type]
    assert found is not None and found.resource.group == 'kopf.dev'
    found = await peering.find_target(client=legacy, name='default', namespace=None)  # type: ignore[arg-type]
    assert found is not None and found.resource == peering.CLUSTER_PEERINGS[1]
    assert await peering.find_target(client=FakeClient(), name='default', namespace='ns') is None  # type: ignore


@pytest.mark.looptime
async def test_keepalives_are_patched_before_the_lifetime_ends() -> None:
    client, settings = FakeClient(), OperatorSettings()
    settings.peering.lifetime = 60
    task = asyncio.create_task(peering.keepalive(client=client, settings=settings,  # type: ignore[arg-type]
                                                 identity='me', target=TARGET))
    await asyncio.sleep(200)
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert 4 <= len(client.patches) <= 5  # every 50..55 seconds: before the peers consider us dead
    entry = client.patches[0]['status']['me']
    assert entry['priority'] == 0 and entry['lifetime'] == 60 and 'lastseen' in entry


@pytest.mark.looptime
async def test_a_mandatory_peering_object_is_waited_for(caplog: pytest.LogCaptureFixture) -> None:
    client, settings = FakeClient(), OperatorSettings()
    settings.peering.mandatory = True
    task = asyncio.create_task(peering.find_targets(client=client, settings=settings,  # type: ignore[arg-type]
                                                    scopes=['ns']))
    await asyncio.sleep(25)
    assert not task.done()
    client.existing = {('kopf.dev', 'ns')}
    targets = await task
    assert [target.namespace for target in targets] == ['ns']
    assert asyncio.get_running_loop().time() == 30  # the polling interval is 10 s
    assert sum('is mandatory, but it is absent' in record.getMessage() for record in caplog.records) == 3
