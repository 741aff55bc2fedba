"""
The local control plane, proven against itself: real etcd, kube-apiserver,
kube-controller-manager and kubectl processes; nothing is mocked.

These tests always use the local control plane: the session's one if it runs
with ``--kopf-cluster=local``, else one started for this module. Tests that stop a
control plane or break its start use their own, so the shared one stays intact.
Waits for asynchronous effects (garbage collection) poll with a deadline.
"""
import base64
import contextlib
import json
import os
import pathlib
import re
import ssl
import stat
import subprocess
import sys
import textwrap
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from integration.controlplane import (
    BuildError,
    Cluster,
    ControlPlane,
    ControlPlaneError,
    ensure_binaries,
    get_cache_dir,
    parse_request_counts,
    read_kubernetes_version,
    run_local_cluster,
    subtract_counts,
    sum_counts,
)

REPOSITORY_ROOT = pathlib.Path(__file__).parent.parent


@pytest.fixture(scope='module')
def local(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    if cluster.control_plane is not None:
        yield cluster
    else:
        with run_local_cluster(tmp_path_factory.mktemp('controlplane')) as own:
            yield own


@pytest.fixture
def local_namespace(local: Cluster) -> Iterator[str]:
    name = f'test-{os.urandom(4).hex()}'
    local.kubectl('create', 'namespace', name)
    yield name
    local.kubectl('delete', 'namespace', name, '--wait=false', '--ignore-not-found')


# A stand-in for `go build` that records its calls and creates executables where `-o` says.
_FAKE_GO = textwrap.dedent('''\
    #!/bin/sh
    echo "$@" >> "$FAKE_GO_CALLS"
    [ -n "$FAKE_GO_FAIL" ] && { echo "$FAKE_GO_FAIL"; exit 1; }
    [ -n "$FAKE_GO_DELAY" ] && sleep "$FAKE_GO_DELAY"
    while [ $# -gt 0 ]; do [ "$1" = "-o" ] && out="$2"; shift; done
    case "$out" in
      */) for name in kube-apiserver kube-controller-manager kubectl; do touch "$out$name"; chmod +x "$out$name"; done;;
      *) touch "$out"; chmod +x "$out";;
    esac
''')


@pytest.fixture
def fake_go(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    """The file that lists the fake `go` calls; the fake is first on PATH and the cache is in tmp_path."""
    go_dir = tmp_path / 'go-bin'
    go_dir.mkdir()
    (go_dir / 'go').write_text(_FAKE_GO)
    (go_dir / 'go').chmod(0o755)
    calls = tmp_path / 'go-calls'
    calls.touch()
    monkeypatch.setenv('PATH', f'{go_dir}{os.pathsep}{os.environ["PATH"]}')
    monkeypatch.setenv('FAKE_GO_CALLS', str(calls))
    monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path / 'cache'))
    return calls


def _is_gone(pid: int) -> bool:
    """Whether no such process runs; a zombie (exited, not yet reaped by its parent) runs no more."""
    try:
        stat = pathlib.Path(f'/proc/{pid}/stat').read_text()
    except FileNotFoundError:
        return True
    return stat.rpartition(')')[2].split()[0] == 'Z'


def _write_fake_etcd(bin_dir: pathlib.Path, output: str) -> None:
    bin_dir.mkdir()
    script = bin_dir / 'etcd'
    script.write_text(f'#!/bin/sh\necho {output!r}\nexit 3\n')
    script.chmod(0o755)


# --- Building ---

def test_cache_dir_is_per_version_under_xdg_cache_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('XDG_CACHE_HOME', '/somewhere')
    assert get_cache_dir('v1.2.3') == pathlib.Path('/somewhere/kopf-controlplane/v1.2.3')


def test_cache_dir_defaults_to_dot_cache_in_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv('XDG_CACHE_HOME', raising=False)
    monkeypatch.setenv('HOME', '/home/someone')
    assert get_cache_dir('v1.2.3') == pathlib.Path('/home/someone/.cache/kopf-controlplane/v1.2.3')


def test_binaries_are_built_into_the_cache_of_the_pinned_version(fake_go: pathlib.Path, tmp_path: pathlib.Path) -> None:
    bin_dir = ensure_binaries()
    assert bin_dir == tmp_path / 'cache' / 'kopf-controlplane' / read_kubernetes_version() / 'bin'
    assert sorted(path.name for path in bin_dir.iterdir()) == [
        'etcd', 'kube-apiserver', 'kube-controller-manager', 'kubectl']


def test_binaries_are_stamped_with_the_pinned_version(fake_go: pathlib.Path) -> None:
    ensure_binaries()
    assert f'k8s.io/component-base/version.gitVersion={read_kubernetes_version()}' in fake_go.read_text()


def test_cached_binaries_are_not_rebuilt(fake_go: pathlib.Path) -> None:
    ensure_binaries()
    calls_after_build = fake_go.read_text()
    ensure_binaries()
    assert fake_go.read_text() == calls_after_build


def test_concurrent_builds_run_go_only_once(fake_go: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('FAKE_GO_DELAY', '0.5')  # so that all threads ask while the first one builds
    threads = [threading.Thread(target=ensure_binaries) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(fake_go.read_text().splitlines()) == 2  # the Kubernetes binaries, then etcd


def test_failed_build_leaves_no_binaries_and_reports_the_log(
        fake_go: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv('FAKE_GO_FAIL', 'cannot find module providing package')
    with pytest.raises(BuildError, match='cannot find module providing package'):
        ensure_binaries()
    cache_dir = tmp_path / 'cache' / 'kopf-controlplane' / read_kubernetes_version()
    assert sorted(path.name for path in cache_dir.iterdir()) == ['.lock', 'build.log']


# --- Readiness ---

def test_readyz_answers_ok(local: Cluster) -> None:
    assert local.kubectl('get', '--raw', '/readyz').stdout == 'ok'


@pytest.mark.parametrize('name', ['default', 'kube-system'])
def test_system_namespace_exists(local: Cluster, name: str) -> None:
    result = local.kubectl('get', 'namespace', name, '-o', 'jsonpath={.status.phase}')
    assert result.stdout == 'Active'


# --- Authentication and authorization ---

@pytest.mark.parametrize('attr', ['kubeconfig', 'token_kubeconfig'], ids=['client-certificate', 'token'])
def test_admin_kubeconfig_authenticates_as_admin_in_system_masters(local: Cluster, attr: str) -> None:
    assert local.control_plane is not None
    kubeconfig = getattr(local.control_plane, attr)
    review = json.loads(local.kubectl('auth', 'whoami', '-o', 'json', kubeconfig=kubeconfig).stdout)
    assert review['status']['userInfo']['username'] == 'admin'
    assert 'system:masters' in review['status']['userInfo']['groups']


def test_user_token_authenticates_as_user_without_admin_group(local: Cluster) -> None:
    assert local.control_plane is not None
    kubeconfig = local.control_plane.user_kubeconfig
    review = json.loads(local.kubectl('auth', 'whoami', '-o', 'json', kubeconfig=kubeconfig).stdout)
    assert review['status']['userInfo']['username'] == 'user'
    assert 'system:masters' not in review['status']['userInfo']['groups']


def test_user_is_forbidden_to_list_secrets(local: Cluster, local_namespace: str) -> None:
    assert local.control_plane is not None
    result = local.kubectl('get', 'secrets', '-n', local_namespace, check=False,
                           kubeconfig=local.control_plane.user_kubeconfig)
    assert result.returncode != 0
    assert 'Forbidden' in result.stderr


@pytest.mark.parametrize('token_attr, expected_status', [
    pytest.param('admin_token', 200, id='admin'),
    pytest.param('user_token', 403, id='user'),
])
def test_tokens_authenticate_plain_https_requests(local: Cluster, token_attr: str, expected_status: int) -> None:
    assert local.control_plane is not None
    context = ssl.create_default_context(cafile=str(local.control_plane.ca_path))
    request = urllib.request.Request(f'{local.server}/api/v1/namespaces/default/secrets')
    request.add_header('Authorization', f'Bearer {getattr(local, token_attr)}')
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as response:
            status = response.status
    except urllib.error.HTTPError as e:
        e.close()
        status = e.code
    assert status == expected_status


# --- The controller manager ---

def test_owned_child_is_garbage_collected_after_its_owner_is_deleted(local: Cluster, local_namespace: str) -> None:
    local.kubectl('create', 'configmap', 'owner', '-n', local_namespace)
    uid = local.kubectl('get', 'configmap', 'owner', '-n', local_namespace, '-o', 'jsonpath={.metadata.uid}').stdout
    local.kubectl('apply', '-n', local_namespace, '-f', '-', input=textwrap.dedent(f'''
        apiVersion: v1
        kind: ConfigMap
        metadata:
          name: child
          ownerReferences: [{{apiVersion: v1, kind: ConfigMap, name: owner, uid: {uid}}}]
    '''))
    local.kubectl('delete', 'configmap', 'owner', '-n', local_namespace)
    # The garbage collector pauses its workers while it re-syncs its monitors after the API's resources
    # change (every CRD that the other tests create or delete), for up to 30 s per re-sync: hence the
    # generous budget, and this test's place before the CRD and restart tests of this module.
    local.kubectl('wait', '--for=delete', 'configmap/child', '-n', local_namespace, '--timeout=180s')


# --- Storage and API extensions ---

def test_custom_resource_is_created_after_its_definition(local: Cluster, local_namespace: str) -> None:
    group = f'g{os.urandom(4).hex()}.kopf.dev'
    local.kubectl('apply', '-f', '-', input=textwrap.dedent(f'''
        apiVersion: apiextensions.k8s.io/v1
        kind: CustomResourceDefinition
        metadata: {{name: cpwidgets.{group}}}
        spec:
          group: {group}
          scope: Namespaced
          names: {{plural: cpwidgets, singular: cpwidget, kind: CpWidget}}
          versions:
          - name: v1
            served: true
            storage: true
            schema: {{openAPIV3Schema: {{type: object, x-kubernetes-preserve-unknown-fields: true}}}}
    '''))
    try:
        local.kubectl('wait', '--for=condition=Established', f'crd/cpwidgets.{group}', '--timeout=30s')
        local.kubectl('apply', '-n', local_namespace, '-f', '-', input=textwrap.dedent(f'''
            apiVersion: {group}/v1
            kind: CpWidget
            metadata: {{name: w1}}
            spec: {{size: 3}}
        '''))
        result = local.kubectl('get', f'cpwidgets.{group}', 'w1', '-n', local_namespace, '-o', 'jsonpath={.spec.size}')
        assert result.stdout == '3'
    finally:
        local.kubectl('delete', 'crd', f'cpwidgets.{group}', '--wait=false')


def test_data_survives_an_apiserver_restart(local: Cluster, local_namespace: str) -> None:
    local.kubectl('create', 'configmap', 'kept', '-n', local_namespace, '--from-literal=key=value')
    local.restart_apiserver()
    result = local.kubectl('get', 'configmap', 'kept', '-n', local_namespace, '-o', 'jsonpath={.data.key}')
    assert result.stdout == 'value'


def test_apiserver_restarts_on_the_same_server_address(local: Cluster) -> None:
    server_before = local.server
    local.restart_apiserver()
    assert local.control_plane is not None
    assert local.control_plane.server == server_before
    assert local.kubectl('get', '--raw', '/readyz').stdout == 'ok'


def test_deleted_namespace_disappears(local: Cluster) -> None:
    name = f'test-{os.urandom(4).hex()}'
    local.kubectl('create', 'namespace', name)
    local.kubectl('create', 'configmap', 'content', '-n', name)
    local.kubectl('delete', 'namespace', name, '--timeout=60s')
    assert local.kubectl('get', 'namespace', name, check=False).returncode != 0


# --- Metrics ---

def test_request_counters_grow_by_the_requests_made(local: Cluster, local_namespace: str) -> None:
    local.kubectl('create', 'secret', 'generic', 'counted', '-n', local_namespace)
    before = local.metrics()
    for _ in range(3):
        local.kubectl('get', 'secret', 'counted', '-n', local_namespace)
    delta = subtract_counts(local.metrics(), before)
    assert sum_counts(delta, verb='GET', resource='secrets', code='200') == 3


def test_request_counters_are_parsed_by_their_labels() -> None:
    common = 'component="apiserver",dry_run="",version="v1"'
    text = '\n'.join([
        '# HELP apiserver_request_total [STABLE] Counter of apiserver requests.',
        '# TYPE apiserver_request_total counter',
        f'apiserver_request_total{{code="200",{common},group="",resource="pods",scope="namespace",'
        f'subresource="",verb="LIST"}} 7',
        f'apiserver_request_total{{code="404",{common},group="apps",resource="deployments",scope="resource",'
        f'subresource="status",verb="GET"}} 2',
        'apiserver_request_total_other{code="200",verb="LIST",resource="pods"} 100',
    ])
    counts = parse_request_counts(text)
    assert sum_counts(counts, verb='LIST', resource='pods') == 7
    assert sum_counts(counts, code='404', group='apps', subresource='status') == 2
    assert sum(counts.values()) == 9


# --- Security: etcd for the API server only, files for their owner only, no CA key on disk ---

def _etcd_health(control_plane: ControlPlane, scheme: str, context: ssl.SSLContext | None = None) -> int:
    """The status of etcd's /health on its client port, as asked with this scheme and TLS context."""
    url = f'{scheme}://127.0.0.1:{control_plane.ports.etcd_client}/health'
    try:
        with urllib.request.urlopen(url, context=context, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as e:
        e.close()
        return e.code


def _etcd_context(control_plane: ControlPlane, client: str | None) -> ssl.SSLContext:
    """A TLS context that trusts etcd's CA, with the named client certificate of the PKI, or none."""
    pki = control_plane.root_dir / 'pki'
    context = ssl.create_default_context(cafile=str(pki / 'etcd-ca.pem'))
    if client is not None:
        context.load_cert_chain(str(pki / f'{client}.pem'), str(pki / f'{client}-key.pem'))
    return context


def test_etcd_refuses_plain_http(local: Cluster) -> None:
    assert local.control_plane is not None
    with pytest.raises(OSError):  # etcd closes the connection: "first record does not look like a TLS handshake"
        _etcd_health(local.control_plane, 'http')


@pytest.mark.parametrize('client', [
    pytest.param(None, id='no-certificate'),
    pytest.param('admin', id='cluster-admin-certificate'),
])
def test_etcd_refuses_tls_clients_without_its_client_certificate(local: Cluster, client: str | None) -> None:
    assert local.control_plane is not None
    with pytest.raises(OSError):  # ssl.SSLError, or the connection reset by etcd after its TLS alert
        _etcd_health(local.control_plane, 'https', _etcd_context(local.control_plane, client))


def test_etcd_answers_the_apiserver_certificate_and_the_apiserver_works(local: Cluster) -> None:
    assert local.control_plane is not None
    context = _etcd_context(local.control_plane, 'apiserver-etcd-client')
    assert _etcd_health(local.control_plane, 'https', context) == 200
    assert local.kubectl('get', '--raw', '/readyz/etcd').stdout == 'ok'


def _read_modes(root: pathlib.Path) -> dict[str, int]:
    """The modes (with the file types) of the directory and all under it; what vanishes meanwhile is skipped."""
    modes = {}
    for path in [root, *root.rglob('*')]:
        with contextlib.suppress(FileNotFoundError):  # e.g. etcd's WAL segments being renamed
            modes[str(path.relative_to(root))] = path.lstat().st_mode
    return modes


def test_every_file_is_0600_and_every_directory_0700_even_if_they_existed(
        local: Cluster, tmp_path: pathlib.Path) -> None:
    root = tmp_path / 'root'
    (root / 'logs').mkdir(parents=True, mode=0o755)
    root.chmod(0o755)
    for path in [root / 'logs' / 'etcd.log', root / 'admin.kubeconfig', root / 'state.json',
                 root / 'serviceaccount-default-operator.kubeconfig']:
        path.write_text('{}\n')  # left by an older run, readable by all
        path.chmod(0o644)
    control_plane = ControlPlane(root, bin_dir=local.kubectl_path.parent)
    with control_plane:
        own = Cluster('local', control_plane.kubeconfig, control_plane.server, control_plane.kubectl_path,
                      control_plane)
        own.service_account_kubeconfig('default', 'operator')
        control_plane.restart_etcd()  # and what a restart writes
        modes = _read_modes(root)
    assert {'etcd/member/wal', 'logs/etcd.log', 'pki/admin-key.pem', 'admin.kubeconfig', 'state.json',
            'serviceaccount-default-operator.kubeconfig'} <= set(modes)
    wrong = {name: oct(mode) for name, mode in modes.items()
             if mode not in (stat.S_IFDIR | 0o700, stat.S_IFREG | 0o600)}  # nor links, sockets, etc.
    assert wrong == {}


def _private_keys(path: pathlib.Path) -> list[bytes]:
    """Every PEM private key in the file, also the base64-embedded ones (kubeconfigs' client-key-data)."""
    try:
        data = path.read_bytes()
    except FileNotFoundError:  # gone meanwhile (etcd's WAL segments are renamed)
        return []
    texts = [data]
    with contextlib.suppress(ValueError):  # not JSON: etcd's data, PEM files
        config = json.loads(data)
        for user in config.get('users', []) if isinstance(config, dict) else []:
            texts.append(base64.b64decode(user['user'].get('client-key-data', '')))
    pattern = rb'-----BEGIN [A-Z ]*PRIVATE KEY-----.+?-----END [A-Z ]*PRIVATE KEY-----'
    return [key for text in texts for key in re.findall(pattern, text, re.DOTALL)]


@pytest.mark.parametrize('ca_name', ['ca', 'etcd-ca'])
def test_no_file_holds_the_private_key_of_a_certificate_authority(local: Cluster, ca_name: str) -> None:
    assert local.control_plane is not None
    root = local.control_plane.root_dir
    ca_cert = x509.load_pem_x509_certificate((root / 'pki' / f'{ca_name}.pem').read_bytes())
    keys = [serialization.load_pem_private_key(pem, password=None)
            for path in root.rglob('*') if path.is_file()
            for pem in _private_keys(path)]
    assert len(keys) >= 6  # the servers' and clients' keys are there: the search finds keys
    assert [key for key in keys if key.public_key() == ca_cert.public_key()] == []


# --- Starting and stopping ---

def test_stopping_leaves_no_process_behind(local: Cluster) -> None:
    control_plane = ControlPlane(bin_dir=local.kubectl_path.parent)
    control_plane.start()
    pids = control_plane.pids
    control_plane.stop()
    assert len(pids) == 3
    assert [pid for pid in pids.values() if not _is_gone(pid)] == []


def test_stopping_removes_a_temporary_root_directory(local: Cluster) -> None:
    control_plane = ControlPlane(bin_dir=local.kubectl_path.parent)
    control_plane.start()
    control_plane.stop()
    assert not control_plane.root_dir.exists()


def test_failed_start_reports_the_tail_of_the_failing_log(tmp_path: pathlib.Path) -> None:
    _write_fake_etcd(tmp_path / 'bin', 'etcd: the disk is on fire')
    control_plane = ControlPlane(tmp_path / 'root', bin_dir=tmp_path / 'bin')
    with pytest.raises(ControlPlaneError, match='the disk is on fire'):
        control_plane.start()


def test_start_is_retried_on_port_clashes(tmp_path: pathlib.Path) -> None:
    _write_fake_etcd(tmp_path / 'bin', 'listen tcp 127.0.0.1:2379: bind: address already in use')
    control_plane = ControlPlane(tmp_path / 'root', bin_dir=tmp_path / 'bin', start_attempts=3)
    with pytest.raises(ControlPlaneError):
        control_plane.start()
    log = (tmp_path / 'root' / 'logs' / 'etcd.log').read_text()
    assert log.count('address already in use') == 3


def test_shell_commands_start_and_stop_a_background_cluster(local: Cluster, tmp_path: pathlib.Path) -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, '-m', 'kopf_testing.controlplane', *args, '--state-dir', str(tmp_path)]
        return subprocess.run(argv, cwd=REPOSITORY_ROOT, capture_output=True, text=True, timeout=120)

    started = run('start')
    assert started.returncode == 0, started.stderr
    pids = json.loads((tmp_path / 'state.json').read_text())['pids']
    assert started.stdout == f'export KUBECONFIG={tmp_path / "admin.kubeconfig"}\n'
    assert run('status').returncode == 0
    made = run('kubeconfig', '--service-account', 'default/operator')  # a bearer token in the state directory
    assert made.returncode == 0, made.stderr
    assert made.stdout == f'{tmp_path / "serviceaccount-default-operator.kubeconfig"}\n'
    assert run('stop').returncode == 0
    assert [pid for pid in pids.values() if not _is_gone(pid)] == []
    left = {str(path.relative_to(tmp_path)) for path in tmp_path.rglob('*')}
    assert left and {name.split('/')[0] for name in left} == {'logs'}  # no kubeconfig, key, token or state
