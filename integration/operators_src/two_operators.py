"""
Two operators in one process, each in a thread of its own with its own event loop, as the embedding manual shows.

Each has its own registry (its handlers only), its own settings (its own finalizer and progress annotations'
prefix), its own memo, and serves its own resource in the namespace given as the argument. Every handler
writes into the object's status which operator ran it and what its memo held, and posts a k8s-event named
after its operator. SIGTERM or SIGINT sets both operators' stop-flags; the process exits once both returned.
"""
import asyncio
import signal
import sys
import threading
from typing import Any

import kopf

GROUP = 'embedding.kopf.dev'


def make_operator(name: str, plural: str) -> tuple[kopf.OperatorRegistry, kopf.OperatorSettings, kopf.Memo]:
    registry = kopf.OperatorRegistry()
    settings = kopf.OperatorSettings()
    settings.persistence.finalizer = f'{name}.{GROUP}/finalizer'
    settings.persistence.progress_storage = kopf.AnnotationsProgressStorage(prefix=f'{name}.{GROUP}')
    settings.persistence.diffbase_storage = kopf.AnnotationsDiffBaseStorage(prefix=f'{name}.{GROUP}')
    memo = kopf.Memo(operator=name)

    @kopf.on.create(GROUP, 'v1', plural, registry=registry, id='create_fn')
    def create_fn(body: kopf.Body, memo: kopf.Memo, **_: Any) -> dict[str, str]:
        kopf.info(body, reason=f'HandledBy-{name}', message=f"Created, as seen by the operator {name}.")
        return {'operator': name, 'memo': memo.operator}

    @kopf.on.delete(GROUP, 'v1', plural, registry=registry, id='delete_fn')
    def delete_fn(logger: kopf.ObjectLogger, **_: Any) -> None:
        logger.info(f"Deleted, as seen by the operator {name}.")

    return registry, settings, memo


def serve(name: str, plural: str, namespace: str, stop_flag: threading.Event) -> None:
    registry, settings, memo = make_operator(name, plural)
    asyncio.run(kopf.operator(registry=registry, settings=settings, memo=memo, namespaces=[namespace],
                              standalone=True, stop_flag=stop_flag))
    print(f"The operator {name} has returned.", flush=True)


def main(namespace: str) -> None:
    stop_flag = threading.Event()
    threads = [threading.Thread(target=serve, args=(name, plural, namespace, stop_flag), name=f'operator-{name}')
               for name, plural in (('alpha', 'alphas'), ('beta', 'betas'))]
    for thread in threads:
        thread.start()
    stopped = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stopped.set())
    stopped.wait()
    stop_flag.set()
    for thread in threads:
        thread.join()
    print("Both operators have returned.", flush=True)


if __name__ == '__main__':
    kopf.configure(verbose=True, log_prefix=True)  # the objects' names in their lines, as `kopf run` has them
    main(sys.argv[1])
