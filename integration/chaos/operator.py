"""
The operator of the soak: handlers of every kind, each recording its runs.

Every run is written to the runs journal (``$KOPF_CHAOS_RUNS``) as it starts
and as it ends, with the object, the handler, the retry number, the value of
``spec.value`` it saw, and the pid: what the invariant checks count. A short
sleep inside each handler leaves a window for the harness's kill -9 to land
mid-run. Some handlers fail temporarily on their first attempt (picked by a
hash of the object's name, so the same objects do so in every soak).
"""
import asyncio
import os
import zlib
from typing import Any

import kopf
from integration.chaos import _records
from integration.chaos._resource import GROUP, PLURAL, VERSION

RUNS = os.environ.get('KOPF_CHAOS_RUNS', '')
HANDLER_PAUSE = 0.3


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    if not RUNS:
        raise kopf.PermanentError("Set $KOPF_CHAOS_RUNS to the file where the handlers' runs are recorded.")
    # A stalled watch must not go unnoticed for ever; watches are also renewed regularly.
    settings.watching.inactivity_timeout = 20
    settings.watching.server_timeout = 60
    settings.watching.client_timeout = 90
    settings.posting.enabled = False  # k8s-events would only add load here


async def _run(name: str, handler: str, retry: int, value: Any, *, flaky: bool = False) -> None:
    _records.append(RUNS, event='start', obj=name, handler=handler, retry=retry, value=value)
    await asyncio.sleep(HANDLER_PAUSE)
    if flaky and retry == 0 and zlib.crc32(f'{name}/{handler}/{value}'.encode()) % 3 == 0:
        _records.append(RUNS, event='temporary-failure', obj=name, handler=handler, retry=retry, value=value)
        raise kopf.TemporaryError("A failure on the first attempt, as the soak demands.", delay=1)
    _records.append(RUNS, event='success', obj=name, handler=handler, retry=retry, value=value)


@kopf.on.create(GROUP, VERSION, PLURAL)
async def create(name: str, spec: kopf.Spec, **_: Any) -> None:
    value = spec.get('value')

    @kopf.subhandler(id='first')
    async def first(retry: int, **_: Any) -> None:
        await _run(name, 'create/first', retry, value)

    @kopf.subhandler(id='second')
    async def second(retry: int, **_: Any) -> None:
        await _run(name, 'create/second', retry, value, flaky=True)


@kopf.on.update(GROUP, VERSION, PLURAL, field='spec.value')
async def update(name: str, retry: int, new: Any, **_: Any) -> None:
    await _run(name, 'update', retry, new, flaky=True)


@kopf.on.delete(GROUP, VERSION, PLURAL)
async def delete(name: str, retry: int, spec: kopf.Spec, **_: Any) -> None:
    await _run(name, 'delete', retry, spec.get('value'))


@kopf.daemon(GROUP, VERSION, PLURAL, cancellation_timeout=10)
async def keeper(name: str, stopped: kopf.DaemonStopped, **_: Any) -> None:
    _records.append(RUNS, event='daemon-start', obj=name, handler='keeper')
    try:
        while not stopped:
            await stopped.wait(60)
    finally:
        _records.append(RUNS, event='daemon-exit', obj=name, handler='keeper')


@kopf.timer(GROUP, VERSION, PLURAL, interval=20)
async def ticker(name: str, **_: Any) -> None:
    _records.append(RUNS, event='tick', obj=name, handler='ticker')
