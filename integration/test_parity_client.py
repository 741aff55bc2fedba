"""
The client's parity with Kopf 1.45.2 on a real API server (issue 22): custom HTTP
sessions, proxies, an unreachable server, and a login that finds nothing.

Inputs: the local control plane's kubeconfigs (as files, or copied with changes),
an operator run by ``kopf run`` in its own process, a forwarding HTTP CONNECT proxy
started here (it counts the tunnels it opens). Outputs: the objects handled (their
status), the proxy's tunnels, and the operator's output. Nothing is faked: the API
server decides what is valid, the proxy really forwards the bytes.
"""
import importlib.util
import json
import os
import pathlib
import re
import select
import socket
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import yaml

from integration.controlplane import Cluster
from integration.operating import DEFAULT_TIMEOUT, EXAMPLES, REPO_ROOT, OperatorProcess, kopf_executable, patient

EXAMPLE = str(EXAMPLES / '01-minimal' / 'example.py')
OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'client_parity.py')

pytestmark = pytest.mark.usefixtures('example_crd')


class ConnectProxy:
    """A forwarding HTTP proxy that only tunnels (``CONNECT host:port``), as HTTPS needs; counts the tunnels."""

    def __init__(self) -> None:
        self.listener = socket.create_server(('127.0.0.1', 0))
        self.url = f'http://127.0.0.1:{self.listener.getsockname()[1]}'
        self.tunnels: list[str] = []
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._accept, daemon=True)

    def __enter__(self) -> 'ConnectProxy':
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stopped.set()
        self.listener.close()

    def _accept(self) -> None:
        while not self._stopped.is_set():
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._tunnel, args=(client,), daemon=True).start()

    def _tunnel(self, client: socket.socket) -> None:
        with client:
            head = b''
            while b'\r\n\r\n' not in head:
                chunk = client.recv(4096)
                if not chunk:
                    return
                head += chunk
            method, target, _ = head.split(b'\r\n', 1)[0].decode().split(' ', 2)
            if method != 'CONNECT':
                client.sendall(b'HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\n\r\n')
                return
            host, port = target.rsplit(':', 1)
            with socket.create_connection((host, int(port))) as upstream:
                self.tunnels.append(target)
                client.sendall(b'HTTP/1.1 200 Connection established\r\n\r\n')
                self._pipe(client, upstream)

    def _pipe(self, one: socket.socket, other: socket.socket) -> None:
        peers = {one: other, other: one}
        while not self._stopped.is_set():
            readable, _, _ = select.select(list(peers), [], [], 0.5)
            for sock in readable:
                try:
                    data = sock.recv(65536)
                    if data:
                        peers[sock].sendall(data)
                except ConnectionError:  # either side reset it (e.g. an operator that stops): the tunnel ends
                    return
                if not data:
                    return


@pytest.fixture
def admin_kubeconfig(cluster: Cluster) -> dict[str, Any]:
    """The current context only, with its certificates inlined (so that it can be copied anywhere)."""
    result = cluster.kubectl('config', 'view', '--raw', '--minify', '--flatten', '-o', 'json')
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.fixture
def proxy() -> Iterator[ConnectProxy]:
    with ConnectProxy() as proxy:
        yield proxy


def create_object(cluster: Cluster, namespace: str) -> None:
    cluster.kubectl('apply', '-n', namespace, '-f', '-', input=json.dumps({
        'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': 'kopf-example-1'}, 'spec': {}}))


def status_of(cluster: Cluster, namespace: str) -> dict[str, Any]:
    result = cluster.kubectl('get', '-n', namespace, 'kopfexample', 'kopf-example-1', '-o', 'json')
    return json.loads(result.stdout).get('status', {})  # type: ignore[no-any-return]


def run_to_the_end(args: list[str], env: dict[str, str], timeout: float = DEFAULT_TIMEOUT,
                   ) -> subprocess.CompletedProcess[str]:
    """Run ``kopf run`` until it exits by itself (as it must, when it cannot start)."""
    return subprocess.run([kopf_executable(), 'run', *args], env={**os.environ, **env}, cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=patient(timeout))


def test_a_custom_aiohttp_session_sends_the_requests(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    if cluster.control_plane is None:
        pytest.skip("Needs the local control plane's token kubeconfig (not available on other clusters).")
    env = {'KUBECONFIG': str(cluster.control_plane.token_kubeconfig), 'PARITY_CLIENT_MODE': 'session'}
    with OperatorProcess([OPERATOR, '--verbose', '-n', namespace], log_path=tmp_path / 'op.log', env=env) as op:
        create_object(cluster, namespace)
        op.wait_for(r"Handler 'create_fn' succeeded\.", timeout=60)
    seen = status_of(cluster, namespace)['create_fn']
    assert seen['requests'] > 0  # at least the discovery, the listing, the watch
    assert seen['marked'] == seen['requests']  # all of them through the user's session, with its headers


@pytest.mark.parametrize('mode', ['default-logins', 'kubeconfig'])
def test_the_kubeconfigs_proxy_url_is_used(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path, admin_kubeconfig: dict[str, Any],
        proxy: ConnectProxy, mode: str) -> None:
    admin_kubeconfig['clusters'][0]['cluster']['proxy-url'] = proxy.url
    path = tmp_path / 'proxied.kubeconfig'
    path.write_text(yaml.safe_dump(admin_kubeconfig))
    env = {'KUBECONFIG': str(path), 'PARITY_CLIENT_MODE': mode}
    with OperatorProcess([OPERATOR, '--verbose', '-n', namespace], log_path=tmp_path / 'op.log', env=env) as op:
        create_object(cluster, namespace)
        op.wait_for(r"Handler 'create_fn' succeeded\.", timeout=60)
    assert 'create_fn' in status_of(cluster, namespace)
    server = admin_kubeconfig['clusters'][0]['cluster']['server']
    assert proxy.tunnels and set(proxy.tunnels) == {server.split('://', 1)[1]}


def test_an_unreachable_server_says_so_in_a_few_lines(tmp_path: pathlib.Path) -> None:
    with socket.socket() as sock:  # a port that was free a moment ago, and nobody listens on it
        sock.bind(('127.0.0.1', 0))
        port = sock.getsockname()[1]
    path = tmp_path / 'unreachable.kubeconfig'
    path.write_text(yaml.safe_dump({
        'apiVersion': 'v1', 'kind': 'Config', 'current-context': 'x',
        'clusters': [{'name': 'c', 'cluster': {'server': f'https://127.0.0.1:{port}',
                                               'insecure-skip-tls-verify': True}}],
        'users': [{'name': 'u', 'user': {'token': 'abc'}}],
        'contexts': [{'name': 'x', 'context': {'cluster': 'c', 'user': 'u'}}]}))
    result = run_to_the_end([OPERATOR, '-A', '--standalone'], env={'KUBECONFIG': str(path),
                                                                   'PARITY_CLIENT_MODE': 'fast-retries'})
    lines = (result.stdout + result.stderr).splitlines()
    assert result.returncode != 0
    assert lines[-1].startswith(f"Error: Cannot reach the cluster (check the server in the kubeconfig, and the "
                                f"network): Cannot connect to host 127.0.0.1:{port}")
    problems = [line for line in lines[:-1] if re.search(r'\b(WARNING|ERROR)\b', line)
                and 'TLS verification is off' not in line]  # said once per login, about the kubeconfig
    assert len(problems) <= 2, '\n'.join(lines)  # the first failure, and the giving up; no retry in between
    assert 'will retry' in problems[0] and '8 more attempts within 0.8 s' in problems[0]
    assert 'Traceback' not in result.stderr


def test_a_login_that_finds_nothing_names_each_source_tried(tmp_path: pathlib.Path) -> None:
    home = tmp_path / 'home'
    home.mkdir()
    result = run_to_the_end([EXAMPLE, '-A', '--standalone'], env={'HOME': str(home), 'KUBECONFIG': ''})
    output = (result.stdout + result.stderr).splitlines()
    assert result.returncode != 0
    # One error block at the end: the headline, what was tried (and not), and the next step.
    starts = [index for index, line in enumerate(output) if line.startswith("Error: ")]
    assert len(starts) == 1
    block = output[starts[0]:]
    text = '\n'.join(block)
    installed = [name for name in ['pykube', 'kubernetes'] if _importable(name)]
    assert len(block) == (3 if len(installed) == 2 else 4)  # a "Not tried:" line for the missing libraries
    assert block[0] == ("Error: Cannot log in to the cluster: Initial authentication has failed: "
                        "no credentials were retrieved from the login handlers.")
    assert block[1].startswith("  Tried: ")
    assert block[-1].startswith("  Next step: set KUBECONFIG")
    assert "local control plane" in block[-1]
    assert block[-1].endswith("see Authentication: docs/authentication.md")
    if not installed:  # the built-in logins are the defaults
        assert "login_with_service_account (not in a cluster: " in text
        assert f"login_with_kubeconfig (no kubeconfig: $KUBECONFIG is not set, and {home}/.kube/config" in text
    if 'pykube' in installed:
        assert "login_via_pykube (configured neither in cluster, nor via kubeconfig file" in text
    else:
        assert "login_via_pykube (the 'pykube-ng' library is not installed)" in text
    if 'kubernetes' in installed:
        assert "login_via_client (configured neither in cluster, nor via kubeconfig file" in text
    # The reasons are said once: not before in the log, where the logins found no credentials.
    assert all("configured neither in cluster" not in line for line in output[:starts[0]])
    assert "Activity 'login_via_pykube' found no credentials." in '\n'.join(output) or 'pykube' not in installed
    assert 'succeeded' not in '\n'.join(output)
    assert 'Traceback' not in result.stderr


def _importable(name: str) -> bool:
    return importlib.util.find_spec(name) is not None
