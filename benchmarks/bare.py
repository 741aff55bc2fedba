"""
The bound: a controller with no framework that makes the fewest requests for the same visible results.

For every object it adds a finalizer and writes ``status.create_fn``; for every
change of ``spec.field`` it writes ``status.update_fn``; for every deletion it
removes its finalizer. That is one merge-patch per step (two for the creation
when status is a subresource), plus one LIST and one WATCH, with no retries,
no progress storage and no logging to the cluster. Run under the same scenarios
as the frameworks, it shows how fast the API server alone lets an operator go.

Usage (the harness passes the server, token and CA in the environment)::

    python -m benchmarks.bare --namespace NS
"""
import argparse
import asyncio
import contextlib
import os
import signal

from benchmarks.kubeapi import JsonDict, KubeApi

FINALIZER = 'bench.kopf.dev/bare'
# The most requests in flight: enough to saturate the API server of a small machine, but not one
# connection (a file descriptor) per object when thousands of them are listed at the start.
CONNECTIONS = 500


class BareController:
    def __init__(self, api: KubeApi, *, plural: str, namespace: str, status_subresource: bool) -> None:
        self.api = api
        self.plural = plural
        self.namespace = namespace
        self.status_subresource = status_subresource
        # What was already written, so that the echoes of our own patches cause no more patches.
        self._handled_field: dict[str, object] = {}
        self._finalized: set[str] = set()
        # One worker per object at a time; newer versions of the object wait as the latest one only.
        self._pending: dict[str, JsonDict] = {}
        self._tasks: dict[str, asyncio.Task[None]] = {}
        # The bound makes no retries: a failed reconciliation fails the whole run, loudly,
        # instead of leaving its object unhandled while the harness waits for it.
        self._failure: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def run(self) -> None:
        """Reconcile until cancelled, or until a reconciliation fails (with its error)."""
        watching = asyncio.create_task(self._watch())
        try:
            await asyncio.wait([watching, self._failure], return_when=asyncio.FIRST_COMPLETED)
        finally:
            watching.cancel()
        if self._failure.done():
            await self._failure
        await watching

    async def _watch(self) -> None:
        items, resource_version = await self.api.list(self.plural, self.namespace)
        for item in items:
            self._enqueue(item)
        while True:
            async for event in self.api.watch(self.plural, self.namespace, resource_version):
                body = event.get('object', {})
                resource_version = body.get('metadata', {}).get('resourceVersion', resource_version)
                if event.get('type') in ('ADDED', 'MODIFIED'):
                    self._enqueue(body)

    def _enqueue(self, body: JsonDict) -> None:
        name = body['metadata']['name']
        self._pending[name] = body
        if name not in self._tasks:
            self._tasks[name] = asyncio.create_task(self._work(name))

    async def _work(self, name: str) -> None:
        try:
            while name in self._pending:
                await self._reconcile(self._pending.pop(name))
        except Exception as e:
            if not self._failure.done():
                self._failure.set_exception(e)
        finally:
            del self._tasks[name]

    async def _reconcile(self, body: JsonDict) -> None:
        name = body['metadata']['name']
        finalizers = list(body['metadata'].get('finalizers') or [])
        status = body.get('status') or {}
        field = (body.get('spec') or {}).get('field')
        if body['metadata'].get('deletionTimestamp'):
            if FINALIZER in finalizers and name not in self._finalized:
                self._finalized.add(name)
                finalizers.remove(FINALIZER)
                await self.api.patch(self.plural, self.namespace, name, {'metadata': {'finalizers': finalizers}})
            return
        handled = self._handled_field.get(name, (status.get('handled') or {}).get('field'))
        if 'create_fn' not in status and name not in self._handled_field:
            self._handled_field[name] = field
            new_status = {'create_fn': {'message': 'created'}, 'handled': {'field': field}}
            meta = {'finalizers': [*finalizers, FINALIZER]}
            if self.status_subresource:
                await self.api.patch(self.plural, self.namespace, name, {'metadata': meta})
                await self.api.patch(self.plural, self.namespace, name, {'status': new_status}, subresource='status')
            else:
                await self.api.patch(self.plural, self.namespace, name, {'metadata': meta, 'status': new_status})
        elif field != handled:
            self._handled_field[name] = field
            new_status = {'update_fn': {'field': field}, 'handled': {'field': field}}
            await self.api.patch(self.plural, self.namespace, name, {'status': new_status},
                                 subresource='status' if self.status_subresource else '')


async def main(namespace: str) -> None:
    api = KubeApi(os.environ['BENCH_SERVER'], token=os.environ['BENCH_TOKEN'], ca_path=os.environ['BENCH_CA'],
                  connections=CONNECTIONS)
    controller = BareController(api, plural=os.environ['KOPF_BENCH_PLURAL'], namespace=namespace,
                                status_subresource=os.environ.get('BENCH_STATUS_SUBRESOURCE') == '1')
    task = asyncio.create_task(controller.run())
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, task.cancel)
    try:
        with contextlib.suppress(asyncio.CancelledError):
            await task
    finally:
        await api.close()


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description=(__doc__ or '').split('\n\n')[0])
    parser.add_argument('--namespace', required=True)
    asyncio.run(main(parser.parse_args().namespace))
