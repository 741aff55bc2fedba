"""
Everything at once: one operator with most of the framework's features together.

- Activities: ``on.startup`` (settings, the memo, the client's credentials) and ``on.cleanup``.
- An index of the objects by ``spec.field``, read by the handlers.
- ``on.create`` with a retry (``kopf.TemporaryError``), a child ConfigMap
  (``kopf.adopt``), a Kubernetes event (``kopf.info``) and one sub-handler per item.
- ``on.resume`` for the objects that exist at the start; ``on.update`` of one field,
  with ``old``/``new`` and a filter; ``on.delete``; a silent ``on.event``.
- A daemon and a timer per object, with its ``memo``.

The child is created with the ``kubernetes`` client (``pip install kubernetes``).
"""
from typing import Any, Optional

import kubernetes

import kopf


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, **_: Any) -> None:
    settings.execution.max_workers = 5  # the threads for the sync handlers, daemons and timers
    memo.events = []  # shared by every object's memo (a shallow copy of this one)
    try:
        kubernetes.config.load_incluster_config()
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config()


@kopf.on.cleanup()
def cleanup_fn(memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    logger.info(f"Bye; the watch events seen: {len(memo.events)}.")


@kopf.index('kopfexamples')
def by_field(name: str, spec: kopf.Spec, **_: Any) -> Optional[dict[str, str]]:
    return {spec['field']: name} if 'field' in spec else None


@kopf.on.create('kopfexamples')
def create_fn(body: kopf.Body, spec: kopf.Spec, name: str, namespace: str, retry: int,
              logger: kopf.ObjectLogger, **_: Any) -> dict[str, str]:
    if retry == 0:
        raise kopf.TemporaryError("Not yet: the first attempt always fails here.", delay=0.5)
    child: dict[str, Any] = {'apiVersion': 'v1', 'kind': 'ConfigMap', 'data': {'field': str(spec.get('field'))}}
    kopf.adopt(child)  # owned by this object: deleted with it; named after it
    created = kubernetes.client.CoreV1Api().create_namespaced_config_map(namespace, child)
    kopf.info(body, reason='ChildCreated', message=f"Created the ConfigMap {created.metadata.name}.")
    for item in spec.get('items', []):
        @kopf.subhandler(id=f'item-{item}')
        def handle_item(item: str = item, **_: Any) -> None:
            logger.info(f"The item {item!r} is handled.")
    return {'child': str(created.metadata.name)}  # stored in status.create_fn


@kopf.on.resume('kopfexamples')
def resume_fn(name: str, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"Resuming {name}, which existed before the operator started.")


@kopf.on.update('kopfexamples', field='spec.field', new=kopf.PRESENT)
def update_field(new: str, status: kopf.Status, namespace: str, by_field: kopf.Index[str, str],
                 logger: kopf.ObjectLogger, **_: Any) -> None:
    child = status.get('create_fn', {}).get('child')
    if child:
        kubernetes.client.CoreV1Api().patch_namespaced_config_map(child, namespace, {'data': {'field': new}})
    logger.info(f"The objects with the field {new!r}: {sorted(by_field.get(new, []))}.")


@kopf.on.delete('kopfexamples')
def delete_fn(logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info("Deleted; the garbage collector deletes the child.")


@kopf.on.event('kopfexamples')
def event_fn(event: kopf.RawEvent, memo: kopf.Memo, **_: Any) -> None:
    memo.events.append(event['type'])


# The flag first, and 1 s of grace to exit by itself: with no backoff, the cancellation follows the flag at once,
# and the daemon may be cancelled before it sees the flag (and says it has stopped).
@kopf.daemon('kopfexamples', cancellation_backoff=1, cancellation_timeout=5)
async def heartbeat(stopped: kopf.AsyncDaemonStopperChecker, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info("The heartbeat daemon has started.")
    while not stopped:
        await stopped.wait(0.5)  # an async daemon's flag is awaited: it never blocks the event loop
    logger.info("The heartbeat daemon has stopped.")


@kopf.timer('kopfexamples', interval=0.5)
def tick(memo: kopf.Memo, logger: kopf.ObjectLogger, **_: Any) -> None:
    memo.ticks = memo.get('ticks', 0) + 1
    if memo.ticks == 2:
        logger.info("The timer has ticked twice.")
