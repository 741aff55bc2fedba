"""
One create handler whose outcome depends on the object's ``spec.mode``: for the metrics' counts.

- ``good``: succeeds at once;
- ``flaky``: fails temporarily on its first attempt (retried in 1 s), then succeeds;
- ``broken``: fails permanently.
"""
from typing import Any

import kopf

PLURAL = 'metricsobjs.metrics.kopf.dev'


@kopf.on.create(PLURAL)
def create_fn(spec: Any, retry: int, **_: Any) -> str:
    mode = spec.get('mode')
    if mode == 'flaky' and retry == 0:
        raise kopf.TemporaryError("not yet", delay=1)
    if mode == 'broken':
        raise kopf.PermanentError("never")
    return 'done'
