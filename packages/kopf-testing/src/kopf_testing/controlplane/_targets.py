"""
The cluster that integration tests run against, whichever kind it is.

Tests get one ``Cluster`` object and need not know whether it is the local
control plane (started here, with extras: tokens and API-server restarts), an
existing cluster named by ``$KUBECONFIG`` (only when asked for), or a throwaway
k3d cluster.
"""
import contextlib
import dataclasses
import os
import pathlib
import secrets
import shutil
import subprocess
from collections.abc import Iterator, Mapping, Sequence

from . import _cluster, _files, _gates, _lookup, _metrics, _serviceaccounts

KINDS = ('local', 'existing', 'k3d')
CLUSTER_ENV_VAR = 'KOPF_TESTING_CLUSTER'  # the kind of cluster when no option says it


class ClusterUnavailable(Exception):
    """The requested kind of cluster cannot be had on this machine."""


class KubectlError(subprocess.CalledProcessError):
    """A failed kubectl command, with its stderr in the message (plain CalledProcessError hides it)."""

    def __str__(self) -> str:
        return f'{super().__str__()}\n{self.stderr}'


@dataclasses.dataclass
class Cluster:
    kind: str
    kubeconfig: pathlib.Path
    server: str
    kubectl_path: pathlib.Path
    control_plane: _cluster.ControlPlane | None = None

    def kubectl(
            self,
            *args: str,
            input: str | None = None,
            check: bool = True,
            kubeconfig: pathlib.Path | None = None,
    ) -> subprocess.CompletedProcess[str]:
        """Run kubectl against this cluster (as admin unless another kubeconfig is given); text in, text out."""
        argv = [str(self.kubectl_path), f'--kubeconfig={kubeconfig or self.kubeconfig}', *args]
        result = subprocess.run(argv, input=input, capture_output=True, text=True)
        if check and result.returncode != 0:
            raise KubectlError(result.returncode, argv, result.stdout, result.stderr)
        return result

    def service_account_kubeconfig(self, namespace: str, name: str, *, duration: str = '1h') -> pathlib.Path:
        """A kubeconfig of the service account (created if absent): only the permissions bound to it."""
        return _serviceaccounts.write_service_account_kubeconfig(self, namespace, name, duration=duration)

    def metrics(self) -> _metrics.RequestCounts:
        """The API server's request counters (``apiserver_request_total``), see ``sum_counts``."""
        if self.control_plane is not None:
            return self.control_plane.read_request_counts()
        return _metrics.parse_request_counts(self.kubectl('get', '--raw', '/metrics').stdout)

    @property
    def admin_token(self) -> str:
        return self._require_control_plane().admin_token

    @property
    def user_token(self) -> str:
        """The bearer token of ``user``, who is authenticated but has no permissions."""
        return self._require_control_plane().user_token

    def stop_apiserver(self) -> None:
        self._require_control_plane().stop_apiserver()

    def start_apiserver(self) -> None:
        self._require_control_plane().start_apiserver()

    def restart_apiserver(self) -> None:
        self._require_control_plane().restart_apiserver()

    def _require_control_plane(self) -> _cluster.ControlPlane:
        if self.control_plane is None:
            raise ClusterUnavailable(f'This needs the local control plane (--kopf-cluster=local), not {self.kind}.')
        return self.control_plane


@contextlib.contextmanager
def run_local_cluster(
        root_dir: pathlib.Path | None = None, *, feature_gates: _gates.FeatureGates | None = None,
) -> Iterator[Cluster]:
    """Start the local control plane (building it first if needed) and stop it afterwards."""
    with _cluster.ControlPlane(root_dir, feature_gates=feature_gates) as control_plane:
        yield Cluster('local', control_plane.kubeconfig, control_plane.server, control_plane.kubectl_path,
                      control_plane)


def use_existing_cluster(kubeconfigs: str, work_dir: pathlib.Path, *, kind: str = 'existing') -> Cluster:
    """
    A cluster managed elsewhere: used as is, never started or stopped here.

    ``kubeconfigs`` is what ``$KUBECONFIG`` may hold: one path or several. Its
    current context is flattened into one self-contained file, so that the
    tests keep to that cluster even if the original files change meanwhile.
    """
    kubectl_path = _find_kubectl()
    argv = [str(kubectl_path), 'config', 'view', '--raw', '--flatten', '--minify']
    result = subprocess.run(argv, env={**os.environ, 'KUBECONFIG': kubeconfigs}, capture_output=True, text=True)
    if result.returncode != 0:
        raise ClusterUnavailable(f'Cannot read the kubeconfig {kubeconfigs!r}:\n{result.stderr}')
    _files.make_private_dir(work_dir)
    kubeconfig = work_dir / 'kubeconfig'
    _files.write_private_file(kubeconfig, result.stdout)
    cluster = Cluster(kind, kubeconfig, '', kubectl_path)
    cluster.server = cluster.kubectl('config', 'view', '-o', 'jsonpath={.clusters[0].cluster.server}').stdout
    return cluster


@contextlib.contextmanager
def run_k3d_cluster(work_dir: pathlib.Path) -> Iterator[Cluster]:
    """Create a uniquely named k3d cluster and delete it afterwards."""
    k3d, docker = shutil.which('k3d'), shutil.which('docker')
    if k3d is None or docker is None or subprocess.run([docker, 'info'], capture_output=True).returncode != 0:
        raise ClusterUnavailable('--kopf-cluster=k3d needs `k3d` on PATH and a running Docker; '
                                 'use --kopf-cluster=local (no Docker needed) or --kopf-cluster=existing.')
    name = f'kopf-test-{secrets.token_hex(4)}'
    subprocess.run([k3d, 'cluster', 'create', name, '--wait',
                    '--kubeconfig-update-default=false', '--kubeconfig-switch-context=false'], check=True)
    try:
        _files.make_private_dir(work_dir)
        kubeconfig = work_dir / 'k3d.kubeconfig'  # the cluster's admin credentials: 0600, like ours
        _files.write_private_file(kubeconfig, subprocess.run([k3d, 'kubeconfig', 'get', name], check=True,
                                                             capture_output=True, text=True).stdout)
        yield use_existing_cluster(str(kubeconfig), work_dir, kind='k3d')
    finally:
        subprocess.run([k3d, 'cluster', 'delete', name], check=False)


def _find_kubectl() -> pathlib.Path:
    """The kubectl of the control plane's binaries if there are some (never built for this), else PATH's."""
    bin_dir = _lookup.find_existing_binaries()
    if bin_dir is not None:
        return bin_dir / 'kubectl'
    found = shutil.which('kubectl')
    if found is None:
        raise ClusterUnavailable('kubectl is neither built locally (python -m kopf_testing.controlplane build) '
                                 'nor found on PATH.')
    return pathlib.Path(found)


def choose_kind(
        option: str | None, *, choices: Sequence[str] = KINDS, environ: Mapping[str, str] | None = None,
) -> str:
    """
    The kind of cluster: as asked (the option), else ``$KOPF_TESTING_CLUSTER``, else a local one.

    ``$KUBECONFIG`` alone never chooses ``existing``: the tests create namespaces
    and CRDs, so they go to the cluster a shell points at only when asked to.
    """
    if option is not None:
        return option
    environ = os.environ if environ is None else environ
    value = environ.get(CLUSTER_ENV_VAR, '').strip()
    if not value:
        return 'local'
    if value not in choices:
        raise ValueError(f'${CLUSTER_ENV_VAR} is {value!r}, which is not a kind of cluster: '
                         f'set it to one of {", ".join(choices)}, or unset it for a local one.')
    return value
