"""
The cluster for the integration tests: ``--cluster=local|existing|k3d``.

- ``local`` (the default unless ``$KUBECONFIG`` is set): etcd, kube-apiserver
  and kube-controller-manager on 127.0.0.1, built from source on first use
  (minutes, then cached) and started once per session (seconds). Its logs stay
  in pytest's temporary directory (``controlplane0/logs/``) after the session.
- ``existing`` (the default if ``$KUBECONFIG`` is set): that cluster, as is.
- ``k3d``: a throwaway k3d cluster, if k3d and Docker are available.

Fixtures: ``cluster`` (session-wide, see ``integration.controlplane.Cluster``;
it also sets ``$KUBECONFIG`` for subprocesses) and ``namespace`` (a fresh one
per test).
"""
import contextlib
import os
import pathlib
import secrets
from collections.abc import Iterator

import pytest

from integration.controlplane import (
    KINDS,
    Cluster,
    choose_kind,
    run_k3d_cluster,
    run_local_cluster,
    use_existing_cluster,
)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        '--cluster', choices=KINDS, default=None,
        help='the cluster to test against: local (built and started here), existing ($KUBECONFIG), '
             'or k3d (created and deleted here); default: existing if $KUBECONFIG is set, else local',
    )


@pytest.fixture(scope='session')
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    kind = choose_kind(request.config.getoption('--cluster'))
    with contextlib.ExitStack() as stack:
        if kind == 'local':
            handle = stack.enter_context(run_local_cluster(tmp_path_factory.mktemp('controlplane')))
        elif kind == 'k3d':
            handle = stack.enter_context(run_k3d_cluster(tmp_path_factory.mktemp('k3d')))
        else:
            kubeconfigs = os.environ.get('KUBECONFIG') or str(pathlib.Path.home() / '.kube' / 'config')
            handle = use_existing_cluster(kubeconfigs, tmp_path_factory.mktemp('existing'))
        monkeypatch = stack.enter_context(pytest.MonkeyPatch.context())
        monkeypatch.setenv('KUBECONFIG', str(handle.kubeconfig))
        yield handle


@pytest.fixture
def namespace(cluster: Cluster) -> Iterator[str]:
    """A new, empty namespace; its deletion is requested afterwards, but not awaited."""
    name = f'test-{secrets.token_hex(4)}'
    cluster.kubectl('create', 'namespace', name)
    yield name
    cluster.kubectl('delete', 'namespace', name, '--wait=false', '--ignore-not-found')

