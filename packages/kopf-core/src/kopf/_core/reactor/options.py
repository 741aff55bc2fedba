"""
The options of one operator, declared once.

``kopf.run()``, ``kopf.operator()`` and ``kopf.spawn_tasks()`` take the same
keyword arguments (``kopf.run()`` also an event loop). They are the fields of
:class:`OperatorOptions`, and the functions' public signatures are derived from
them by :func:`taking`, so that a new option is added in one place, and users'
type checkers still see every keyword argument with its type.

The options are what the caller said; the defaults that need work (the default
registry, a new vault, an installed client driver) are resolved when the
operator is prepared (see :mod:`running`).
"""
from __future__ import annotations

import asyncio
import dataclasses
import functools
import inspect
from typing import Any, Awaitable, Callable, Collection, Coroutine, Optional, ParamSpec, TypeVar, Union

from kopf._cogs.aiokits import aioadapters
from kopf._cogs.clients import protocols
from kopf._cogs.configs import configuration
from kopf._cogs.structs import credentials, namespaces, references
from kopf._core.actions import lifecycles
from kopf._core.engines import indexing
from kopf._core.intents import registries
from kopf._core.reactor import inventory, observation


@dataclasses.dataclass(frozen=True, kw_only=True)
class OperatorOptions:
    """Everything an operator is run with, as given by the embedding call or ``kopf run``."""

    lifecycle: Optional[lifecycles.LifeCycleFn] = None
    """The order of handlers within one cycle (see ``kopf.lifecycles``)."""

    indexers: Optional[indexing.OperatorIndexers] = None
    """The indices, if the caller wants to see them (e.g. in tests)."""

    registry: Optional[registries.OperatorRegistry] = None
    """The handlers; the default registry (of the decorators) if ``None``."""

    settings: Optional[configuration.OperatorSettings] = None
    """The settings; new default settings if ``None``."""

    memories: Optional[inventory.ObjectMemories] = None
    """The in-memory state of the served objects, if the caller wants to see it."""

    insights: Optional[observation.Insights] = None
    """The resources and namespaces observed, if the caller wants to see them."""

    identity: Optional[str] = None
    """The operator's identity in peering (``user@host/pid`` by default)."""

    standalone: Optional[bool] = None
    """Whether to skip peering (``settings.peering.standalone`` if ``None``)."""

    priority: Optional[int] = None
    """The priority in peering (``settings.peering.priority`` if ``None``)."""

    peering_name: Optional[str] = None
    """The name of the peering object; peering becomes mandatory if given."""

    leader_election: Union[bool, str, None] = None
    """
    Whether only the holder of a Lease handles the objects (``settings.leader_election.enabled`` if ``None``):
    ``True`` for the default Lease (``kopf-leader-<peering name>``), a string for the Lease of that name.
    """

    leader_election_namespace: Optional[str] = None
    """The namespace of the Lease (see ``settings.leader_election.lease_namespace``)."""

    shards: Optional[str] = None
    """``'auto'``: the replicas split the objects among themselves (``settings.sharding.enabled`` if ``None``)."""

    shard_by: Optional[str] = None
    """What automatic sharding hashes: ``'uid'`` or ``'namespace'`` (``settings.sharding.hashed_field``)."""

    liveness_endpoint: Optional[str] = None
    """The URL of the health server, e.g. ``http://0.0.0.0:8080/healthz``; none if ``None``."""

    metrics_endpoint: Optional[str] = None
    """The URL of the Prometheus metrics, e.g. ``http://0.0.0.0:9090/metrics``; none if ``None``."""

    clusterwide: bool = False
    """Whether to serve the whole cluster via the cluster-wide endpoints."""

    namespaces: Collection[references.NamespacePattern] = ()
    """The namespaces to serve: names, globs, negations (``!name``) or compiled regexps."""

    namespace: Optional[references.NamespacePattern] = None
    """One more namespace to serve (the older, singular form of ``namespaces``)."""

    stop_flag: Optional[aioadapters.Flag] = None
    """A flag (event or future) that stops the operator when set."""

    ready_flag: Optional[aioadapters.Flag] = None
    """A flag (event or future) that the operator sets when it has started."""

    vault: Optional[credentials.Vault] = None
    """The credentials' vault; a new one if ``None``."""

    memo: Optional[object] = None
    """The operator-wide memo (``memo`` kwarg of the handlers); a new ``kopf.Memo`` if ``None``."""

    client: Optional[protocols.ClientDriver] = None
    """The API client implementation; the installed one (entry point ``kopf.clients``) if ``None``."""

    _command: Optional[Coroutine[None, None, None]] = None
    """A coroutine to run as a root task beside the operator: when it ends, the operator stops."""

    def __post_init__(self) -> None:
        if self.indexers is not None and not isinstance(self.indexers, indexing.OperatorIndexers):
            raise TypeError(f"indexers= must be a kopf.OperatorIndexers (or None), "
                            f"got {type(self.indexers).__name__}.")
        if self.leader_election is not None and not isinstance(self.leader_election, (bool, str)):
            raise TypeError(f"leader_election= must be True, False, a Lease name, or None; "
                            f"got {type(self.leader_election).__name__}.")
        if self.leader_election == '':
            raise ValueError("leader_election= must be a Lease name or True (for the default Lease), not ''.")
        if self.leader_election is False and self.leader_election_namespace is not None:
            raise ValueError("leader_election_namespace= is given, but leader_election=False turns the leader "
                             "election off: drop one of them.")
        self._check_sharding()
        namespaces.check_namespace_patterns(self.all_namespaces)

    def _check_sharding(self) -> None:
        if self.shards is not None and self.shards != 'auto':
            raise ValueError(f"shards= must be 'auto' (or None for the settings' choice), not {self.shards!r}.")
        if self.shard_by is not None and self.shard_by not in ('uid', 'namespace'):
            raise ValueError(f"shard_by= must be 'uid' or 'namespace', not {self.shard_by!r}.")
        if self.shards is not None and self.leader_election:
            raise ValueError("Automatic sharding and leader election cannot be combined: every replica serves "
                             "its share, or only the leader serves everything. Use one of shards='auto' and "
                             "leader_election=.")

    @property
    def all_namespaces(self) -> tuple[references.NamespacePattern, ...]:
        """The namespace patterns of both ``namespaces`` and ``namespace``."""
        extra = () if self.namespace is None else (self.namespace,)
        return (*self.namespaces, *extra)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunOptions(OperatorOptions):
    """The options of ``kopf.run()``: the operator's, and the event loop to run it in."""

    loop: Optional[asyncio.AbstractEventLoop] = None
    """The event loop to run the operator in; a new one (closed at the end) if ``None``."""

    def operator_options(self) -> OperatorOptions:
        fields = {field.name: getattr(self, field.name) for field in dataclasses.fields(OperatorOptions)}
        return OperatorOptions(**fields)


P = ParamSpec('P')
OptionsT = TypeVar('OptionsT', bound=OperatorOptions)
R = TypeVar('R')


def taking(options_cls: Callable[P, OptionsT]) -> Callable[[Callable[[OptionsT], R]], Callable[P, R]]:
    """
    Give a function of one options object the keyword arguments of that object.

    ``@taking(OperatorOptions) def f(options)`` is called as ``f(registry=..., ...)``;
    the options are built (and checked) at the call.
    """
    def decorate(fn: Callable[[OptionsT], R]) -> Callable[P, R]:
        @functools.wraps(fn)
        def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            return fn(options_cls(*args, **kwargs))
        _show_options(wrapper, options_cls, fn)
        return wrapper
    return decorate


def taking_async(
        options_cls: Callable[P, OptionsT],
) -> Callable[[Callable[[OptionsT], Awaitable[R]]], Callable[P, Coroutine[object, None, R]]]:
    """
    The same as :func:`taking`, for coroutine functions (which stay coroutine functions).

    Their coroutines yield whatever they await yields, and are sent nothing (``None``), as an event loop does.
    """
    def decorate(fn: Callable[[OptionsT], Awaitable[R]]) -> Callable[P, Coroutine[object, None, R]]:
        @functools.wraps(fn)
        async def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
            return await fn(options_cls(*args, **kwargs))
        _show_options(wrapper, options_cls, fn)
        return wrapper
    return decorate


def _show_options(wrapper: Any, options_cls: Callable[..., Any], fn: Callable[..., Any]) -> None:
    """Make help() and ``inspect.signature()`` show the options, not the single argument."""
    returned = inspect.signature(fn).return_annotation
    wrapper.__signature__ = inspect.signature(options_cls).replace(return_annotation=returned)
    del wrapper.__wrapped__
