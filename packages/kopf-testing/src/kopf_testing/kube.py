"""
A small client for tests: objects created, read, patched, deleted and awaited.

It goes through ``kubectl`` of the cluster, so that the test sees the objects
exactly as the API server stores them and touches them as a user would, from
outside the operator. Waiting is polling with a deadline; a timeout reports the
last state seen, which usually says why the expected state was not reached.
"""
import abc
import json
import pathlib
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, Optional, Union

from kopf_testing._polling import DEFAULT_TIMEOUT, patient
from kopf_testing.controlplane import Cluster, KubectlError

Object = dict[str, Any]
Manifest = Union[Object, str, pathlib.Path]  # a body, or a path to a YAML/JSON file


class KubeClient(abc.ABC):
    """
    What tests do to objects, the same on a real cluster (:class:`Kube`) and
    on the in-memory API (:class:`kopf_testing.memory.MemoryKube`), so that one
    test runs unchanged on both.

    ``resource`` is what kubectl takes: ``plural.group`` (``kopfexamples.kopf.dev``),
    ``kind`` or a short name, e.g.::

        kube.create({'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': 'x'}})
        kube.wait_for('kopfexamples.kopf.dev', 'x', lambda obj: 'status' in obj, timeout=30)
    """
    namespace: Optional[str]

    @abc.abstractmethod
    def apply_crd(self, *manifests: Manifest, timeout: float = 60) -> list[str]:
        """Apply CRDs (bodies or YAML files) and wait until all are ``Established``; return their names."""

    @abc.abstractmethod
    def create(self, manifest: Manifest) -> Object:
        """Create the object(s) of a body or a YAML file; return the (last) created object."""

    @abc.abstractmethod
    def find(self, resource: str, name: str) -> Optional[Object]:
        """The object as stored, or ``None`` if it is absent."""

    @abc.abstractmethod
    def list(self, resource: str, *, selector: Optional[str] = None,
             field_selector: Optional[str] = None) -> list[Object]:
        """The objects of the resource, optionally filtered by a label or a field selector."""

    @abc.abstractmethod
    def patch(self, resource: str, name: str, patch: Union[Object, Sequence[Object]], *,
              type: Literal['merge', 'json', 'strategic'] = 'merge', subresource: Optional[str] = None) -> Object:
        """Patch the object (or its ``status`` subresource); return it as patched."""

    @abc.abstractmethod
    def delete(self, resource: str, name: str, *, wait: bool = False, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Request the deletion; with ``wait=True``, also wait until it is gone (finalizers done)."""

    @abc.abstractmethod
    def get(self, resource: str, name: str) -> Object:
        """The object as stored; fails with :class:`KubectlError` (``NotFound``) if it is absent."""

    def wait_for(self, resource: str, name: str, predicate: Callable[[Object], Any], *,
                 timeout: float = DEFAULT_TIMEOUT, interval: Optional[float] = None) -> Object:
        """
        Poll the object until the predicate is truthy for it, and return it.

        Fails after ``timeout`` seconds with the last state seen (or that the
        object was absent), and the predicate's docstring if it has one.
        """
        timeout = patient(timeout)
        deadline = time.monotonic() + timeout
        while True:
            obj = self.find(resource, name)
            if obj is not None and predicate(obj):
                return obj
            if time.monotonic() > deadline:
                what = predicate.__doc__ or getattr(predicate, '__name__', repr(predicate))
                seen = json.dumps(obj, indent=2) if obj is not None else 'absent'
                raise AssertionError(f"{resource} {name!r} did not satisfy {what} in {timeout}s; "
                                     f"the last state seen:\n{seen}")
            time.sleep(self.poll_interval if interval is None else interval)

    def wait_for_deletion(self, resource: str, name: str, *, timeout: float = DEFAULT_TIMEOUT,
                          interval: Optional[float] = None) -> None:
        """Poll until the object is gone; fail with its last state (e.g. its finalizers) if it stays."""
        timeout = patient(timeout)
        deadline = time.monotonic() + timeout
        while (obj := self.find(resource, name)) is not None:
            if time.monotonic() > deadline:
                raise AssertionError(f"{resource} {name!r} is not deleted in {timeout}s; "
                                     f"the last state seen:\n{json.dumps(obj, indent=2)}")
            time.sleep(self.poll_interval if interval is None else interval)


    poll_interval = 0.2


class Kube(KubeClient):
    """Objects of one namespace (or cluster-scoped ones) of a real cluster, via kubectl."""

    def __init__(self, cluster: Cluster, namespace: Optional[str] = None) -> None:
        self.cluster = cluster
        self.namespace = namespace

    def kubectl(self, *args: str, input: Optional[str] = None) -> str:
        """Run kubectl in this namespace (if any); return its stdout; fail with its stderr."""
        scope = ['--namespace', self.namespace] if self.namespace else []
        return self.cluster.kubectl(*scope, *args, input=input).stdout

    def apply_crd(self, *manifests: Manifest, timeout: float = 60) -> list[str]:
        """Apply CRDs (bodies or YAML files) and wait until all are ``Established``; return their names."""
        return apply_crds(self.cluster, *manifests, timeout=timeout)

    def create(self, manifest: Manifest) -> Object:
        """Create the object(s) of a body or a YAML file; return the (last) created object."""
        return _last_object(self.kubectl('create', *_manifest_args(manifest), '-o', 'json', input=_stdin(manifest)))

    def get(self, resource: str, name: str) -> Object:
        obj: Object = json.loads(self.kubectl('get', resource, name, '-o', 'json'))  # one object: a JSON object
        return obj

    def find(self, resource: str, name: str) -> Optional[Object]:
        output = self.kubectl('get', resource, name, '--ignore-not-found', '-o', 'json')
        return json.loads(output) if output.strip() else None

    def list(self, resource: str, *, selector: Optional[str] = None,
             field_selector: Optional[str] = None) -> list[Object]:
        """The objects of the resource, optionally filtered by a label or a field selector."""
        args = ['-l', selector] if selector else []
        args += [f'--field-selector={field_selector}'] if field_selector else []
        listing: dict[str, list[Object]] = json.loads(self.kubectl('get', resource, *args, '-o', 'json'))
        return listing['items']

    def patch(self, resource: str, name: str, patch: Union[Object, Sequence[Object]], *,
              type: Literal['merge', 'json', 'strategic'] = 'merge', subresource: Optional[str] = None) -> Object:
        """Patch the object (or its ``status`` subresource); return it as patched."""
        extra = [f'--subresource={subresource}'] if subresource else []
        output = self.kubectl('patch', resource, name, f'--type={type}', '-p', json.dumps(patch), *extra, '-o', 'json')
        patched: Object = json.loads(output)  # the patched object: a JSON object
        return patched

    def delete(self, resource: str, name: str, *, wait: bool = False, timeout: float = DEFAULT_TIMEOUT) -> None:
        """Request the deletion; with ``wait=True``, also wait until it is gone (finalizers done)."""
        self.kubectl('delete', resource, name, '--ignore-not-found', '--wait=false')
        if wait:
            self.wait_for_deletion(resource, name, timeout=timeout)

def crd_manifest(
        group: str,
        plural: str,
        kind: str,
        *,
        status_subresource: bool = True,
        preserved_status: bool = True,
        short_names: Iterable[str] = (),
        categories: Iterable[str] = (),
        scope: Literal['Namespaced', 'Cluster'] = 'Namespaced',
) -> Object:
    """
    A CRD with one version ``v1``, whose spec keeps any fields.

    ``preserved_status=False`` declares a status with no fields at all: the API
    server then prunes whatever is written there (what an operator must notice).
    """
    status: Object = {'type': 'object'}
    if preserved_status:
        status['x-kubernetes-preserve-unknown-fields'] = True
    version: Object = {
        'name': 'v1', 'served': True, 'storage': True,
        'schema': {'openAPIV3Schema': {'type': 'object', 'properties': {
            'spec': {'type': 'object', 'x-kubernetes-preserve-unknown-fields': True},
            'status': status,
        }}},
    }
    if status_subresource:
        version['subresources'] = {'status': {}}
    names: Object = {'plural': plural, 'singular': kind.lower(), 'kind': kind}
    if short_names:
        names['shortNames'] = list(short_names)
    if categories:
        names['categories'] = list(categories)
    return {
        'apiVersion': 'apiextensions.k8s.io/v1', 'kind': 'CustomResourceDefinition',
        'metadata': {'name': f'{plural}.{group}'},
        'spec': {'group': group, 'scope': scope, 'names': names, 'versions': [version]},
    }


def apply_crds(cluster: Cluster, *manifests: Manifest, timeout: float = 60) -> list[str]:
    """Apply the CRDs (bodies or YAML files) and wait until the API server serves them all."""
    names: list[str] = []
    for manifest in manifests:
        output = cluster.kubectl('apply', *_manifest_args(manifest), '-o', 'name', input=_stdin(manifest)).stdout
        names.extend(line for line in output.split() if line.startswith('customresourcedefinition'))
    if not names:
        raise ValueError(f'No CustomResourceDefinition in {manifests!r}.')
    try:
        cluster.kubectl('wait', '--for=condition=established', f'--timeout={timeout}s', *names)
    except KubectlError as e:
        raise AssertionError(f'The CRDs are not Established in {timeout}s: {e.stderr}') from None
    return [name.split('/', 1)[1] for name in names]


def _manifest_args(manifest: Manifest) -> list[str]:
    return ['-f', '-'] if isinstance(manifest, dict) else ['-f', str(manifest)]


def _stdin(manifest: Manifest) -> Optional[str]:
    return json.dumps(manifest) if isinstance(manifest, dict) else None


def _last_object(output: str) -> Object:
    """kubectl prints one object, or a ``List`` of them when the file has several."""
    parsed: Object = json.loads(output)
    return parsed['items'][-1] if parsed.get('kind') == 'List' else parsed
