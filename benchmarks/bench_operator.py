"""
The operator under test, run unchanged by every framework side (``kopf run bench_operator.py``).

The resource is chosen by ``$KOPF_BENCH_PLURAL`` so that one file serves both
CRD variants (with and without the status subresource). The handlers do no
work of their own: what is measured is the framework's cost around them.
The file is not named ``operator.py``: loaded by path, it would shadow the
standard library's ``operator`` module in ``sys.modules``.
"""
import os

import kopf

GROUP = 'bench.kopf.dev'
VERSION = 'v1'
PLURAL = os.environ.get('KOPF_BENCH_PLURAL', 'benchmarkeds')


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, **_: object) -> None:
    # `--no-posted-logs`: the same configuration for both frameworks: only explicit k8s-events.
    # (Upstream Kopf 1.45 posts no log messages by default; ours posts them, as the manual shows.)
    if os.environ.get('KOPF_BENCH_POSTED_LOGS') == 'false':
        settings.posting.loggers = False


@kopf.on.create(GROUP, VERSION, PLURAL)
def create_fn(**_: object) -> dict[str, str]:
    return {'message': 'created'}  # visible as status.create_fn: the harness waits for it


@kopf.on.update(GROUP, VERSION, PLURAL, field='spec.field')
def update_fn(new: object, **_: object) -> dict[str, object]:
    return {'field': new}  # visible as status["update_fn/spec.field"].field: the harness compares it


@kopf.on.delete(GROUP, VERSION, PLURAL)
def delete_fn(**_: object) -> None:
    pass  # its presence puts a finalizer on every object
