"""
The resources that the in-memory API serves: a few built-in ones, plus the CRDs created in it.

Only what operators commonly touch is built in (namespaces, events, CRDs);
anything else is a CRD away. Each resource has one version: CRDs with several
served versions would need conversions, so they are refused.
"""
import dataclasses
from typing import Any, Optional

from kopf import clients
from kopf_testing.memory._errors import unsupported
from kopf_testing.memory._schema import Schema, check_supported

_VERBS = frozenset({'create', 'delete', 'get', 'list', 'patch', 'update', 'watch', 'deletecollection'})


@dataclasses.dataclass(frozen=True)
class Served:
    """A resource as served, with what the store needs to know about its objects."""
    resource: clients.Resource
    schema: Optional[Schema] = None  # None: not pruned (the built-in resources)
    has_generation: bool = True  # namespaces and events have no metadata.generation

    @property
    def has_status(self) -> bool:
        return 'status' in self.resource.subresources


def builtin_resources() -> list[Served]:
    def make(group: str, plural: str, kind: str, *, namespaced: bool, generation: bool = False,
             short: frozenset[str] = frozenset(), sub: frozenset[str] = frozenset()) -> Served:
        resource = clients.Resource(group=group, version='v1', plural=plural, kind=kind, singular=kind.lower(),
                                    shortcuts=short, namespaced=namespaced, subresources=sub, verbs=_VERBS)
        return Served(resource, has_generation=generation)
    return [
        make('', 'namespaces', 'Namespace', namespaced=False, short=frozenset({'ns'}), sub=frozenset({'status'})),
        make('', 'events', 'Event', namespaced=True, short=frozenset({'ev'})),
        make('apiextensions.k8s.io', 'customresourcedefinitions', 'CustomResourceDefinition', namespaced=False,
             generation=True, short=frozenset({'crd', 'crds'}), sub=frozenset({'status'})),
    ]


def served_from_crd(crd: dict[str, Any]) -> Served:
    spec = crd.get('spec', {})
    versions = [version for version in spec.get('versions', []) if version.get('served')]
    if len(versions) != 1:
        unsupported(f'CRDs with {len(versions)} served versions (only one, since there are no conversions)')
    version, names = versions[0], spec.get('names', {})
    schema = version.get('schema', {}).get('openAPIV3Schema', {})
    check_supported(schema)
    unsupported_subresources = set(version.get('subresources', {})) - {'status'}
    if unsupported_subresources:
        unsupported(f'the subresources {", ".join(sorted(unsupported_subresources))}')
    resource = clients.Resource(
        group=spec['group'], version=version['name'], plural=names['plural'], kind=names['kind'],
        singular=names.get('singular', names['kind'].lower()), shortcuts=frozenset(names.get('shortNames', [])),
        categories=frozenset(names.get('categories', [])), namespaced=spec.get('scope') == 'Namespaced',
        subresources=frozenset(version.get('subresources', {})), verbs=_VERBS)
    return Served(resource, schema=schema)
