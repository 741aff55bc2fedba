"""
An operator for the automatic sharding's tests: a create handler per object, a daemon per labelled object.

Every handler call appends one JSON line to the file named by ``$CALLS_FILE``
(outside the operator processes, so that the tests never read the logs for
counts): the process id, the replica (``$POD_ID``), the object's name and uid,
the handler (``create``; ``daemon`` when a daemon starts, ``heartbeat`` while
it runs, ``daemon-exit`` when it ends), and the wall-clock time. The Leases'
timings come from ``$LEASE_DURATION``, ``$RENEW_DEADLINE`` and ``$RETRY_PERIOD``
(seconds); ``$LEASE_PREFIX``, if set, is the Leases' prefix.
"""
import json
import os
import time
from typing import Any

import kopf

RESOURCE = ('shard.kopf.dev', 'v1', 'shardthings')


def record(name: str, uid: str, handler: str) -> None:
    line = json.dumps({'pid': os.getpid(), 'replica': os.environ.get('POD_ID'), 'object': name, 'uid': uid,
                       'handler': handler, 'time': time.time()})
    with open(os.environ['CALLS_FILE'], 'a', encoding='utf-8') as f:
        f.write(line + '\n')  # one write of one short line: whole even with several writers


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.posting.enabled = False  # fewer requests: the tests count calls in the file, not events
    settings.sharding.lease_duration = float(os.environ.get('LEASE_DURATION', '15'))
    settings.sharding.renew_deadline = float(os.environ.get('RENEW_DEADLINE', '10'))
    settings.sharding.retry_period = float(os.environ.get('RETRY_PERIOD', '2'))
    if os.environ.get('LEASE_PREFIX'):
        settings.sharding.lease_prefix = os.environ['LEASE_PREFIX']


@kopf.on.create(*RESOURCE)
def create_fn(name: str, uid: str, **_: Any) -> None:
    record(name, uid, 'create')


@kopf.daemon(*RESOURCE, labels={'daemon': 'yes'}, cancellation_timeout=1)
async def heartbeat_fn(name: str, uid: str, stopped: Any, **_: Any) -> None:  # an async daemon's stop-flag
    record(name, uid, 'daemon')
    try:
        while not stopped:
            record(name, uid, 'heartbeat')
            await stopped.wait(0.2)
    finally:
        record(name, uid, 'daemon-exit')
