"""
The operator under test, run unchanged by every framework side (``kopf run bench_operator.py``).

The resource is chosen by ``$KOPF_BENCH_PLURAL`` so that one file serves both
CRD variants (with and without the status subresource). The handlers do no
work of their own: what is measured is the framework's cost around them.
The file is not named ``operator.py``: loaded by path, it would shadow the
standard library's ``operator`` module in ``sys.modules``.
"""
import asyncio
import os

import kopf

GROUP = 'bench.kopf.dev'
VERSION = 'v1'
PLURAL = os.environ.get('KOPF_BENCH_PLURAL', 'benchmarkeds')


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: object) -> None:
    # The same configuration for both frameworks, so that they do the same work: `--posted-logs` makes
    # both post the per-object log messages as k8s-events, otherwise neither does (only explicit
    # k8s-events: none in this operator). Unset: each framework's own default (the "defaults" rows).
    posted_logs = os.environ.get('KOPF_BENCH_POSTED_LOGS')
    if posted_logs is not None:
        settings.posting.loggers = posted_logs == 'true'


@kopf.on.startup()
async def report_the_loop(logger: kopf.Logger, **_: object) -> None:
    # The harness checks it: a row "on uvloop" or "without uvloop" must be what ran.
    logger.info(f"Event loop: {type(asyncio.get_running_loop()).__module__.split('.')[0]}")


@kopf.on.create(GROUP, VERSION, PLURAL)
def create_fn(**_: object) -> dict[str, str]:
    return {'message': 'created'}  # visible as status.create_fn: the harness waits for it


@kopf.on.update(GROUP, VERSION, PLURAL, field='spec.field')
def update_fn(new: object, **_: object) -> dict[str, object]:
    return {'field': new}  # visible as status["update_fn/spec.field"].field: the harness compares it


@kopf.on.delete(GROUP, VERSION, PLURAL)
def delete_fn(**_: object) -> None:
    pass  # its presence puts a finalizer on every object
