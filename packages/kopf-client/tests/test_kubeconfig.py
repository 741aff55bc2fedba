"""
Login with kubeconfig files: which files, how they merge, what is taken from them.

The files are real files in a temporary directory; ``KUBECONFIG`` and ``HOME``
are set per test, so that the developer's own kubeconfig is never read.
"""
from __future__ import annotations

import base64
import logging
import pathlib
from typing import Any, Dict, Optional

import pytest
import yaml

import kopf
from kopf_client import login_with_kubeconfig


@pytest.fixture(autouse=True)
def _isolated_home(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> pathlib.Path:
    home = tmp_path / 'home'
    home.mkdir()
    monkeypatch.setenv('HOME', str(home))
    monkeypatch.delenv('KUBECONFIG', raising=False)
    return home


def _kubeconfig(
        *,
        cluster: Optional[Dict[str, Any]] = None,
        user: Optional[Dict[str, Any]] = None,
        context: Optional[Dict[str, Any]] = None,
        name: str = 'dev',
        current: Optional[str] = 'dev',
) -> Dict[str, Any]:
    doc: Dict[str, Any] = {
        'apiVersion': 'v1', 'kind': 'Config',
        'clusters': [{'name': name, 'cluster': {'server': 'https://k8s.example:6443', **(cluster or {})}}],
        'users': [{'name': name, 'user': user or {}}],
        'contexts': [{'name': name, 'context': {'cluster': name, 'user': name, **(context or {})}}],
    }
    if current is not None:
        doc['current-context'] = current
    return doc


def _write(path: pathlib.Path, doc: Any) -> pathlib.Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(doc))
    return path


def _use(monkeypatch: pytest.MonkeyPatch, *paths: pathlib.Path) -> None:
    monkeypatch.setenv('KUBECONFIG', ':'.join(str(path) for path in paths))


def _login() -> kopf.ConnectionInfo:
    info = login_with_kubeconfig()
    assert info is not None
    return info


def test_no_kubeconfig_means_no_credentials() -> None:
    assert login_with_kubeconfig() is None


def test_default_kubeconfig_in_home_is_used(_isolated_home: pathlib.Path) -> None:
    _write(_isolated_home / '.kube' / 'config', _kubeconfig(user={'token': 'xyz'}))
    assert _login().token == 'xyz'


def test_kubeconfig_env_var_wins_over_the_default(
        _isolated_home: pathlib.Path, tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    _write(_isolated_home / '.kube' / 'config', _kubeconfig(user={'token': 'default'}))
    _use(monkeypatch, _write(tmp_path / 'custom', _kubeconfig(user={'token': 'custom'})))
    assert _login().token == 'custom'


def test_kubeconfig_env_var_with_no_existing_files_fails(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    _use(monkeypatch, tmp_path / 'absent1', tmp_path / 'absent2')
    with pytest.raises(kopf.LoginError, match='None of the kubeconfig files'):
        login_with_kubeconfig()


def test_server_and_token_are_taken(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig(user={'token': 'xyz'})))
    info = _login()
    assert info.server == 'https://k8s.example:6443'
    assert info.scheme == 'Bearer'
    assert info.token == 'xyz'


def test_token_file_is_read_relative_to_the_kubeconfig(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / 'conf').mkdir()
    (tmp_path / 'conf' / 'token.txt').write_text('from-file\n')
    _use(monkeypatch, _write(tmp_path / 'conf' / 'config', _kubeconfig(user={'tokenFile': 'token.txt'})))
    assert _login().token == 'from-file'


def test_inline_token_wins_over_token_file(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / 'token.txt').write_text('from-file')
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig(user={'token': 'inline', 'tokenFile': 'token.txt'})))
    assert _login().token == 'inline'


def test_client_certificate_and_key_files_are_resolved(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / 'certs').mkdir()
    (tmp_path / 'certs' / 'client.crt').write_text('CERT')
    (tmp_path / 'certs' / 'client.key').write_text('KEY')
    user = {'client-certificate': 'certs/client.crt', 'client-key': str(tmp_path / 'certs' / 'client.key')}
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig(user=user)))
    info = _login()
    assert info.certificate_path == str(tmp_path / 'certs' / 'client.crt')
    assert info.private_key_path == str(tmp_path / 'certs' / 'client.key')
    assert info.certificate_data is None
    assert info.private_key_data is None


def test_client_certificate_and_key_data_are_decoded(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    user = {'client-certificate-data': base64.b64encode(b'CERT').decode(),
            'client-key-data': base64.b64encode(b'KEY').decode()}
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig(user=user)))
    info = _login()
    assert info.certificate_data == b'CERT'
    assert info.private_key_data == b'KEY'
    assert info.certificate_path is None


def test_ca_file_is_resolved(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / 'ca.crt').write_text('CA')
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig(cluster={'certificate-authority': 'ca.crt'})))
    info = _login()
    assert info.ca_path == str(tmp_path / 'ca.crt')
    assert info.ca_data is None


def test_ca_data_is_decoded_and_wins_over_the_file(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = {'certificate-authority-data': base64.b64encode(b'CA').decode(),
               'certificate-authority': 'absent.crt'}
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig(cluster=cluster)))
    info = _login()
    assert info.ca_data == b'CA'
    assert info.ca_path is None


@pytest.mark.parametrize('flag, expected', [
    pytest.param(True, True, id='insecure'),
    pytest.param(False, None, id='secure'),
])
def test_insecure_flag(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, flag: bool, expected: Optional[bool],
) -> None:
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig(cluster={'insecure-skip-tls-verify': flag})))
    assert _login().insecure is expected


# The booleans, as strictly as kubectl reads them (issue 27 §2): a quoted "false" is a string,
# which is true in Python, and it used to turn the TLS verification off, silently.

@pytest.mark.parametrize('text, shown, fix', [
    pytest.param('"false"', "the string 'false'", 'insecure-skip-tls-verify: false', id='quoted-false'),
    pytest.param("'true'", "the string 'true'", 'insecure-skip-tls-verify: true', id='quoted-true'),
    pytest.param('"False"', "the string 'False'", 'insecure-skip-tls-verify: false', id='quoted-capitalized'),
    pytest.param('"no"', "the string 'no'", 'insecure-skip-tls-verify: true (or false)', id='quoted-no'),
    pytest.param('0', '0 (int)', 'insecure-skip-tls-verify: true (or false)', id='number-0'),
    pytest.param('1', '1 (int)', 'insecure-skip-tls-verify: true (or false)', id='number-1'),
    pytest.param('[]', '[] (list)', 'insecure-skip-tls-verify: true (or false)', id='list'),
])
def test_insecure_flag_that_is_not_a_yaml_boolean_fails_the_login(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, text: str, shown: str, fix: str,
) -> None:
    path = tmp_path / 'config'
    path.write_text(_INSECURE_KUBECONFIG.format(value=text))
    _use(monkeypatch, path)
    with pytest.raises(kopf.LoginError) as err:
        login_with_kubeconfig()
    assert str(err.value) == (
        f"The kubeconfig's insecure-skip-tls-verify must be a YAML boolean, but it is {shown} "
        f"in the cluster 'dev-cluster' of the context 'dev' in {path}; kubectl refuses it too. "
        f"Write it without quotes: `{fix}`.")


def test_unusable_kubeconfig_is_a_permanent_failure_of_the_login_handler(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    # So that the framework logs it as one line, without a traceback, and retries nothing.
    (tmp_path / 'config').write_text(_INSECURE_KUBECONFIG.format(value='"false"'))
    _use(monkeypatch, tmp_path / 'config')
    with pytest.raises(kopf.PermanentError):
        login_with_kubeconfig()


@pytest.mark.parametrize('text, expected', [
    pytest.param('true', True, id='true'),
    pytest.param('false', None, id='false'),
    pytest.param('True', True, id='capitalized'),
    pytest.param('yes', True, id='yaml-1.1-yes'),  # YAML 1.1, as kubectl's YAML library reads it too
    pytest.param('null', None, id='null'),
])
def test_insecure_flag_that_is_a_yaml_boolean_is_taken(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: Optional[bool],
) -> None:
    (tmp_path / 'config').write_text(_INSECURE_KUBECONFIG.format(value=text))
    _use(monkeypatch, tmp_path / 'config')
    assert _login().insecure is expected


@pytest.mark.parametrize('ca', [
    pytest.param({'certificate-authority-data': base64.b64encode(b'CA').decode()}, id='ca-data'),
    pytest.param({'certificate-authority': 'ca.crt'}, id='ca-file'),
])
def test_insecure_flag_with_a_ca_fails_the_login_as_in_kubectl(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, ca: Dict[str, str],
) -> None:
    (tmp_path / 'ca.crt').write_text('CA')
    path = _write(tmp_path / 'config', _kubeconfig(cluster={'insecure-skip-tls-verify': True, **ca}))
    _use(monkeypatch, path)
    with pytest.raises(kopf.LoginError) as err:
        login_with_kubeconfig()
    assert str(err.value) == (
        f"The kubeconfig has both insecure-skip-tls-verify: true and {next(iter(ca))} in the cluster 'dev' "
        f"of the context 'dev' in {path}; kubectl refuses it too (specifying a root certificates file "
        f"with the insecure flag is not allowed). Remove insecure-skip-tls-verify to verify the server "
        f"with this CA, or remove the CA.")


def test_secure_flag_with_a_ca_is_taken(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = {'insecure-skip-tls-verify': False, 'certificate-authority-data': base64.b64encode(b'CA').decode()}
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig(cluster=cluster)))
    info = _login()
    assert (info.insecure, info.ca_data) == (None, b'CA')


def test_insecure_kubeconfig_is_warned_about_once_per_login(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    path = tmp_path / 'config'
    path.write_text(_INSECURE_KUBECONFIG.format(value='true'))
    _use(monkeypatch, path)
    logger = logging.getLogger('test.login')
    with caplog.at_level(logging.WARNING):
        login_with_kubeconfig(logger=logger)
        login_with_kubeconfig(logger=logger)
    assert [(r.name, r.levelno, r.message) for r in caplog.records] == [
        ('test.login', logging.WARNING,
         f"TLS verification is off for https://k8s.example:6443 (the cluster 'dev-cluster' of the context 'dev' "
         f"in {path}): the server's certificate is not checked, so the credentials go to whoever answers at "
         f"this address. Give the server's CA instead (certificate-authority in a kubeconfig, ca_path or "
         f"ca_data in a ConnectionInfo)."),
    ] * 2


def test_secure_kubeconfig_is_not_warned_about(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    (tmp_path / 'config').write_text(_INSECURE_KUBECONFIG.format(value='false'))
    _use(monkeypatch, tmp_path / 'config')
    with caplog.at_level(logging.DEBUG):
        _login()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


# As the issue shows it: written by hand, with the cluster's name differing from the context's.
_INSECURE_KUBECONFIG = """\
apiVersion: v1
kind: Config
clusters:
- name: dev-cluster
  cluster:
    server: https://k8s.example:6443
    insecure-skip-tls-verify: {value}
users:
- name: dev-user
  user:
    token: xyz
contexts:
- name: dev
  context:
    cluster: dev-cluster
    user: dev-user
current-context: dev
"""


def test_basic_auth_is_taken(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig(user={'username': 'admin', 'password': 'secret'})))
    info = _login()
    assert (info.username, info.password, info.token) == ('admin', 'secret', None)


def test_context_namespace_becomes_the_default_namespace(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig(context={'namespace': 'team-a'})))
    assert _login().default_namespace == 'team-a'


def test_context_without_a_user_is_anonymous(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    doc = _kubeconfig()
    del doc['contexts'][0]['context']['user']
    _use(monkeypatch, _write(tmp_path / 'config', doc))
    info = _login()
    assert (info.token, info.username, info.certificate_path) == (None, None, None)


def test_several_files_are_merged_with_the_first_definition_winning(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    first = _write(tmp_path / 'first', {
        'current-context': 'prod',
        'users': [{'name': 'prod', 'user': {'token': 'first-token'}}],
    })
    second = _write(tmp_path / 'second', {
        'current-context': 'dev',
        'clusters': [{'name': 'prod', 'cluster': {'server': 'https://prod.example'}}],
        'users': [{'name': 'prod', 'user': {'token': 'second-token'}}],
        'contexts': [{'name': 'prod', 'context': {'cluster': 'prod', 'user': 'prod'}}],
    })
    _use(monkeypatch, first, second)
    info = _login()
    assert info.server == 'https://prod.example'
    assert info.token == 'first-token'


def test_absent_files_among_several_are_ignored(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, tmp_path / 'absent', _write(tmp_path / 'config', _kubeconfig(user={'token': 'xyz'})))
    assert _login().token == 'xyz'


def test_relative_paths_are_relative_to_the_file_defining_them(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    (tmp_path / 'b' / 'ca.crt').parent.mkdir()
    (tmp_path / 'b' / 'ca.crt').write_text('CA')
    first = _write(tmp_path / 'a' / 'config', {'current-context': 'dev'})
    second = _write(tmp_path / 'b' / 'config', _kubeconfig(cluster={'certificate-authority': 'ca.crt'}))
    _use(monkeypatch, first, second)
    assert _login().ca_path == str(tmp_path / 'b' / 'ca.crt')


def test_empty_kubeconfig_file_has_no_current_context(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / 'config').write_text('')
    _use(monkeypatch, tmp_path / 'config')
    with pytest.raises(kopf.LoginError, match='no current context'):
        login_with_kubeconfig()


@pytest.mark.parametrize('doc, message', [
    pytest.param(_kubeconfig(current=None), 'no current context', id='no-current-context'),
    pytest.param(_kubeconfig(current='prod'), "'prod' is not defined", id='undefined-context'),
    pytest.param(_kubeconfig(context={'cluster': 'other'}), "cluster 'other' .* is not defined",
                 id='undefined-cluster'),
    pytest.param(_kubeconfig(context={'user': 'other'}), "user 'other' .* is not defined", id='undefined-user'),
    pytest.param(_kubeconfig(cluster={'server': ''}), 'has no server', id='no-server'),
    pytest.param(_kubeconfig(cluster={'certificate-authority': 'absent.crt'}),
                 'certificate-authority file .* does not exist', id='absent-ca-file'),
    pytest.param(_kubeconfig(user={'client-certificate': 'absent.crt'}),
                 'client-certificate file .* does not exist', id='absent-cert-file'),
    pytest.param(_kubeconfig(user={'tokenFile': 'absent.txt'}), 'tokenFile file .* does not exist',
                 id='absent-token-file'),
    pytest.param(_kubeconfig(user={'client-key-data': '!!!not base64!!!'}), 'not valid base64', id='bad-base64'),
    pytest.param(['not', 'a', 'mapping'], 'not a mapping', id='not-a-mapping'),
])
def test_unusable_kubeconfig_fails_with_a_clear_message(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, doc: Any, message: str,
) -> None:
    _use(monkeypatch, _write(tmp_path / 'config', doc))
    with pytest.raises(kopf.LoginError, match=message):
        login_with_kubeconfig()


def test_malformed_yaml_fails_with_a_clear_message(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / 'config').write_text('clusters: [\n')
    _use(monkeypatch, tmp_path / 'config')
    with pytest.raises(kopf.LoginError, match='cannot be read'):
        login_with_kubeconfig()


def test_success_is_logged_with_the_given_logger(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig(user={'token': 'xyz'})))
    logger = logging.getLogger('test.login')
    with caplog.at_level(logging.DEBUG, logger='test.login'):
        login_with_kubeconfig(logger=logger)
    assert [(r.name, r.levelno, r.message) for r in caplog.records] == [
        ('test.login', logging.DEBUG, 'Client is configured via kubeconfig file.'),
    ]


def test_exec_plugins_are_warned_about(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    user = {'exec': {'apiVersion': 'client.authentication.k8s.io/v1', 'command': 'aws'}}
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig(user=user)))
    info = _login()
    assert info.token is None
    assert 'authenticates with exec' in caplog.text


# The cluster's proxy-url, as kubectl honours it.

def test_proxy_url_of_the_cluster_is_taken(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig(cluster={'proxy-url': 'http://proxy.local:3128'})))
    assert _login().proxy_url == 'http://proxy.local:3128'


def test_no_proxy_url_means_no_proxy(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig()))
    assert _login().proxy_url is None


def test_socks5_proxy_url_without_its_package_is_one_clear_login_error(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(__import__('sys').modules, 'aiohttp_socks', None)  # not importable, even if installed
    path = _write(tmp_path / 'config', _kubeconfig(cluster={'proxy-url': 'socks5://proxy.local:1080'}))
    _use(monkeypatch, path)
    with pytest.raises(kopf.LoginError) as err:
        login_with_kubeconfig()
    assert str(err.value) == (
        f"The kubeconfig's proxy-url 'socks5://proxy.local:1080' is a SOCKS proxy, which needs the "
        f"'aiohttp-socks' package: pip install aiohttp-socks (in the cluster 'dev' of the context 'dev' in {path})")


def test_unsupported_proxy_scheme_is_one_clear_login_error(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig(cluster={'proxy-url': 'ftp://proxy.local'})))
    with pytest.raises(kopf.LoginError, match=r"is not a proxy URL that can be used: use http://, https:// or socks5://"):
        login_with_kubeconfig()


# Kopf's ``settings`` keyword of the login functions: the proxy variables' trust goes into the credentials.

@pytest.mark.parametrize('trust_env', [True, False])
def test_settings_trust_env_goes_into_the_credentials(
        tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch, trust_env: bool,
) -> None:
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig(user={'token': 'abc'})))
    settings = kopf.OperatorSettings()
    settings.networking.trust_env = trust_env
    info = login_with_kubeconfig(settings=settings)
    assert info is not None
    assert info.trust_env is trust_env
    assert info.token == 'abc'


def test_no_settings_leave_the_credentials_as_read(tmp_path: pathlib.Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _use(monkeypatch, _write(tmp_path / 'config', _kubeconfig(user={'token': 'abc'})))
    info = login_with_kubeconfig()
    assert info is not None
    assert info.trust_env is False
