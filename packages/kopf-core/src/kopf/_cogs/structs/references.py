"""
References to resources, and selectors that match them.

A :class:`Selector` is what a user writes in a decorator (``'kopfexamples'``,
``'kopf.dev/v1', 'kopfexamples'``, ``kind='KopfExample'``, ...). It is resolved
against the cluster's discovery into zero or more :class:`Resource` instances,
which are what the API client needs to build URLs. The resolution rules mimic
``kubectl``: any name (plural, singular, kind, short name) matches, core ``v1``
wins over same-named resources of other groups, and an ambiguous specific name
is served by nobody (with a warning) rather than by an arbitrary pick.

A selector can also be a callable that takes a :class:`Resource` and tells
whether it is served (``@kopf.on.event(lambda r: r.group == 'apps')``).
"""
from __future__ import annotations

import dataclasses
import enum
import re
import urllib.parse
from typing import Callable, Collection, FrozenSet, Mapping, Optional, TypeVar, Union

_T = TypeVar('_T')

NamespacePattern = Union[str, re.Pattern[str]]  # a compiled regexp is matched as is (fullmatch)
Namespace = Optional[str]  # None means "cluster-wide" (all namespaces) or a cluster-scoped object


class EverythingMarker(enum.Enum):
    EVERYTHING = enum.auto()

    def __repr__(self) -> str:
        return 'kopf.EVERYTHING'


EVERYTHING = EverythingMarker.EVERYTHING

# What a user may write positionally in decorators and in settings' selector mappings.
SelectorName = Union[str, EverythingMarker]
SelectorFn = Callable[['Resource'], bool]

# The API groups that serve the cluster's k8s-events (the same objects in both).
_EVENT_GROUPS = frozenset({'', 'events.k8s.io'})


@dataclasses.dataclass(frozen=True)
class Resource:
    """
    A reference to a very specific custom or built-in resource kind.

    Only ``group``, ``version`` and ``plural`` are needed to form the API URLs;
    the other names are kept to match selectors and for logging.
    """
    group: str
    version: str
    plural: str
    kind: Optional[str] = None
    singular: Optional[str] = None
    shortcuts: FrozenSet[str] = frozenset()
    categories: FrozenSet[str] = frozenset()
    subresources: FrozenSet[str] = frozenset()
    namespaced: Optional[bool] = None
    preferred: bool = True
    verbs: FrozenSet[str] = frozenset()

    def __repr__(self) -> str:
        # As the logs show it: plural.version.group (pods.v1 for the core API).
        return '.'.join(part for part in (self.plural, self.version, self.group) if part)

    @property
    def name(self) -> str:
        """``plural.group`` as ``kubectl`` names it (``pods`` for the core group)."""
        return f'{self.plural}.{self.group}'.strip('.')

    @property
    def api_version(self) -> str:
        """The ``apiVersion`` of the resource's objects: ``v1`` or ``group/version``."""
        return f'{self.group}/{self.version}' if self.group else self.version

    def get_url(
            self,
            *,
            server: Optional[str] = None,
            namespace: Namespace = None,
            name: Optional[str] = None,
            subresource: Optional[str] = None,
            params: Optional[Mapping[str, str]] = None,
    ) -> str:
        """
        Build the URL (or path if no ``server``) of the resource's endpoint.

        A ``None`` namespace of a namespaced resource means cluster-wide
        (e.g. for listing/watching across all namespaces). Names are refused
        for cluster-wide access of namespaced resources, since such an URL is
        invalid in Kubernetes.
        """
        if subresource is not None and name is None:
            raise ValueError("Subresources can be used only with specific resources by their name.")
        if not self.namespaced and namespace is not None:
            raise ValueError(f"Specific namespaces are not supported for cluster-scoped resources: {self!r}.")
        if self.namespaced and namespace is None and name is not None:
            raise ValueError(f"Specific objects of {self!r} need a namespace, not a cluster-wide URL.")

        parts = ['/api' if not self.group else '/apis']
        if self.group:
            parts.append(self.group)
        parts.append(self.version)
        if namespace is not None:
            parts.extend(['namespaces', namespace])
        parts.append(self.plural)
        if name is not None:
            parts.append(name)
        if subresource is not None:
            parts.append(subresource)
        path = '/'.join(parts)
        # Selectors contain '=', ',', '!', spaces: they must be escaped to survive as query values.
        query = urllib.parse.urlencode(params or {})
        url = path if not query else f'{path}?{query}'
        return url if server is None else server.rstrip('/') + url


@dataclasses.dataclass(frozen=True, init=False, repr=False)
class Selector:
    """
    A resource specification as a user writes it: matched against discovery.

    Positionals follow ``kubectl``: the rightmost value is a name (any of the
    plural, singular, kind or short names), the values before it are the API
    group and version, either separated or joined with a slash. A single value
    ``'plural.group'`` is split like ``kubectl get deployments.apps`` does.
    """
    arg1: dataclasses.InitVar[Optional[SelectorName | SelectorFn]]
    arg2: dataclasses.InitVar[Optional[SelectorName | SelectorFn]]
    arg3: dataclasses.InitVar[Optional[SelectorName | SelectorFn]]
    group: Optional[str]
    version: Optional[str]
    kind: Optional[str]
    plural: Optional[str]
    singular: Optional[str]
    shortcut: Optional[str]
    category: Optional[str]
    any_name: Optional[SelectorName]
    fn: Optional[SelectorFn]

    def __init__(
            self,
            arg1: Optional[SelectorName | SelectorFn] = None,
            arg2: Optional[SelectorName | SelectorFn] = None,
            arg3: Optional[SelectorName | SelectorFn] = None,
            *,
            group: Optional[str] = None,
            version: Optional[str] = None,
            kind: Optional[str] = None,
            plural: Optional[str] = None,
            singular: Optional[str] = None,
            shortcut: Optional[str] = None,
            category: Optional[str] = None,
            any_name: Optional[SelectorName] = None,
            fn: Optional[SelectorFn] = None,
    ) -> None:
        _check_positionals(arg1, arg2, arg3)
        if callable(arg1):
            if fn is not None:
                raise TypeError("The callable resource selector is given twice: positionally and as fn=.")
            fn = arg1  # the group and version may still narrow it down, as keywords
        elif callable(arg2) or callable(arg3):
            raise TypeError("A callable resource selector can only be the only positional value.")
        else:
            # The keywords give what the positionals do not; the same thing given both ways must agree.
            given_group, given_version, given_name = _parse_positionals(arg1, arg2, arg3)
            group = _merge('group', given_group, group)
            version = _merge('version', given_version, version)
            any_name = _merge('any_name', given_name, any_name)

        names = [kind, plural, singular, shortcut, category, any_name, fn]
        if sum(name is not None for name in names) > 1:
            raise TypeError("Ambiguous resource specification: only one of the names can be given: "
                            "the name positionally, kind=, plural=, singular=, shortcut=, category=, "
                            "or a callable.")
        if all(name is None for name in names):
            raise TypeError("Unspecific resource with no names: give a resource name positionally "
                            "(e.g. 'kopfexamples', 'kopf.dev/v1', 'kopfexamples'), "
                            "or one of kind=, plural=, singular=, shortcut=, category=, "
                            "or kopf.EVERYTHING, or a callable that takes a kopf.Resource.")
        set_ = object.__setattr__  # the dataclass is frozen
        for attr, val in [('group', group), ('version', version), ('kind', kind),
                          ('plural', plural), ('singular', singular), ('shortcut', shortcut),
                          ('category', category), ('any_name', any_name), ('fn', fn)]:
            set_(self, attr, val)

    def __repr__(self) -> str:
        kwargs = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        kwtext = ', '.join(f'{key}={val!r}' for key, val in kwargs.items() if val is not None)
        return f'{type(self).__name__}({kwtext})'

    @property
    def is_specific(self) -> bool:
        """Whether one single resource is meant (so ambiguity is an error)."""
        if self.kind is not None or self.shortcut is not None:
            return True
        if self.plural is not None or self.singular is not None:
            return True
        return self.any_name is not None and not isinstance(self.any_name, EverythingMarker)

    def check(self, resource: Resource) -> bool:
        """Whether the selector matches a resource (regardless of other resources)."""
        if self.group is not None and self.group != resource.group:
            return False
        if self.version is not None and self.version != resource.version:
            return False
        if self.version is None and not resource.preferred and self.fn is None:
            return False  # a callable sees every version, and decides by resource.version itself
        if self.kind is not None and self.kind != resource.kind:
            return False
        if self.plural is not None and self.plural != resource.plural:
            return False
        if self.singular is not None and self.singular != resource.singular:
            return False
        if self.shortcut is not None and self.shortcut not in resource.shortcuts:
            return False
        if self.category is not None and self.category not in resource.categories:
            return False
        if self.any_name is EVERYTHING or self.fn is not None:
            # Core v1 events would cause an "event explosion" when posting our own events;
            # events.k8s.io serves the very same objects under another group, so it goes too.
            if resource.group in _EVENT_GROUPS and resource.plural == 'events':
                return False
        if self.any_name is not None and self.any_name is not EVERYTHING:
            names = {resource.kind, resource.plural, resource.singular, *resource.shortcuts}
            if self.any_name not in names:
                return False
        return self.fn is None or bool(self.fn(resource))

    def select(self, resources: Collection[Resource]) -> Collection[Resource]:
        """
        Select the resources matching this selector, resolving ambiguity.

        Core v1 resources take priority over same-named resources of other
        groups (as in ``kubectl``). If a specific name still matches resources
        of several groups, nothing is selected: serving an arbitrary one would
        be a silent surprise; the caller warns about it (see ``is_ambiguous``).
        """
        matched = [resource for resource in resources if self.check(resource)]
        if not self.is_specific:
            return set(matched)
        corev1 = [resource for resource in matched if resource.group == '' and resource.version == 'v1']
        if corev1:
            return set(corev1)
        if len({resource.group for resource in matched}) > 1:
            return set()
        return set(matched)

    def is_ambiguous(self, resources: Collection[Resource]) -> bool:
        matched = [resource for resource in resources if self.check(resource)]
        return bool(matched) and not self.select(resources)


def _check_positionals(
        arg1: object,
        arg2: object,
        arg3: object,
) -> None:
    """Refuse what cannot be a resource specification, before parsing it."""
    if any(callable(arg) for arg in (arg1, arg2, arg3)) and sum(arg is not None for arg in (arg1, arg2, arg3)) > 1:
        raise TypeError("A callable resource selector takes no other positional names; "
                        "narrow it with group= and version=, or check them in the callable.")
    for arg in (arg1, arg2, arg3):
        if arg is not None and not callable(arg) and not isinstance(arg, (str, EverythingMarker)):
            raise TypeError(f"A resource selector must be a string, kopf.EVERYTHING, "
                            f"or a callable that takes a kopf.Resource (leftmost), got {arg!r}.")


def _merge(keyword: str, positional: _T, explicit: _T) -> _T:
    """A part of the selector given positionally and/or as a keyword: either, or both the same."""
    if positional is None:
        return explicit
    if explicit is not None and explicit != positional:
        raise TypeError(f"The resource specification is contradictory: {positional!r} positionally, "
                        f"but {keyword}={explicit!r}.")
    return positional


# The parts of a selector that the positionals give: group, version, name; None if they do not give it.
_Parts = tuple[Optional[str], Optional[str], Optional[SelectorName]]


def _parse_positionals(arg1: Optional[SelectorName], arg2: Optional[SelectorName],
                       arg3: Optional[SelectorName]) -> _Parts:
    if arg3 is not None:
        return _parse_three(arg1, arg2, arg3)
    if arg2 is not None:
        return _parse_two(arg1, arg2)
    if arg1 is not None:
        return _parse_one(arg1)
    return None, None, None


def _parse_one(arg1: SelectorName) -> _Parts:
    if isinstance(arg1, EverythingMarker):
        return None, None, arg1
    if '/' in arg1:
        # 'v1/pods', 'kopf.dev/kopfexamples', 'kopf.dev/v1/kopfexamples': the name is last.
        api, _, name = arg1.rpartition('/')
        if not api or not name or _is_version(name):
            raise TypeError(f"Resource name is missing after the API specification: {arg1!r}. "
                            f"Use e.g. ({arg1!r}, 'kopfexamples').")
        return _parse_two(api, name)
    if '.' in arg1:
        # kubectl-like: plural.group, or plural.version.group, or plural.v1 for the core API.
        name, rest = arg1.split('.', 1)
        first, _, remainder = rest.partition('.')
        if rest == 'v1':
            return '', 'v1', name
        if _is_version(first) and remainder:
            return remainder, first, name
        return rest, None, name
    return None, None, arg1


def _parse_two(arg1: Optional[SelectorName], arg2: SelectorName) -> _Parts:
    if isinstance(arg1, EverythingMarker) or arg1 is None:
        raise TypeError("The resource name must be the rightmost positional value, "
                        "after the API group and version.")
    if '/' in arg1:
        group, version = arg1.split('/', 1)
        return group, version, arg2
    if arg1 == 'v1':
        return '', 'v1', arg2
    return arg1, None, arg2  # the group only: the version is the preferred one, unless given as version=


def _parse_three(arg1: Optional[SelectorName], arg2: Optional[SelectorName], arg3: SelectorName) -> _Parts:
    if isinstance(arg1, EverythingMarker) or isinstance(arg2, EverythingMarker):
        raise TypeError("kopf.EVERYTHING can only be the rightmost positional value.")
    if arg1 is None or arg2 is None:
        raise TypeError("Both the API group and version must be given with three positionals.")
    if '/' in arg1 or '/' in arg2:
        raise TypeError("With three positionals, the API group and version must be separate: "
                        f"got {arg1!r}, {arg2!r}.")
    return arg1, arg2, arg3


_VERSION_RE = re.compile(r'^v\d+(?:(?:alpha|beta)\d+)?$')


def _is_version(text: str) -> bool:
    return bool(_VERSION_RE.match(text))
