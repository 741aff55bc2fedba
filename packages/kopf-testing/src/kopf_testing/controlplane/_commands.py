"""
The command lines of the servers, and where their files go.

Each flag is here for a reason given next to it; the flags were checked against
the ``--help`` of the release pinned in ``gomod/go.mod`` (flags change between
releases: check them again when the pin moves).
"""
import dataclasses
import pathlib

from . import _gates, _ports

# Garbage collection (owned children go with their owners), namespace finalization
# (deleted namespaces disappear), and the aggregated ClusterRoles (admin, edit, view)
# which RBAC tests may bind to. Nothing else: with no nodes, the rest would idle.
# Nor the CSR signer (csrsigning-controller): it alone would need the CA's private key
# (--cluster-signing-cert-file/--cluster-signing-key-file), which is why that key is never written.
_CONTROLLERS = ('garbage-collector-controller', 'namespace-controller', 'clusterrole-aggregation-controller')


@dataclasses.dataclass(frozen=True)
class Ports:
    etcd_client: int
    etcd_peer: int
    apiserver: int
    controller_manager: int  # its health endpoint, used only to see that it runs


class Layout:
    """Where each file goes under the root directory."""

    def __init__(self, root: pathlib.Path) -> None:
        self.root = root
        self.pki = root / 'pki'
        self.etcd_data = root / 'etcd'
        self.logs = root / 'logs'
        self.state = root / 'state.json'
        self.tokens = self.pki / 'tokens.csv'
        self.admin_kubeconfig = root / 'admin.kubeconfig'
        self.token_kubeconfig = root / 'admin-token.kubeconfig'
        self.user_kubeconfig = root / 'user.kubeconfig'

    def pem(self, name: str) -> pathlib.Path:
        return self.pki / f'{name}.pem'

    def log(self, component: str) -> pathlib.Path:
        return self.logs / f'{component}.log'

    def credentials(self) -> list[pathlib.Path]:
        """The files with credentials beside the PKI: all go on stop (the tokens live as long as the cluster)."""
        fixed = [self.state, self.admin_kubeconfig, self.token_kubeconfig, self.user_kubeconfig]
        # Service accounts' kubeconfigs are written on demand (bearer tokens), and a write interrupted
        # by a kill leaves its temporary file (see ``_files.write_private_file``) with the same secrets.
        return fixed + sorted(self.root.glob('serviceaccount-*.kubeconfig')) + sorted(self.root.glob('.*.tmp'))


def make_etcd_argv(bin_dir: pathlib.Path, layout: Layout, ports: Ports) -> list[str]:
    # Both ports speak TLS and demand a client certificate of etcd's own CA, which signs only
    # etcd's and the API server's certificates: 127.0.0.1 is open to every local user, and plain
    # etcd would give any of them all the cluster's data (Secrets included), bypassing RBAC.
    client_url = etcd_client_url(ports)
    peer_url = f'https://{_ports.HOST}:{ports.etcd_peer}'
    return [
        str(bin_dir / 'etcd'),
        '--name=default',
        f'--data-dir={layout.etcd_data}',
        f'--listen-client-urls={client_url}',
        f'--advertise-client-urls={client_url}',
        f'--cert-file={layout.pem("etcd")}',
        f'--key-file={layout.pem("etcd-key")}',
        f'--trusted-ca-file={layout.pem("etcd-ca")}',
        '--client-cert-auth=true',
        # One member has no peers, but the peer port is open all the same: the same lock on it.
        f'--listen-peer-urls={peer_url}',
        f'--initial-advertise-peer-urls={peer_url}',
        f'--initial-cluster=default={peer_url}',
        f'--peer-cert-file={layout.pem("etcd")}',
        f'--peer-key-file={layout.pem("etcd-key")}',
        f'--peer-trusted-ca-file={layout.pem("etcd-ca")}',
        '--peer-client-cert-auth=true',
        '--unsafe-no-fsync=true',  # the data is thrown away anyway; fsyncs would dominate the latency
        '--log-level=warn',
    ]


def etcd_client_url(ports: Ports) -> str:
    return f'https://{_ports.HOST}:{ports.etcd_client}'


def make_apiserver_argv(
        bin_dir: pathlib.Path, layout: Layout, ports: Ports, *, feature_gates: _gates.FeatureGates | None = None,
) -> list[str]:
    return [
        str(bin_dir / 'kube-apiserver'),
        f'--etcd-servers={etcd_client_url(ports)}',
        f'--etcd-cafile={layout.pem("etcd-ca")}',
        f'--etcd-certfile={layout.pem("apiserver-etcd-client")}',
        f'--etcd-keyfile={layout.pem("apiserver-etcd-client-key")}',
        f'--bind-address={_ports.HOST}',
        f'--advertise-address={_ports.HOST}',
        f'--secure-port={ports.apiserver}',
        f'--cert-dir={layout.pki}',
        f'--tls-cert-file={layout.pem("apiserver")}',
        f'--tls-private-key-file={layout.pem("apiserver-key")}',
        f'--client-ca-file={layout.pem("ca")}',
        f'--token-auth-file={layout.tokens}',
        '--authorization-mode=RBAC',
        f'--service-account-issuer=https://{_ports.HOST}:{ports.apiserver}/',
        f'--service-account-key-file={layout.pem("sa")}',
        f'--service-account-signing-key-file={layout.pem("sa-key")}',
        '--service-cluster-ip-range=10.0.0.0/24',
        '--allow-privileged=true',
        # The `kubernetes` service cannot point at a loopback address; there is nothing to reconcile anyway.
        '--endpoint-reconciler-type=none',
        # Otherwise a stop waits up to a minute for open watches (e.g. of the controller manager) to end.
        '--shutdown-watch-termination-grace-period=1s',
        # Nothing creates service-account tokens here, so pods would be rejected for lack of them.
        '--disable-admission-plugins=ServiceAccount',
        *_feature_gates_flag(feature_gates),
    ]


def make_controller_manager_argv(
        bin_dir: pathlib.Path, layout: Layout, ports: Ports, *, feature_gates: _gates.FeatureGates | None = None,
) -> list[str]:
    return [
        str(bin_dir / 'kube-controller-manager'),
        f'--kubeconfig={layout.admin_kubeconfig}',
        f'--bind-address={_ports.HOST}',
        f'--secure-port={ports.controller_manager}',
        f'--cert-dir={layout.pki}',
        f'--service-account-private-key-file={layout.pem("sa-key")}',
        f'--root-ca-file={layout.pem("ca")}',
        f'--controllers={",".join(_CONTROLLERS)}',
        '--leader-elect=false',
        *_feature_gates_flag(feature_gates),
    ]


def _feature_gates_flag(feature_gates: _gates.FeatureGates | None) -> list[str]:
    # Both servers get the same gates, as in a real cluster: the controller manager lists and watches
    # through the same API machinery (e.g. WatchList), and a gate unknown to either fails its start.
    return [f'--feature-gates={_gates.format_feature_gates(feature_gates)}'] if feature_gates else []
