"""
Probe handlers for the health-check tests, and a startup gate to hold the listing back.

- ``static`` always answers; ``memo`` shows the memo of the operator (as probes get it);
- ``gate`` fails while the file ``$HEALTH_FAIL_FILE`` exists;
- the startup handler waits until the file ``$HEALTH_GATE_FILE`` exists: until then,
  nothing is watched, so nothing is listed (the readiness must be "not ready").
"""
import os
import pathlib
import time
from typing import Any

import kopf

GROUP = 'health.kopf.dev'


@kopf.on.startup()
def gate_fn(memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    memo.greeting = 'hello'
    gate = pathlib.Path(os.environ['HEALTH_GATE_FILE'])
    logger.info("Waiting for the startup gate.")
    while not gate.exists():
        time.sleep(0.1)  # in a thread (a sync handler): the operator and its probes go on
    logger.info("The startup gate is open.")


@kopf.on.probe(id='static')
def static_fn(**_: Any) -> str:
    return 'ok'


@kopf.on.probe(id='memo')
def memo_fn(memo: kopf.Memo, **_: Any) -> str:
    return str(memo.get('greeting'))


@kopf.on.probe(id='gate')
def failing_fn(**_: Any) -> bool:
    if pathlib.Path(os.environ['HEALTH_FAIL_FILE']).exists():
        raise RuntimeError("the fail file exists")
    return True


@kopf.on.create(GROUP, 'healthobjs')
def create_fn(logger: kopf.Logger, **_: Any) -> None:
    logger.info("Created.")
