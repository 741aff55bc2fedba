"""
An operator for the leader election's tests: a create handler and a daemon per object.

Every handler call appends one JSON line to the file named by ``$CALLS_FILE``
(outside the operator processes, so that the tests never read the logs for
counts): the process id, the object, the handler (``create``; ``daemon`` when a
daemon starts, ``heartbeat`` while it runs, ``daemon-exit`` when it ends), and
the wall-clock time. The Lease's timings come from ``$LEASE_DURATION``,
``$RENEW_DEADLINE`` and ``$RETRY_PERIOD`` (seconds).
"""
import json
import os
import time
from typing import Any

import kopf

RESOURCE = ('leader.kopf.dev', 'v1', 'leaderthings')


def record(name: str, handler: str) -> None:
    line = json.dumps({'pid': os.getpid(), 'object': name, 'handler': handler, 'time': time.time()})
    with open(os.environ['CALLS_FILE'], 'a', encoding='utf-8') as f:
        f.write(line + '\n')  # one write of one short line: whole even with several writers


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: Any) -> None:
    settings.leader_election.lease_duration = float(os.environ.get('LEASE_DURATION', '15'))
    settings.leader_election.renew_deadline = float(os.environ.get('RENEW_DEADLINE', '10'))
    settings.leader_election.retry_period = float(os.environ.get('RETRY_PERIOD', '2'))


@kopf.on.create(*RESOURCE)
def create_fn(name: str, **_: Any) -> None:
    record(name, 'create')


@kopf.daemon(*RESOURCE, cancellation_timeout=1)
async def heartbeat_fn(name: str, stopped: Any, **_: Any) -> None:  # an async daemon's stop-flag
    record(name, 'daemon')
    try:
        while not stopped:
            record(name, 'heartbeat')
            await stopped.wait(0.1)
    finally:
        record(name, 'daemon-exit')
