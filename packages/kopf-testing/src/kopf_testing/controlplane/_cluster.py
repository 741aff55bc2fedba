"""
A real, local Kubernetes control plane: etcd, kube-apiserver and kube-controller-manager.

It is what the integration tests, the benchmarks and the demo run against when
there is no cluster at hand, and it needs no Docker: the servers run as plain
processes on 127.0.0.1, on free ports, with certificates generated per cluster.
There is no kubelet and no scheduler, so pods never run; everything an operator
does with the API (CRDs, watches, patches, events, RBAC, admission webhooks)
works, and the controller manager adds garbage collection of owned objects and
the finalization of deleted namespaces.

Example::

    with ControlPlane() as control_plane:
        subprocess.run([control_plane.kubectl_path, '--kubeconfig', control_plane.kubeconfig, 'get', 'ns'])

Everything lives under one root directory: the PKI, etcd's data, kubeconfigs,
``state.json`` (for ``ControlPlane.load`` from another process), and the
servers' logs in ``logs/`` which are kept after ``stop()`` for post-mortems
unless the root directory was a temporary one made here. All of it is for the
owner's eyes only: directories 0700, files 0600. etcd speaks TLS only and to the
API server only (see ``_credentials``): other local users reach nothing but the
API server, which authenticates and authorizes them.
"""
import atexit
import contextlib
import dataclasses
import json
import pathlib
import secrets
import shutil
import ssl
import tempfile
import time
from types import TracebackType
from typing import Any

from . import (
    _commands,
    _credentials,
    _files,
    _gates,
    _health,
    _https,
    _kubeconfigs,
    _lookup,
    _metrics,
    _ports,
    _processes,
)
from ._credentials import ADMIN_USER, NON_ADMIN_USER

ETCD = 'etcd'
APISERVER = 'kube-apiserver'
CONTROLLER_MANAGER = 'kube-controller-manager'
_START_ORDER = (ETCD, APISERVER, CONTROLLER_MANAGER)

_PORT_CLASH_MARKERS = ('address already in use', 'bind: address')
_POLL_INTERVAL = 0.1


class ControlPlaneError(Exception):
    """The control plane failed to start or to become ready (the message has the log's tail)."""


class _PortClash(ControlPlaneError):
    """A server lost its port to another process between choosing and binding it."""


class ControlPlane:
    """
    One local cluster, started and stopped as a whole, or only its API server.

    If ``root_dir`` is not given, a temporary directory is used and removed on
    stop. The binaries come from ``bin_dir``, or from the build cache (built on
    first use, which takes minutes). ``feature_gates`` (e.g.
    ``{'ShardedListAndWatch': True}``) go to the API server and the controller
    manager; the others keep the release's defaults.
    """

    def __init__(
            self,
            root_dir: pathlib.Path | str | None = None,
            *,
            bin_dir: pathlib.Path | str | None = None,
            start_timeout: float = 60.0,
            stop_timeout: float = 10.0,
            start_attempts: int = 3,
            feature_gates: _gates.FeatureGates | None = None,
    ) -> None:
        self._feature_gates = _gates.check_feature_gates(feature_gates or {})
        self._own_root = root_dir is None
        root = pathlib.Path(tempfile.mkdtemp(prefix='kopf-controlplane-')) if root_dir is None else root_dir
        self._layout = _commands.Layout(pathlib.Path(root).absolute())
        self._bin_dir = pathlib.Path(bin_dir) if bin_dir is not None else None
        self._start_timeout = start_timeout
        self._stop_timeout = stop_timeout
        self._start_attempts = start_attempts
        self._processes: dict[str, _processes.Process] = {}
        self._ports: _commands.Ports | None = None
        self.admin_token = secrets.token_hex(16)
        self.user_token = secrets.token_hex(16)

    def __enter__(self) -> 'ControlPlane':
        self.start()
        return self

    def __exit__(
            self,
            exc_type: type[BaseException] | None,
            exc_val: BaseException | None,
            exc_tb: TracebackType | None,
    ) -> None:
        self.stop()

    # --- Where to find it ---

    @property
    def root_dir(self) -> pathlib.Path:
        return self._layout.root

    @property
    def ports(self) -> _commands.Ports:
        if self._ports is None:
            raise ControlPlaneError('The control plane is not started.')
        return self._ports

    @property
    def server(self) -> str:
        return f'https://{_ports.HOST}:{self.ports.apiserver}'

    @property
    def kubeconfig(self) -> pathlib.Path:
        """The admin kubeconfig, with a client certificate (user ``admin``, group ``system:masters``)."""
        return self._layout.admin_kubeconfig

    @property
    def token_kubeconfig(self) -> pathlib.Path:
        """The admin kubeconfig with a bearer token instead of a client certificate."""
        return self._layout.token_kubeconfig

    @property
    def user_kubeconfig(self) -> pathlib.Path:
        """The kubeconfig of the non-admin token user (``user``), who has no RBAC permissions at all."""
        return self._layout.user_kubeconfig

    @property
    def ca_path(self) -> pathlib.Path:
        return self._layout.pem('ca')

    @property
    def bin_dir(self) -> pathlib.Path:
        if self._bin_dir is None:
            self._bin_dir = _lookup.locate_binaries()
        return self._bin_dir

    @property
    def kubectl_path(self) -> pathlib.Path:
        return self.bin_dir / 'kubectl'

    @property
    def logs_dir(self) -> pathlib.Path:
        return self._layout.logs

    @property
    def feature_gates(self) -> dict[str, bool]:
        """The feature gates set on the servers' command lines (not the release's defaults)."""
        return dict(self._feature_gates)

    @property
    def pids(self) -> dict[str, int]:
        """The PIDs (also the process group ids) of the running servers, by name."""
        return {name: process.pid for name, process in self._processes.items()}

    # --- Starting and stopping the whole cluster ---

    def start(self) -> None:
        """Start all servers and return when the API is ready; on any failure, leave nothing running."""
        if self._processes:
            raise ControlPlaneError('The control plane is already started.')
        self._check_not_running_elsewhere()
        self._prepare_root()
        atexit.register(self._stop_at_exit)
        try:
            self.bin_dir  # noqa: B018  # build before anything starts: it takes long and may fail
            _credentials.write_credentials(self._layout, admin_token=self.admin_token, user_token=self.user_token)
            for attempt in range(1, self._start_attempts + 1):
                self._ports = _choose_ports()
                try:
                    self._start_servers()
                    break
                except _PortClash:
                    self._stop_processes()
                    if attempt >= self._start_attempts:
                        raise
            self._save_state()
        except BaseException:  # including KeyboardInterrupt and SystemExit
            self.stop()
            raise

    def stop(self) -> None:
        """Stop the servers in the reverse order and remove everything but the logs."""
        atexit.unregister(self._stop_at_exit)
        self._stop_processes()
        self._remove_files()

    def detach(self) -> None:
        """Let the servers outlive this Python process (for ``start`` from a shell); ``load()`` finds them again."""
        atexit.unregister(self._stop_at_exit)
        self._processes.clear()

    @classmethod
    def load(cls, root_dir: pathlib.Path | str, **kwargs: Any) -> 'ControlPlane':
        """The control plane started by another process in this root directory (see ``detach``)."""
        layout = _commands.Layout(pathlib.Path(root_dir).absolute())
        try:
            state = json.loads(layout.state.read_text())
        except FileNotFoundError:
            raise ControlPlaneError(f'No control plane state in {layout.root}.') from None
        kwargs.setdefault('feature_gates', state.get('feature_gates'))
        control_plane = cls(layout.root, bin_dir=state['bin_dir'], **kwargs)
        control_plane._ports = _commands.Ports(**state['ports'])
        control_plane.admin_token = state['admin_token']
        control_plane.user_token = state['user_token']
        for name in _START_ORDER:
            if name in state['pids']:
                process = _processes.Process.adopt(name, state['pids'][name], log_path=layout.log(name),
                                                   executable=control_plane.bin_dir / name)
                control_plane._processes[name] = process
        return control_plane

    def is_running(self) -> bool:
        """Whether all servers run (not whether they are ready: see ``is_ready``)."""
        return set(self._processes) == set(_START_ORDER) and all(p.is_running() for p in self._processes.values())

    def is_ready(self) -> bool:
        try:
            status, _ = _https.get(f'{self.server}/readyz', context=self._admin_context(), timeout=2.0)
        except OSError:
            return False
        return status == 200

    # --- Restarting only the API server (etcd and the controller manager stay) ---

    def stop_apiserver(self) -> None:
        process = self._processes.pop(APISERVER, None)
        if process is not None:
            process.stop(timeout=self._stop_timeout)
        self._save_state()

    def start_apiserver(self) -> None:
        """Start the API server again on the same port, with the same certificates and etcd."""
        if APISERVER in self._processes:
            raise ControlPlaneError('The API server is already started.')
        self._spawn_apiserver()
        self._wait_for_apiserver()
        self._save_state()

    def restart_apiserver(self) -> None:
        self.stop_apiserver()
        self.start_apiserver()

    # --- Restarting only etcd (its data stays; the API server reconnects by itself) ---

    def restart_etcd(self) -> None:
        process = self._processes.pop(ETCD, None)
        if process is not None:
            process.stop(timeout=self._stop_timeout)
        self._spawn(ETCD, _commands.make_etcd_argv(self.bin_dir, self._layout, self.ports))
        self._wait_until(ETCD, lambda: _health.etcd_is_healthy(self._layout, self.ports))
        self._save_state()

    # --- Observing ---

    def read_request_counts(self) -> _metrics.RequestCounts:
        """The API server's ``apiserver_request_total`` counters, read as admin."""
        status, body = _https.get(f'{self.server}/metrics', context=self._admin_context())
        if status != 200:
            raise ControlPlaneError(f'GET /metrics answered {status}: {body[:200]!r}')
        return _metrics.parse_request_counts(body.decode())

    # --- Internals ---

    def _stop_at_exit(self) -> None:
        with contextlib.suppress(Exception):
            self.stop()

    def _check_not_running_elsewhere(self) -> None:
        running = False
        with contextlib.suppress(ControlPlaneError, ValueError, KeyError):  # no state or a broken one: nothing runs
            previous = ControlPlane.load(self._layout.root)
            running = any(process.is_running() for process in previous._processes.values())
        if running:
            raise ControlPlaneError(f'A control plane already runs in {self._layout.root}; stop it first.')

    def _prepare_root(self) -> None:
        # Leftovers of a previous cluster (e.g. killed without stopping) would confuse etcd and the logs' readers.
        # But first, the root must be ours: nothing is removed from, or written to, another user's directory.
        try:
            _files.make_private_dir(self._layout.root)
            self._remove_files()
            shutil.rmtree(self._layout.logs, ignore_errors=True)
            for path in (self._layout.root, self._layout.pki, self._layout.etcd_data, self._layout.logs):
                _files.make_private_dir(path)
        except PermissionError as e:
            raise ControlPlaneError(str(e)) from e

    def _remove_files(self) -> None:
        if self._own_root:
            shutil.rmtree(self._layout.root, ignore_errors=True)
            return
        shutil.rmtree(self._layout.pki, ignore_errors=True)
        shutil.rmtree(self._layout.etcd_data, ignore_errors=True)
        for path in self._layout.credentials():
            path.unlink(missing_ok=True)

    def _write_kubeconfigs(self) -> None:
        layout = self._layout
        ca_pem = layout.pem('ca').read_bytes()
        _kubeconfigs.write_kubeconfig(
            layout.admin_kubeconfig, server=self.server, ca_pem=ca_pem, user=ADMIN_USER,
            cert_pem=layout.pem('admin').read_bytes(), key_pem=layout.pem('admin-key').read_bytes())
        _kubeconfigs.write_kubeconfig(
            layout.token_kubeconfig, server=self.server, ca_pem=ca_pem, user=ADMIN_USER, token=self.admin_token)
        _kubeconfigs.write_kubeconfig(
            layout.user_kubeconfig, server=self.server, ca_pem=ca_pem, user=NON_ADMIN_USER, token=self.user_token)

    def _start_servers(self) -> None:
        self._write_kubeconfigs()  # they name the API server's port, which changes between attempts
        self._spawn(ETCD, _commands.make_etcd_argv(self.bin_dir, self._layout, self.ports))
        self._wait_until(ETCD, lambda: _health.etcd_is_healthy(self._layout, self.ports))
        self._spawn_apiserver()
        self._wait_for_apiserver()
        self._spawn(CONTROLLER_MANAGER, _commands.make_controller_manager_argv(
            self.bin_dir, self._layout, self.ports, feature_gates=self._feature_gates))
        self._wait_until(CONTROLLER_MANAGER, lambda: _health.controller_manager_is_healthy(self.ports))

    def _spawn(self, name: str, argv: list[str]) -> None:
        self._processes[name] = _processes.Process.spawn(name, argv, log_path=self._layout.log(name))

    def _spawn_apiserver(self) -> None:
        self._spawn(APISERVER, _commands.make_apiserver_argv(
            self.bin_dir, self._layout, self.ports, feature_gates=self._feature_gates))

    def _wait_for_apiserver(self) -> None:
        # /readyz includes etcd and the post-start hooks (RBAC bootstrap roles, etc.);
        # the `default` namespace is created a moment later by a controller inside the API server.
        self._wait_until(APISERVER, self.is_ready)
        self._wait_until(APISERVER, lambda: _health.has_default_namespace(self.server, self._admin_context()))

    def _stop_processes(self) -> None:
        for name in reversed(_START_ORDER):
            process = self._processes.pop(name, None)
            if process is not None:
                process.stop(timeout=self._stop_timeout)

    def _save_state(self) -> None:
        state = {
            'bin_dir': str(self.bin_dir),
            'ports': dataclasses.asdict(self.ports),
            'pids': self.pids,
            'admin_token': self.admin_token,
            'user_token': self.user_token,
            'feature_gates': self._feature_gates,
        }
        _files.write_private_file(self._layout.state, json.dumps(state, indent=2))

    def _wait_until(self, name: str, is_ready: Any) -> None:
        """Poll the readiness check while watching that the process does not die meanwhile."""
        process = self._processes[name]
        deadline = time.monotonic() + self._start_timeout
        while not is_ready():
            if not process.is_running():
                tail = process.read_log_tail()
                error = _PortClash if any(marker in tail for marker in _PORT_CLASH_MARKERS) else ControlPlaneError
                raise error(f'{name} exited with code {process.exit_code}; the log {process.log_path} ends with:\n'
                            f'{tail}')
            if time.monotonic() >= deadline:
                raise ControlPlaneError(f'{name} is not ready after {self._start_timeout}s; '
                                        f'the log {process.log_path} ends with:\n{process.read_log_tail()}')
            time.sleep(_POLL_INTERVAL)

    def _admin_context(self) -> ssl.SSLContext:
        return _https.make_ssl_context(
            ca_path=self._layout.pem('ca'), cert_path=self._layout.pem('admin'), key_path=self._layout.pem('admin-key'))


def _choose_ports() -> _commands.Ports:
    return _commands.Ports(*_ports.find_free_ports(4))
