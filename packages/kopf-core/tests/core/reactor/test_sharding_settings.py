"""
Automatic sharding's options and settings: what is accepted, what is refused with one clear message.

Inputs: the embedding call's options (``shards=``, ``shard_by=``), the settings
after the startup handlers (``settings.sharding``, ``settings.leader_election``,
``settings.watching.shard_selectors``). Outputs: the Lease to hold, or the
error. Also: the served slots' shard selector as the orchestrator sees it.
"""
import asyncio
import uuid
from typing import Any, Optional

import pytest

from kopf._cogs.configs import configuration
from kopf._cogs.structs import shards
from kopf._core.engines import indexing
from kopf._core.engines.coordination import leases, membership, sharding
from kopf._core.reactor import inventory, options
from kopf._core.reactor import sharding as reactor_sharding


def resolve(settings: configuration.OperatorSettings) -> Any:
    return reactor_sharding.resolve_sharding(settings, identity='me', served=['ns1'], clusterwide=False)


def test_off_by_default_and_nothing_resolved() -> None:
    settings = configuration.OperatorSettings()
    assert settings.sharding.enabled is False
    assert resolve(settings) is None


def test_the_options_turn_it_on_and_choose_the_field() -> None:
    settings = configuration.OperatorSettings()
    reactor_sharding.apply_sharding_options(settings.sharding, options.OperatorOptions(shards='auto',
                                                                                       shard_by='namespace'))
    assert settings.sharding.enabled and settings.sharding.hashed_field == 'namespace'
    ref, prefix = resolve(settings)
    assert prefix == 'kopf-shard-default'
    assert ref == leases.LeaseRef('ns1', membership.lease_name('kopf-shard-default', 'me'))


@pytest.mark.parametrize('kwargs, message', [
    (dict(shards='manual'), "shards= must be 'auto'"),
    (dict(shard_by='name'), "shard_by= must be 'uid' or 'namespace'"),
    (dict(shards='auto', leader_election=True), "Automatic sharding and leader election cannot be combined"),
])
def test_bad_options_are_refused_at_the_call(kwargs: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        options.OperatorOptions(**kwargs)


def test_leader_election_in_the_settings_is_refused_with_sharding() -> None:
    settings = configuration.OperatorSettings()
    settings.sharding.enabled = settings.leader_election.enabled = True
    with pytest.raises(leases.LeaseError, match="Use one of --shards=auto and --leader-election"):
        resolve(settings)


def test_static_shard_selectors_are_refused_with_sharding() -> None:
    settings = configuration.OperatorSettings()
    settings.sharding.enabled = True
    settings.watching.shard_selectors['kopfexamples'] = shards.format_range('object.metadata.uid', 0, 1 << 63)
    with pytest.raises(leases.LeaseError, match=r"settings\.watching\.shard_selectors must be empty"):
        resolve(settings)


@pytest.mark.parametrize('field, value, message', [
    ('hashed_field', 'name', "hashed_field must be one of uid, namespace"),
    ('lease_prefix', 'Bad_Name!', "Lease prefix 'Bad_Name!' is not valid in Kubernetes"),
    ('lease_namespace', 'Bad NS', "lease_namespace 'Bad NS' is not a valid namespace name"),
    ('renew_deadline', 20, r"settings.sharding.lease_duration \(15\) must be longer than renew_deadline"),
])
def test_bad_settings_are_refused_with_one_message(field: str, value: Any, message: str) -> None:
    settings = configuration.OperatorSettings()
    settings.sharding.enabled = True
    setattr(settings.sharding, field, value)
    with pytest.raises(leases.LeaseError, match=message):
        resolve(settings)


def test_a_cluster_wide_operator_outside_a_pod_is_told_to_set_the_namespace(monkeypatch: Any) -> None:
    monkeypatch.delenv('POD_NAMESPACE', raising=False)
    settings = configuration.OperatorSettings()
    settings.sharding.enabled = True
    with pytest.raises(leases.LeaseError, match=r"Set settings\.sharding\.lease_namespace"):
        reactor_sharding.resolve_sharding(settings, identity='me', served=[], clusterwide=True)


def selector_of(serving: reactor_sharding.ShardServing) -> Optional[str]:
    return serving.selector


async def test_the_served_slots_become_the_streams_selector() -> None:
    changed = asyncio.Event()
    serving = reactor_sharding.ShardServing(field='uid', changed=changed, memories=inventory.ObjectMemories(),
                                            context_of=lambda memory: None)  # type: ignore[arg-type,return-value]
    assert serving.idle and selector_of(serving) is None
    applying = asyncio.create_task(serving.apply(frozenset({0, 1, 5})))
    await asyncio.sleep(0)
    assert changed.is_set() and not applying.done()  # until the orchestrator has restarted the streams
    assert selector_of(serving) == sharding.selector({0, 1, 5}, field='uid')
    await serving.mark_applied(serving.version)
    await asyncio.wait_for(applying, timeout=1)
    applying = asyncio.create_task(serving.apply(sharding.ALL_SLOTS))
    await asyncio.sleep(0)
    assert selector_of(serving) is None and serving.slots == sharding.ALL_SLOTS  # all: no selector at all
    await serving.mark_applied(serving.version)
    await asyncio.wait_for(applying, timeout=1)


@pytest.mark.parametrize('field', ['uid', 'namespace'])
async def test_the_memories_and_indices_of_objects_moved_away_are_forgotten_and_the_others_kept(field: str) -> None:
    memories = inventory.ObjectMemories()
    # Random, as the API server's uids are (FNV-1a's high bits hardly differ for 'uid-1', 'uid-2', ...).
    bodies = [{'metadata': {'uid': str(uuid.uuid4()), 'namespace': f'ns-{uuid.uuid4()}', 'name': 'x'}}
              for _ in range(200)]
    indexers = indexing.OperatorIndexers()
    indexers.indices['by_name'] = index = indexing.OperatorIndex()
    for body in bodies:
        memories.recall(body, memo=None, initial=True)
        index.replace(body['metadata']['uid'], {body['metadata']['uid']: 'indexed'})
    serving = reactor_sharding.ShardServing(field=field, changed=asyncio.Event(), memories=memories,
                                            context_of=lambda memory: None,  # type: ignore[arg-type,return-value]
                                            indexers=indexers)
    kept = frozenset(slot for slot in sharding.ALL_SLOTS if slot % 2)
    for slots in (sharding.ALL_SLOTS, kept):
        applying = asyncio.create_task(serving.apply(slots))
        await asyncio.sleep(0)
        await serving.mark_applied(serving.version)
        await asyncio.wait_for(applying, timeout=1)
    remaining = {memory.uid for memory in memories}
    expected = {body['metadata']['uid'] for body in bodies
                if sharding.slot_of(shards.field_value(body, sharding.FIELDS[field])) in kept}
    assert remaining == expected
    assert set(index.index) == expected  # the indices of the objects moved away are dropped too
    assert 0 < len(expected) < len(bodies)
