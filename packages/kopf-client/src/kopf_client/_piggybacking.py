"""
Authentication piggybacked on other client libraries, if they are installed.

``pykube-ng`` and ``kubernetes`` (the official client) know much more about
authentication than the rudimentary logins here: ``exec`` plugins, OIDC and
cloud providers' ``auth-provider`` sections, token refreshing. Their config
loaders are used as they are, and only the result needed for HTTP requests
(the server, the TLS material, the ``Authorization`` header) is taken.

The libraries take the kubeconfig's booleans as they find them: a quoted
``insecure-skip-tls-verify: "false"`` is a non-empty string, so true, and
they skip the TLS verification. The kubeconfig's values are therefore checked
here as ``kubectl`` checks them (see ``_kubeconfig.read_insecure_flag``),
before any request is sent, and the insecure credentials are warned about.

Both libraries are optional: these functions are among the default login
functions only if their library is importable. Called explicitly (from a
``@kopf.on.login`` handler) without the library, they fail with
:class:`kopf.LoginError`, since that is surely a mistake of the setup.
"""
from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from typing import Any, Optional

import kopf
from kopf_client import _kubeconfig, _proxies, _reasons, _tls

PYKUBE_MODULE = 'pykube'
KUBERNETES_MODULE = 'kubernetes'

# When several libraries log in, the vault uses the highest priority first, and the next
# when those credentials are rejected (the same priorities as Kopf 1.45's).
PRIORITY_OF_PYKUBE = 20
PRIORITY_OF_CLIENT = 10


def is_installed(module: str) -> bool:
    """Whether a library is importable, without importing it (some are slow to import)."""
    try:
        return importlib.util.find_spec(module) is not None
    except ValueError:  # imported already, but with no spec (e.g. injected): it is there
        return sys.modules.get(module) is not None
    except ImportError:
        return False


def _login_via_pykube(*, logger: Any) -> Optional[kopf.ConnectionInfo]:
    """
    Log in with the configuration that ``pykube-ng`` finds: in-cluster first, then kubeconfig.

    For users with ``exec`` or ``auth-provider`` sections, pykube obtains the
    token only when it sends a request; so one harmless request is sent to
    let it do so, and the token is taken from that request's headers.
    """
    pykube = import_library(PYKUBE_MODULE, package='pykube-ng')
    config: Any
    try:
        config = pykube.KubeConfig.from_service_account()
        logger.debug("Pykube is configured in cluster with service account.")
    except (OSError, KeyError):  # no token file or no service host/port: not in a cluster
        try:
            config = pykube.KubeConfig.from_file()
            logger.debug("Pykube is configured via kubeconfig file.")
        except (OSError, pykube.exceptions.PyKubeError) as exc:
            report_no_config(logger, 'Pykube', exc, fn_name='login_via_pykube')
            return None

    cluster: Any = config.cluster
    user: Any = config.user
    source = _pykube_source(config)
    insecure = _kubeconfig.read_insecure_flag(cluster, source=source)  # before pykube sends anything
    scheme: Optional[str] = 'Bearer'
    token: Optional[str] = user.get('token') or None
    if token is None and ('exec' in user or 'auth-provider' in user):
        scheme, token = _fetch_pykube_authorization(pykube, config)

    info = kopf.ConnectionInfo(
        server=cluster['server'],
        ca_data=_pykube_bytes(cluster.get('certificate-authority')),
        insecure=insecure or None,
        username=user.get('username') or None,
        password=user.get('password') or None,
        scheme=scheme if token else None,
        token=token,
        certificate_data=_pykube_bytes(user.get('client-certificate')),
        private_key_data=_pykube_bytes(user.get('client-key')),
        default_namespace=_pykube_namespace(config),
        proxy_url=_kubeconfig.read_proxy_url(cluster, source=source),
        priority=PRIORITY_OF_PYKUBE,
    )
    _tls.warn_if_insecure(info, logger=logger, source=source)
    return info


def _login_via_client(*, logger: Any) -> Optional[kopf.ConnectionInfo]:
    """
    Log in with the configuration that ``kubernetes`` finds: in-cluster first, then kubeconfig.

    The official client runs ``exec`` plugins and refreshes OIDC tokens when
    loading the configuration, so the loaded ``Authorization`` value is ready.
    """
    kubernetes = import_library(KUBERNETES_MODULE, package='kubernetes')
    importlib.import_module(f'{KUBERNETES_MODULE}.config')
    importlib.import_module(f'{KUBERNETES_MODULE}.client')
    in_cluster = False
    source: Optional[str] = None
    try:
        kubernetes.config.load_incluster_config()
        in_cluster = True
        logger.debug("Client is configured in cluster with service account.")
    except kubernetes.config.ConfigException:
        try:
            kubernetes.config.load_kube_config()
            logger.debug("Client is configured via kubeconfig file.")
        except (kubernetes.config.ConfigException, OSError) as exc:
            report_no_config(logger, 'Client', exc, fn_name='login_via_client')
            return None
        source = _kubeconfig.check_current_cluster(os.environ)

    configuration_cls: Any = kubernetes.client.Configuration
    get_copy = getattr(configuration_cls, 'get_default_copy', None)
    config: Any = get_copy() if get_copy is not None else configuration_cls()
    scheme, token = _client_authorization(config)

    info = client_connection_info(config, scheme=scheme, token=token, priority=PRIORITY_OF_CLIENT,
                                  namespace=_client_namespace(kubernetes, in_cluster=in_cluster))
    _tls.warn_if_insecure(info, logger=logger, source=source)
    return info


def client_connection_info(
        config: Any,
        *,
        scheme: Optional[str],
        token: Optional[str],
        namespace: Optional[str],
        priority: int,
) -> kopf.ConnectionInfo:
    """The credentials from a ``Configuration`` of the official client (or of its asyncio port)."""
    return kopf.ConnectionInfo(
        server=config.host,
        ca_path=config.ssl_ca_cert or None,
        insecure=not config.verify_ssl,
        username=config.username or None,
        password=config.password or None,
        scheme=scheme,
        token=token,
        certificate_path=config.cert_file or None,
        private_key_path=config.key_file or None,
        default_namespace=namespace,
        # The kubeconfig's proxy-url, in the versions of the libraries that read it (as kubectl does).
        proxy_url=_kubeconfig.read_proxy_url({'proxy-url': getattr(config, 'proxy', None)},
                                            source=f'the cluster at {config.host}'),
        priority=priority,
    )


def import_library(module: str, *, package: str) -> Any:
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise kopf.LoginError(f"The {package!r} library is not installed, so it cannot be used for login. "
                              f"Install it (e.g. as kopf-client[full-auth]), or use another login method.") from exc


def report_no_config(logger: Any, library: str, exc: BaseException, *, fn_name: str) -> None:
    """
    Say why a library has found no credentials: if none has, this is what the user must fix.

    The login error says it once, with the other reasons and the next step; the log only in debug.
    """
    kubeconfig = os.environ.get('KUBECONFIG', '~/.kube/config')
    logger.debug(f"{library} is configured neither in cluster, nor via kubeconfig file "
                 f"(KUBECONFIG={kubeconfig}): {exc}")
    _reasons.nothing_found(fn_name, f"configured neither in cluster, nor via kubeconfig file "
                                    f"(KUBECONFIG={kubeconfig}): {exc}")


def split_authorization(value: Optional[str]) -> tuple[Optional[str], Optional[str]]:
    """``Bearer xyz`` → (``Bearer``, ``xyz``); a bare token is a bearer token."""
    if not value or not value.strip():
        return None, None
    parts = value.strip().split(None, 1)
    if len(parts) == 1:
        return 'Bearer', parts[0]
    scheme = 'Bearer' if parts[0].lower() == 'bearer' else parts[0]
    return scheme, parts[1].strip()


def _client_authorization(config: Any) -> tuple[Optional[str], Optional[str]]:
    """
    The ``Authorization`` value that the official client would send, split into the scheme and token.

    The newer versions keep it as ``BearerToken``, the older ones as ``authorization``. Reading it
    via ``get_api_key_with_prefix`` runs the refresh hook (e.g. of ``exec`` plugins) if there is one.
    """
    getter = getattr(config, 'get_api_key_with_prefix', None)
    for identifier in ('BearerToken', 'authorization'):
        if getter is not None:
            value = getter(identifier)
        else:
            value = (config.api_key or {}).get(identifier)
            prefix = (getattr(config, 'api_key_prefix', None) or {}).get(identifier)
            value = f'{prefix} {value}' if value and prefix else value
        if value:
            return split_authorization(value)
    return None, None


def _fetch_pykube_authorization(pykube: Any, config: Any) -> tuple[Optional[str], Optional[str]]:
    """Let pykube run its auth plugins in one request, and take the header it has sent."""
    api = pykube.HTTPClient(config)
    response = api.get(version='', base='/')  # the status does not matter, only the sent headers
    header = response.request.headers.get('Authorization')
    return split_authorization(header)


def _pykube_source(config: Any) -> str:
    """Where pykube's cluster comes from: the names and the file (none in a cluster)."""
    context: Optional[str] = config.current_context  # it is set: pykube has found the cluster by it
    cluster: Optional[str] = (config.contexts.get(context) or {}).get('cluster')
    return _kubeconfig.describe_cluster(cluster, context=context, origin=getattr(config, 'kubeconfig_file', None))


def _pykube_bytes(value: Any) -> Optional[bytes]:
    """Pykube wraps certificates (whether given as files or as data) into objects with ``.bytes()``."""
    if value is None:
        return None
    data: Optional[bytes] = value.bytes()
    return data or None


def _pykube_namespace(config: Any) -> Optional[str]:
    try:
        namespace: Optional[str] = config.namespace
    except (KeyError, AttributeError):
        return None
    return namespace or None


def _client_namespace(kubernetes: Any, *, in_cluster: bool) -> Optional[str]:
    """The namespace of the pod or of the current kubeconfig context (the client does not keep it)."""
    if in_cluster:
        return pod_namespace()
    try:
        _, active = kubernetes.config.list_kube_config_contexts()
    except Exception:  # the config was loaded just now; any failure here is cosmetic
        return None
    namespace: Optional[str] = ((active or {}).get('context') or {}).get('namespace')
    return namespace or None


def pod_namespace() -> Optional[str]:
    """The namespace of the pod the operator runs in (the client libraries do not keep it)."""
    path = os.path.join('/var/run/secrets/kubernetes.io/serviceaccount', 'namespace')
    try:
        with open(path, encoding='utf-8') as f:
            return f.read().strip() or None
    except OSError:
        return None


def login_via_pykube(
        *,
        logger: Any,
        settings: Optional[kopf.OperatorSettings] = None,
        **_: Any,
) -> Optional[kopf.ConnectionInfo]:
    """Log in with the configuration that ``pykube-ng`` finds (with ``settings.networking.trust_env``)."""
    return _proxies.trusting_env(_login_via_pykube(logger=logger), settings)


def login_via_client(
        *,
        logger: Any,
        settings: Optional[kopf.OperatorSettings] = None,
        **_: Any,
) -> Optional[kopf.ConnectionInfo]:
    """Log in with the configuration that ``kubernetes`` finds (with ``settings.networking.trust_env``)."""
    return _proxies.trusting_env(_login_via_client(logger=logger), settings)
