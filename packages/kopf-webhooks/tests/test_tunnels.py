"""
Tunnels: ngrok and the automatic choice between a local server and a tunnel.

The real ngrok is never called: ``pyngrok`` is replaced with a fake module that
records the tunnels it is asked for, or removed to check the explanations.
The local endpoints behind the tunnels are real servers on 127.0.0.1.
"""
from __future__ import annotations

import contextlib
import ipaddress
import pathlib
import socket
import sys
import types
import urllib.parse
from typing import Any, Dict, Iterator, List, Optional, Tuple

import pytest

from kopf_webhooks import MissingDependencyError, WebhookAutoTunnel, WebhookNgrokTunnel


class PyngrokError(Exception):
    """As pyngrok raises when it cannot install or start ngrok."""


class FakeNgrok:
    """Records the connections and disconnections instead of running ngrok."""

    def __init__(self) -> None:
        self.public_url = 'https://abc123.ngrok.io'
        self.configs: List[Dict[str, Any]] = []
        self.connected: List[Tuple[str, Dict[str, Any]]] = []
        self.disconnected: List[str] = []
        self.error: Optional[Exception] = None

    def make_config(self, **kwargs: Any) -> Dict[str, Any]:
        self.configs.append(kwargs)
        return kwargs

    def connect(self, addr: str, **kwargs: Any) -> types.SimpleNamespace:
        if self.error is not None:
            raise self.error
        self.connected.append((addr, kwargs))
        return types.SimpleNamespace(public_url=self.public_url)

    def disconnect(self, public_url: str, **kwargs: Any) -> None:
        self.disconnected.append(public_url)


@pytest.fixture()
def pyngrok(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeNgrok]:
    fake = FakeNgrok()
    package = types.ModuleType('pyngrok')
    conf = types.ModuleType('pyngrok.conf')
    ngrok = types.ModuleType('pyngrok.ngrok')
    exception = types.ModuleType('pyngrok.exception')
    exception.PyngrokError = PyngrokError  # type: ignore[attr-defined]
    conf.PyngrokConfig = fake.make_config  # type: ignore[attr-defined]
    ngrok.connect = fake.connect  # type: ignore[attr-defined]
    ngrok.disconnect = fake.disconnect  # type: ignore[attr-defined]
    package.conf = conf  # type: ignore[attr-defined]
    package.ngrok = ngrok  # type: ignore[attr-defined]
    package.exception = exception  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, 'pyngrok', package)
    monkeypatch.setitem(sys.modules, 'pyngrok.conf', conf)
    monkeypatch.setitem(sys.modules, 'pyngrok.ngrok', ngrok)
    monkeypatch.setitem(sys.modules, 'pyngrok.exception', exception)
    yield fake


@pytest.fixture()
def no_pyngrok(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, 'pyngrok', None)  # makes it unimportable


@pytest.fixture()
def unknown_cluster(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / 'kubeconfig').write_text('current-context: somewhere-far-away\n')
    monkeypatch.setenv('KUBECONFIG', str(tmp_path / 'kubeconfig'))


@pytest.fixture()
def k3d_cluster(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / 'kubeconfig').write_text('current-context: k3d-mycluster\n')
    monkeypatch.setenv('KUBECONFIG', str(tmp_path / 'kubeconfig'))


@pytest.mark.usefixtures('no_pyngrok')
def test_ngrok_tunnel_is_constructed_without_pyngrok() -> None:
    # E.g. an operator that builds several servers & tunnels and uses one, as chosen by its settings.
    tunnel = WebhookNgrokTunnel(addr='127.0.0.1', port=12345, path='/xyz',
                                token='tkn', region='eu', binary='/bin/ngrok')
    assert (tunnel.addr, tunnel.port, tunnel.path) == ('127.0.0.1', 12345, '/xyz')
    assert (tunnel.token, tunnel.region, tunnel.binary) == ('tkn', 'eu', '/bin/ngrok')


@pytest.mark.usefixtures('no_pyngrok')
async def test_ngrok_without_pyngrok_explains_what_to_install_when_started(start: Any) -> None:
    tunnel = WebhookNgrokTunnel()
    with pytest.raises(MissingDependencyError) as err:
        await start(tunnel)
    assert str(err.value) == (
        "Ngrok tunnels need the 'pyngrok' library. Install it with: pip install kopf-webhooks[ngrok]. "
        "Alternatively, use a local server, e.g. kopf.WebhookAutoServer().")


@pytest.mark.parametrize('public_url', [
    pytest.param('https://abc123.ngrok.io', id='https'),
    pytest.param('http://abc123.ngrok.io', id='http'),
])
async def test_ngrok_yields_the_public_https_url_with_the_path(
        start: Any, pyngrok: FakeNgrok, public_url: str,
) -> None:
    pyngrok.public_url = public_url
    client_config = await start(WebhookNgrokTunnel(addr='127.0.0.1', path='/xyz'))
    assert client_config == {'url': 'https://abc123.ngrok.io/xyz'}  # and no caBundle


async def test_ngrok_tunnels_to_a_local_insecure_server(
        start: Any, post: Any, fn: Any, pyngrok: FakeNgrok,
) -> None:
    client_config = await start(WebhookNgrokTunnel(addr='127.0.0.1', path='/xyz'))
    [(addr, options)] = pyngrok.connected
    assert options['bind_tls'] is True
    reply = await post(client_config, '/validate1', url=f'http://{addr}/xyz')
    assert reply.status == 200
    assert [call['webhook'] for call in fn.calls] == ['validate1']


def addresses_of_other_interfaces() -> List[str]:
    """The machine's own addresses other than the loopback, to connect to as a remote client would."""
    addresses = set()
    for _, _, _, _, sockaddr in socket.getaddrinfo(socket.gethostname(), None, socket.AF_INET):
        addresses.add(str(sockaddr[0]))
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(('192.0.2.1', 9))  # no packets are sent: only the route (and the source address) is chosen
        addresses.add(sock.getsockname()[0])
    return sorted(address for address in addresses if not ipaddress.ip_address(address).is_loopback)


@pytest.mark.parametrize('auto', [False, True], ids=['ngrok', 'auto'])
@pytest.mark.usefixtures('unknown_cluster')
async def test_ngrok_local_server_listens_only_on_the_loopback_by_default(
        start: Any, pyngrok: FakeNgrok, auto: bool,
) -> None:
    await start(WebhookAutoTunnel() if auto else WebhookNgrokTunnel())
    [(addr, _)] = pyngrok.connected
    host, port = addr.rsplit(':', 1)
    assert host == '127.0.0.1'
    with socket.create_connection(('127.0.0.1', int(port)), timeout=5):
        pass
    others = addresses_of_other_interfaces()
    if not others:
        pytest.skip("This machine has no network interfaces but the loopback.")
    for other in others:
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection((other, int(port)), timeout=5).close()


async def test_ngrok_local_server_listens_where_told_explicitly(start: Any, pyngrok: FakeNgrok) -> None:
    await start(WebhookNgrokTunnel(addr='0.0.0.0'))
    [(addr, _)] = pyngrok.connected
    _, port = addr.rsplit(':', 1)
    # A server on all the addresses is reached at any of them, one on 127.0.0.1 only is not. Without
    # other interfaces, Linux has other addresses of the loopback (127.0.0.0/8): 127.0.0.2 is one.
    others = addresses_of_other_interfaces() or (['127.0.0.2'] if sys.platform == 'linux' else [])
    if not others:
        pytest.skip("This machine has no addresses but 127.0.0.1.")
    for other in others:
        with socket.create_connection((other, int(port)), timeout=5) as sock:
            assert sock.getpeername()[:2] == (other, int(port))


@pytest.mark.parametrize('kwargs, config', [
    pytest.param({}, {}, id='defaults'),
    pytest.param({'token': 'tkn'}, {'auth_token': 'tkn'}, id='token'),
    pytest.param({'region': 'eu'}, {'region': 'eu'}, id='region'),
    pytest.param({'binary': '/usr/bin/ngrok'}, {'ngrok_path': '/usr/bin/ngrok'}, id='binary'),
    pytest.param({'binary': pathlib.Path('/usr/bin/ngrok')}, {'ngrok_path': '/usr/bin/ngrok'}, id='binary-path'),
])
async def test_ngrok_options_go_to_pyngrok(
        start: Any, pyngrok: FakeNgrok, kwargs: Dict[str, Any], config: Dict[str, Any],
) -> None:
    await start(WebhookNgrokTunnel(addr='127.0.0.1', **kwargs))
    assert pyngrok.configs == [config]
    assert [options['pyngrok_config'] for _, options in pyngrok.connected] == [config]


async def test_ngrok_tunnel_is_disconnected_when_the_iteration_is_closed(fn: Any, pyngrok: FakeNgrok) -> None:
    generator = WebhookNgrokTunnel(addr='127.0.0.1')(fn)
    await generator.__anext__()
    assert pyngrok.disconnected == []
    await generator.aclose()
    assert pyngrok.disconnected == ['https://abc123.ngrok.io']


async def test_ngrok_tunnel_is_disconnected_when_its_context_is_exited(fn: Any, pyngrok: FakeNgrok) -> None:
    async with WebhookNgrokTunnel(addr='127.0.0.1') as tunnel:
        await tunnel(fn).__anext__()
    assert pyngrok.disconnected == ['https://abc123.ngrok.io']


@pytest.mark.usefixtures('k3d_cluster')
async def test_auto_tunnel_uses_a_local_server_for_a_local_cluster(start: Any, pyngrok: FakeNgrok) -> None:
    client_config = await start(WebhookAutoTunnel(addr='127.0.0.1', path='/xyz'))
    url = urllib.parse.urlsplit(client_config['url'])
    assert (url.scheme, url.hostname, url.path) == ('https', 'host.k3d.internal', '/xyz')
    assert 'caBundle' in client_config
    assert pyngrok.connected == []


@pytest.mark.usefixtures('unknown_cluster')
async def test_auto_tunnel_tunnels_via_ngrok_for_an_unknown_cluster(start: Any, pyngrok: FakeNgrok) -> None:
    client_config = await start(WebhookAutoTunnel(addr='127.0.0.1', path='/xyz'))
    assert client_config == {'url': 'https://abc123.ngrok.io/xyz'}


@pytest.mark.usefixtures('unknown_cluster', 'no_pyngrok')
async def test_auto_tunnel_without_pyngrok_explains_what_to_install(start: Any) -> None:
    with pytest.raises(MissingDependencyError, match=r"pip install kopf-webhooks\[ngrok\]"):
        await start(WebhookAutoTunnel(addr='127.0.0.1'))


async def test_ngrok_without_a_binary_explains_the_options(start: Any, pyngrok: FakeNgrok) -> None:
    pyngrok.error = PyngrokError("An error occurred while downloading ngrok from https://bin.equinox.io/.")
    with pytest.raises(MissingDependencyError) as err:
        await start(WebhookNgrokTunnel(binary='/nonexistent/ngrok'))
    assert str(err.value) == (
        "The ngrok tunnel cannot be established: An error occurred while downloading ngrok "
        "from https://bin.equinox.io/. Give the path to an ngrok binary as WebhookNgrokTunnel(binary=...), "
        "or let pyngrok find or download one (its own configuration; the download needs internet access).")
