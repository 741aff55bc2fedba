"""
The pytest plugin of kopf-testing (enabled when the package is installed).

It only adds fixtures and two options; tests that do not use them are not
affected. Every fixture's name starts with ``kopf_``, so that none of them
shadows or is shadowed by a fixture of the project under test.

- ``kopf_cluster`` (session-wide): a real Kubernetes API, chosen by
  ``--kopf-cluster`` (or ``$KOPF_TESTING_CLUSTER`` if the option is not given):
  ``local`` (the default) starts the local control plane of
  :mod:`kopf_testing.controlplane` (built on first use, then seconds);
  ``existing`` uses the cluster of ``$KUBECONFIG`` as is, only when asked for:
  a ``$KUBECONFIG`` in the environment is never used on its own, since the
  fixtures create namespaces and CRDs; ``k3d`` creates a throwaway k3d cluster.
  ``$KUBECONFIG`` is set to the chosen cluster for the session, so that
  operators and subprocesses find it.
  ``memory`` uses no cluster at all, but a fresh in-memory API per test
  (:mod:`kopf_testing.memory`): ``kopf_namespace``, ``kopf_crd``, ``kopf_kube``
  and ``kopf_operator`` work the same on it, so the same tests run in
  milliseconds; ``kopf_cluster`` and ``kopf_operator_process`` (which need a
  real API server) fail with a clear message.
  ``--kopf-feature-gates=ShardedListAndWatch=true,...`` sets the local
  cluster's feature gates (``kopf_feature_gates``); other kinds refuse it.
- ``kopf_gated_cluster``: ``kopf_gated_cluster({'ShardedListAndWatch': True})``
  is a local cluster with these gates changed, for the tests that need them so
  while the others keep the default ``kopf_cluster``: started on first use,
  shared by the session, stopped at its end.
- ``kopf_namespace``: a fresh namespace per test, deleted afterwards.
- ``kopf_crd``: ``kopf_crd('crd.yaml')`` applies CRDs (files or bodies) and
  waits until they are ``Established``. CRDs are cluster-wide, so they stay for
  the session.
- ``kopf_kube``: a :class:`~kopf_testing.kube.Kube` for the test's namespace:
  create, get, patch, delete objects, and ``wait_for`` a condition (a timeout
  reports the last state seen).
- ``kopf_operator``: ``kopf_operator('operator.py')`` or ``kopf_operator()``
  (the handlers decorated in the test) runs an operator in a thread, serving
  the test's namespace, and stops it at teardown; the test fails if the
  operator logged an error not listed in ``expected_errors=[regexp, ...]``.
- ``kopf_operator_process``: the same as a ``kopf run`` subprocess, as users run it.
- ``kopf_registry``: a fresh, empty registry, made the default for the test
  (so that the handlers decorated in the test land there), restored afterwards.
- ``kopf_runner``: a factory of :class:`KopfRunner` with that registry, e.g.
  ``with kopf_runner(['run', '-A', 'operator.py']) as runner: ...``.

The first start of the local control plane builds its binaries (minutes): the
build's progress is shown on pytest's terminal, past its output capturing.

A complete test::

    def test_creation_is_handled(kopf_crd, kopf_kube, kopf_operator):
        kopf_crd('crd.yaml')
        kopf_operator('operator.py')
        kopf_kube.create('obj.yaml')
        kopf_kube.wait_for('kopfexamples.kopf.dev', 'kopf-example-1',
                           lambda obj: 'create_fn' in obj.get('status', {}))
"""
from __future__ import annotations

import contextlib
import os
import pathlib
import secrets
from typing import Any, Callable, Iterator, Optional, Sequence, Union

import pytest

import kopf
from kopf_testing._inprocess import InProcessOperator
from kopf_testing._localcluster import started_local_cluster
from kopf_testing._logs import unexpected
from kopf_testing._process import OperatorProcess
from kopf_testing._runner import KopfRunner
from kopf_testing.controlplane import (
    CLUSTER_ENV_VAR,
    KINDS,
    Cluster,
    FeatureGates,
    FeatureGatesError,
    choose_kind,
    parse_feature_gates,
    run_k3d_cluster,
    use_existing_cluster,
)
from kopf_testing.kube import Kube, KubeClient, Manifest, apply_crds
from kopf_testing.memory import MemoryApi, MemoryDriver, MemoryKube

RunningOperator = Union[InProcessOperator, OperatorProcess]
MEMORY = 'memory'
CHOICES = (*KINDS, MEMORY)
_KIND_KEY = pytest.StashKey[str]()


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        '--kopf-cluster', choices=CHOICES, default=None,
        help='the cluster for the kopf-testing fixtures: local (a local control plane started here), '
             'existing (the one of $KUBECONFIG, used only when asked for), k3d (created and deleted here), '
             f'or memory (an in-memory API per test); default: ${CLUSTER_ENV_VAR} if set, else local',
    )
    parser.addoption(
        '--kopf-feature-gates', default='', metavar='NAME=true|false,...',
        help='feature gates of the local cluster (--kopf-cluster=local), e.g. ShardedListAndWatch=true; '
             "the others keep the pinned release's defaults",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Choose the kind of cluster; refuse a bad choice or feature gates for other clusters before any test."""
    try:
        kind = choose_kind(config.getoption('--kopf-cluster', default=None), choices=CHOICES)
    except ValueError as e:
        raise pytest.UsageError(str(e)) from None
    config.stash[_KIND_KEY] = kind
    text = config.getoption('--kopf-feature-gates', default='')
    if not text:
        return
    try:
        parse_feature_gates(text)
    except FeatureGatesError as e:
        raise pytest.UsageError(f'--kopf-feature-gates: {e}') from None
    if kind != 'local':
        raise pytest.UsageError(f'--kopf-feature-gates sets the gates of the local control plane, but the cluster '
                                f'is {kind}: add --kopf-cluster=local, or set the gates where that cluster is made.')


@pytest.fixture(scope='session')
def kopf_feature_gates(request: pytest.FixtureRequest) -> dict[str, bool]:
    """The local cluster's gates from ``--kopf-feature-gates`` (empty: the release's defaults)."""
    return parse_feature_gates(request.config.getoption('--kopf-feature-gates'))


@pytest.fixture(scope='session')
def kopf_cluster_kind(request: pytest.FixtureRequest) -> str:
    """The kind of cluster chosen: ``local`` (the default), ``existing``, ``k3d``, or ``memory``."""
    return request.config.stash[_KIND_KEY]


@pytest.fixture
def kopf_memory_api(kopf_cluster_kind: str) -> MemoryApi:
    """The test's own in-memory API (with ``--kopf-cluster=memory``)."""
    if kopf_cluster_kind != MEMORY:
        pytest.fail(f'kopf_memory_api is for --kopf-cluster=memory, not {kopf_cluster_kind}.', pytrace=False)
    return MemoryApi()


@pytest.fixture(scope='session')
def kopf_cluster(
        request: pytest.FixtureRequest, kopf_cluster_kind: str, kopf_feature_gates: dict[str, bool],
        tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Cluster]:
    """
    The session's real Kubernetes API (a ``Cluster``: ``kubectl()``, ``kubeconfig``, ``server``, ...).

    The local control plane by default; ``--kopf-cluster=existing`` (or
    ``$KOPF_TESTING_CLUSTER=existing``) for the cluster of ``$KUBECONFIG``;
    ``--kopf-cluster=k3d`` for a throwaway k3d cluster. ``$KUBECONFIG`` points
    to it during the session. Fails with ``--kopf-cluster=memory``.
    """
    kind = kopf_cluster_kind
    if kind == MEMORY:
        pytest.fail('This test needs a real cluster (the kopf_cluster fixture, directly or via '
                    'kopf_operator_process); run it with --kopf-cluster=local, existing or k3d, not memory.',
                    pytrace=False)
    with contextlib.ExitStack() as stack:
        if kind == 'local':
            handle = stack.enter_context(started_local_cluster(request.config, tmp_path_factory,
                                                                feature_gates=kopf_feature_gates))
        elif kind == 'k3d':
            handle = stack.enter_context(run_k3d_cluster(tmp_path_factory.mktemp('k3d')))
        else:
            kubeconfigs = os.environ.get('KUBECONFIG') or str(pathlib.Path.home() / '.kube' / 'config')
            handle = use_existing_cluster(kubeconfigs, tmp_path_factory.mktemp('existing'))
        monkeypatch = stack.enter_context(pytest.MonkeyPatch.context())
        monkeypatch.setenv('KUBECONFIG', str(handle.kubeconfig))
        yield handle


@pytest.fixture(scope='session')
def kopf_gated_cluster(
        request: pytest.FixtureRequest, kopf_cluster_kind: str, kopf_feature_gates: dict[str, bool],
        tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[[FeatureGates], Cluster]]:
    """
    ``kopf_gated_cluster({'ShardedListAndWatch': True})``: a local cluster with these gates (over the session's).

    One per distinct set of gates, started when first asked for and stopped at
    the session's end; the session's own ``kopf_cluster`` if the gates are its own.
    ``$KUBECONFIG`` stays the session cluster's: use the returned cluster
    explicitly (``Kube(gated, namespace)``, ``gated.kubectl(...)``,
    ``gated.kubeconfig``). Tests that ask for it are skipped on other kinds of
    clusters, whose gates are set where those clusters are made.
    """
    started: dict[frozenset[tuple[str, bool]], Cluster] = {}
    with contextlib.ExitStack() as stack:
        def get(feature_gates: FeatureGates) -> Cluster:
            if kopf_cluster_kind != 'local':
                pytest.skip(f'This test sets feature gates, which needs the local control plane '
                            f'(--kopf-cluster=local), not {kopf_cluster_kind}.')
            gates = {**kopf_feature_gates, **feature_gates}
            if gates == kopf_feature_gates:
                cluster: Cluster = request.getfixturevalue('kopf_cluster')  # the fixture's value
                return cluster
            key = frozenset(gates.items())
            if key not in started:
                started[key] = stack.enter_context(started_local_cluster(
                    request.config, tmp_path_factory, feature_gates=gates, dir_name='controlplane-gated'))
            return started[key]
        yield get


@pytest.fixture
def kopf_namespace(request: pytest.FixtureRequest, kopf_cluster_kind: str) -> Iterator[str]:
    """A new, empty namespace (``test-<random>``) for the test; its deletion is requested afterwards, not awaited."""
    name = f'test-{secrets.token_hex(4)}'
    if kopf_cluster_kind == MEMORY:
        MemoryKube(request.getfixturevalue('kopf_memory_api')).create(
            {'apiVersion': 'v1', 'kind': 'Namespace', 'metadata': {'name': name}})
        yield name  # the whole in-memory API is dropped after the test
        return
    cluster: Cluster = request.getfixturevalue('kopf_cluster')
    cluster.kubectl('create', 'namespace', name)
    yield name
    cluster.kubectl('delete', 'namespace', name, '--wait=false', '--ignore-not-found')


@pytest.fixture
def kopf_kube(request: pytest.FixtureRequest, kopf_cluster_kind: str, kopf_namespace: str) -> KubeClient:
    """
    The objects of the test's namespace: ``create``, ``get``, ``find``, ``list``, ``patch``, ``delete``.

    ``wait_for(resource, name, predicate, timeout=120)`` waits for an object's
    state (a timeout reports the last state seen), ``apply_crd(...)`` applies CRDs.
    """
    if kopf_cluster_kind == MEMORY:
        return MemoryKube(request.getfixturevalue('kopf_memory_api'), kopf_namespace)
    return Kube(request.getfixturevalue('kopf_cluster'), kopf_namespace)


@pytest.fixture
def kopf_crd(request: pytest.FixtureRequest, kopf_cluster_kind: str) -> Callable[..., list[str]]:
    """
    ``kopf_crd('crd.yaml', body, ..., timeout=60)``: apply CRDs and wait until they are ``Established``.

    Files (YAML, several documents) or bodies; returns the CRDs' names. CRDs are
    cluster-wide, so they stay for the session (or the test, in memory).
    """
    if kopf_cluster_kind == MEMORY:
        return MemoryKube(request.getfixturevalue('kopf_memory_api')).apply_crd
    cluster: Cluster = request.getfixturevalue('kopf_cluster')

    def apply(*manifests: Manifest, timeout: float = 60) -> list[str]:
        return apply_crds(cluster, *manifests, timeout=timeout)
    return apply


@pytest.fixture
def kopf_operator(
        request: pytest.FixtureRequest, kopf_cluster_kind: str, kopf_namespace: str,
        kopf_registry: kopf.OperatorRegistry,
) -> Iterator[Callable[..., InProcessOperator]]:
    """
    ``kopf_operator('operator.py', ...)`` or ``kopf_operator()``: an operator in a thread, in the test's namespace.

    With no paths, it runs the handlers decorated in the test (``kopf_registry``).
    It is stopped at teardown, and the test fails if it logged an error that
    matches none of ``expected_errors=[regexp, ...]``. Also ``settings=`` and
    ``timeout=`` (to start); returns the running operator (``wait_for(regexp)``).
    """
    memory = kopf_cluster_kind == MEMORY
    client = MemoryDriver(request.getfixturevalue('kopf_memory_api')) if memory else None
    if not memory:
        request.getfixturevalue('kopf_cluster')  # started, and $KUBECONFIG set for the operator's login
    with _operators_checked_at_teardown() as track:
        def run(*paths: Union[str, pathlib.Path], settings: Optional[kopf.OperatorSettings] = None,
                expected_errors: Sequence[str] = (), timeout: float = 60) -> InProcessOperator:
            running = InProcessOperator(registry=kopf_registry, namespace=kopf_namespace, paths=paths,
                                        settings=settings or kopf.OperatorSettings(), client=client, timeout=timeout)
            track(running, expected_errors)
            return running.start()
        yield run


@pytest.fixture
def kopf_operator_process(
        kopf_cluster: Cluster, kopf_namespace: str, tmp_path: pathlib.Path,
) -> Iterator[Callable[..., OperatorProcess]]:
    """
    ``kopf_operator_process('operator.py', '--verbose', ...)``: ``kopf run ... -n NAMESPACE`` as a subprocess.

    Started unless ``start=False``; ``env=`` for its environment, ``log_name=``
    for its log file in the test's ``tmp_path``. Stopped at teardown; the test
    fails on an unexpected error in its log (``expected_errors=[regexp, ...]``).
    Real clusters only.
    """
    with _operators_checked_at_teardown() as track:
        def make(*args: str, env: Optional[dict[str, str]] = None, start: bool = True,
                 expected_errors: Sequence[str] = (), log_name: str = 'operator.log') -> OperatorProcess:
            """``kopf run ARGS -n NAMESPACE``; started unless ``start=False`` (then ``.start()`` it)."""
            process = OperatorProcess([*args, '-n', kopf_namespace], log_path=tmp_path / log_name, env=env)
            track(process, expected_errors)
            if start:
                process.start()
            return process
        yield make


@contextlib.contextmanager
def _operators_checked_at_teardown() -> Iterator[Callable[[RunningOperator, Sequence[str]], None]]:
    """Stop all operators made in the block; then fail if any logged an error that was not expected."""
    tracked: list[tuple[RunningOperator, Sequence[str]]] = []
    with contextlib.ExitStack() as stack:  # each is stopped even if stopping another fails
        def track(running: RunningOperator, expected: Sequence[str]) -> None:
            tracked.append((running, expected))
            stack.callback(running.stop)
        yield track
    errors = [line for running, expected in tracked for line in unexpected(running.error_lines, expected)]
    if errors:
        pytest.fail('The operator logged unexpected errors (pass expected_errors=[regexp, ...] if expected):\n'
                    + '\n'.join(errors), pytrace=False)


@pytest.fixture
def kopf_registry() -> Iterator[kopf.OperatorRegistry]:
    """A fresh, empty registry, the default one during the test (the handlers it decorates land there)."""
    previous = kopf.get_default_registry()
    registry = kopf.OperatorRegistry()
    kopf.set_default_registry(registry)
    try:
        yield registry
    finally:
        kopf.set_default_registry(previous)


@pytest.fixture
def kopf_runner(kopf_registry: kopf.OperatorRegistry) -> Callable[..., KopfRunner]:
    """``kopf_runner(['run', '-A', 'operator.py'])``: a ``KopfRunner`` with the test's ``kopf_registry``."""
    def make(*args: Any, **kwargs: Any) -> KopfRunner:
        kwargs.setdefault('registry', kopf_registry)
        return KopfRunner(*args, **kwargs)
    return make
