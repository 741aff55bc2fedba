"""
The tests' side of the in-memory API: the same :class:`~kopf_testing.kube.KubeClient` as on a real cluster.

It does what kubectl does on a real cluster: unknown fields are rejected in
creations (kubectl validates them strictly) and pruned in patches, and the
API's errors become :class:`KubectlError` with kubectl's ``Error from server
(Reason): message`` in its stderr, so that a test expecting a failure runs
unchanged on both.
"""
import contextlib
import pathlib
from collections.abc import Iterator, Sequence
from typing import Any, Literal, Optional, Union

import yaml

from kopf import clients
from kopf_testing._polling import DEFAULT_TIMEOUT
from kopf_testing.controlplane import KubectlError
from kopf_testing.kube import KubeClient, Manifest, Object
from kopf_testing.memory._errors import unsupported
from kopf_testing.memory._resources import Served
from kopf_testing.memory._store import MemoryApi

_PATCH_TYPES = {'merge': clients.PatchType.MERGE, 'json': clients.PatchType.JSON}


class MemoryKube(KubeClient):
    """Objects of one namespace (or cluster-scoped ones) of a :class:`MemoryApi`."""

    poll_interval = 0.005  # nothing is slow here: the operator's reaction is all that is awaited

    def __init__(self, api: MemoryApi, namespace: Optional[str] = None) -> None:
        self.api = api
        self.namespace = namespace

    def apply_crd(self, *manifests: Manifest, timeout: float = 60) -> list[str]:
        """
        Apply CRDs (bodies or YAML files); return their names.

        As on a real cluster, the CRDs are ``Established`` within the timeout (``kubectl wait``'s):
        here, at once, so every timeout is met and nothing is waited for.
        """
        names: list[str] = []
        crds = self.api.served_by_name('customresourcedefinitions').resource
        for body in _load_all(manifests):
            if body.get('kind') != 'CustomResourceDefinition':
                continue
            try:
                existing = self.api.get(crds, None, body['metadata']['name'])
            except clients.APINotFoundError:
                self.api.create(crds, None, body)
            else:
                if existing['spec'] != body['spec']:  # the same one again is a no-op, as `kubectl apply` is
                    unsupported('changing an existing CRD (create a new MemoryApi with the new CRD)')
            names.append(body['metadata']['name'])
        if not names:
            raise ValueError(f'No CustomResourceDefinition in {manifests!r}.')
        return names  # established at once: nothing to wait for

    def create(self, manifest: Manifest) -> Object:
        created: Optional[Object] = None
        for body in _load_all([manifest]):
            served = self._served_for_body(body)
            with _as_kubectl('create'):
                created = self.api.create(served.resource, self._namespace_of(served, body), body, strict=True)
        if created is None:
            raise ValueError(f'No objects in {manifest!r}.')
        return created

    def get(self, resource: str, name: str) -> Object:
        with _as_kubectl('get'):
            served = self.api.served_by_name(resource)
            return self.api.get(served.resource, self._namespace_of(served), name)

    def find(self, resource: str, name: str) -> Optional[Object]:
        with _as_kubectl('get'):
            served = self.api.served_by_name(resource)
        try:
            return self.api.get(served.resource, self._namespace_of(served), name)
        except clients.APINotFoundError:
            return None

    def list(self, resource: str, *, selector: Optional[str] = None,
             field_selector: Optional[str] = None) -> list[Object]:
        with _as_kubectl('get'):
            served = self.api.served_by_name(resource)
            items, _, _ = self.api.list(served.resource, self._namespace_of(served), label_selector=selector,
                                        field_selector=field_selector)
        return items

    def patch(self, resource: str, name: str, patch: Union[Object, Sequence[Object]], *,
              type: Literal['merge', 'json', 'strategic'] = 'merge', subresource: Optional[str] = None) -> Object:
        if type not in _PATCH_TYPES:
            unsupported(f'{type} patches (only merge and json)')
        with _as_kubectl('patch'):
            served = self.api.served_by_name(resource)
            return self.api.patch(served.resource, self._namespace_of(served), name, patch, _PATCH_TYPES[type],
                                  subresource)  # kubectl patch does not validate strictly

    def delete(self, resource: str, name: str, *, wait: bool = False, timeout: float = DEFAULT_TIMEOUT) -> None:
        with _as_kubectl('delete'):
            served = self.api.served_by_name(resource)
        try:
            self.api.delete(served.resource, self._namespace_of(served), name)
        except clients.APINotFoundError:
            pass
        if wait:
            self.wait_for_deletion(resource, name, timeout=timeout)

    def _served_for_body(self, body: Object) -> Served:
        group, _, version = str(body.get('apiVersion', '')).rpartition('/')
        for resource in self.api.scan():
            if (resource.group, resource.version, resource.kind) == (group, version, body.get('kind')):
                return self.api.served_for(resource)
        raise ValueError(f'The in-memory API serves no {body.get("kind")} in {body.get("apiVersion")}: '
                         f'create its CRD first (the crd fixture).')

    def _namespace_of(self, served: Served, body: Optional[Object] = None) -> Optional[str]:
        if not served.resource.namespaced:
            return None
        return (body or {}).get('metadata', {}).get('namespace') or self.namespace


@contextlib.contextmanager
def _as_kubectl(verb: str) -> Iterator[None]:
    try:
        yield
    except clients.APIError as e:
        stderr = f'Error from server ({e.reason or e.status}): {e}\n'
        raise KubectlError(1, ['kubectl', verb, '(in-memory API)'], '', stderr) from None


def _load_all(manifests: Sequence[Manifest]) -> list[Object]:
    bodies: list[Object] = []
    for manifest in manifests:
        if isinstance(manifest, dict):
            bodies.append(manifest)
        else:
            bodies.extend(doc for doc in yaml.safe_load_all(pathlib.Path(manifest).read_text()) if doc)
    return [item for body in bodies for item in _items(body)]


def _items(body: Any) -> list[Object]:
    return list(body['items']) if body.get('kind') == 'List' else [body]
