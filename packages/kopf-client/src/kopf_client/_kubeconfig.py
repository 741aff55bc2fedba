"""
Authentication with the raw data of kubeconfig files, as ``kubectl`` reads them.

The files are those of ``KUBECONFIG`` (several of them separated by ``:``,
or ``;`` on Windows), or ``~/.kube/config`` if it is not set. Several files are
merged as ``kubectl`` merges them: the first file that defines a cluster,
a user, a context, or the current context wins; the later ones only add
what is not defined yet. Files listed but absent are ignored, as in
``kubectl`` — unless none of them exists, which is most likely a mistake.

Relative paths of certificates and token files are relative to the file that
defines them (not to the current directory), so that a kubeconfig with its
certificates can be moved around as a whole.

Only the static data is used: ``exec`` plugins and ``auth-provider`` sections
need code to run, which the piggybacked client libraries can do (see
``login_via_pykube`` and ``login_via_client``).

Booleans are read as strictly as ``kubectl`` reads them: a YAML boolean, or
nothing. A quoted ``insecure-skip-tls-verify: "false"`` is a string, and a
non-empty string is true in Python: taken as it is, it would turn the TLS
verification off while the file says the opposite. ``kubectl`` refuses such
a file (a type error), and so do we, with a message that says how to fix it.
We also refuse, as ``kubectl`` does, a cluster that is both insecure and has
a CA: one of the two is a mistake, and which one cannot be guessed.
"""
from __future__ import annotations

import base64
import binascii
import dataclasses
import logging
import os
import pathlib
from typing import Any, Dict, Mapping, Optional, Sequence

import yaml

import kopf
from kopf_client import _proxies, _reasons, _tls

_logger = logging.getLogger(__name__)

DEFAULT_KUBECONFIG = '~/.kube/config'


# Below the service account's: in a pod, its own identity wins over a kubeconfig in its image.
PRIORITY = 10

INSECURE = 'insecure-skip-tls-verify'
PROXY_URL = 'proxy-url'
CA_KEYS = ('certificate-authority', 'certificate-authority-data')


class KubeconfigError(kopf.LoginError, kopf.PermanentError):
    """
    A kubeconfig that cannot be used as it is: a login error that no retry can fix.

    Being also a :class:`kopf.PermanentError`, it fails the login handler at
    once with its message in one log line, without a traceback or retries:
    the file is the user's to fix, and the message says how.
    """


def login_with_kubeconfig(
        *,
        settings: Optional[kopf.OperatorSettings] = None,
        **kwargs: Any,
) -> Optional[kopf.ConnectionInfo]:
    """
    A minimalistic login handler that gets the raw credentials from kubeconfig files.

    It is intended to make operators runnable in trivial setups when neither
    ``pykube-ng`` nor ``kubernetes`` are installed. ``None`` if there is no
    kubeconfig at all; :class:`kopf.LoginError` if there is one but it cannot
    be used (e.g. no current context, a missing certificate file, or a quoted boolean).
    """
    paths = find_kubeconfig_paths(os.environ)
    if not paths:
        default = pathlib.Path(DEFAULT_KUBECONFIG).expanduser()
        _reasons.nothing_found('login_with_kubeconfig', f"no kubeconfig: $KUBECONFIG is not set, "
                                                        f"and {default} does not exist")
        return None
    logger = kwargs.get('logger')
    info = read_kubeconfig(paths, logger=logger)
    if logger is not None:
        logger.debug("Client is configured via kubeconfig file.")
    return _proxies.trusting_env(info, settings)


def find_kubeconfig_paths(environ: Mapping[str, str]) -> Sequence[pathlib.Path]:
    """The existing kubeconfig files in the order of their priority; empty if there are none."""
    listed = environ.get('KUBECONFIG', '')
    if listed.strip():
        paths = _unique([pathlib.Path(item.strip()).expanduser() for item in listed.split(os.pathsep) if item.strip()])
        existing = [path for path in paths if path.is_file()]
        if not existing:
            raise KubeconfigError(f"None of the kubeconfig files in $KUBECONFIG exist: {listed!r}.")
        return existing
    default = pathlib.Path(DEFAULT_KUBECONFIG).expanduser()
    return [default] if default.is_file() else []


def read_kubeconfig(
        paths: Sequence[pathlib.Path],
        *,
        logger: Optional[Any] = None,
) -> kopf.ConnectionInfo:
    """The credentials of the current context of the merged kubeconfig files."""
    config = _merge([_load(path) for path in paths])
    where = ', '.join(str(path) for path in paths)
    context = _find_current_context(config, where=where)
    cluster, server = _find_cluster(config, context, where=where)
    user = _find_user(config, context, where=where)
    source = describe_cluster(cluster.name, context=context.name, origin=cluster.origin)
    insecure = read_insecure_flag(cluster.fields, source=source)

    user_fields: Mapping[str, Any] = user.fields if user is not None else {}
    if user is not None:
        _warn_about_plugins(user, logger=logger)

    token = user_fields.get('token') or None
    if token is None and user is not None and user_fields.get('tokenFile'):
        token = _file(user, 'tokenFile').read_text(encoding='utf-8').strip() or None

    info = kopf.ConnectionInfo(
        server=str(server),
        ca_path=_path_unless_data(cluster, 'certificate-authority'),
        ca_data=_data(cluster, 'certificate-authority-data'),
        insecure=insecure or None,
        username=user_fields.get('username') or None,
        password=user_fields.get('password') or None,
        scheme='Bearer' if token else None,
        token=token,
        certificate_path=_path_unless_data(user, 'client-certificate') if user else None,
        certificate_data=_data(user, 'client-certificate-data') if user else None,
        private_key_path=_path_unless_data(user, 'client-key') if user else None,
        private_key_data=_data(user, 'client-key-data') if user else None,
        default_namespace=context.fields.get('namespace') or None,
        proxy_url=read_proxy_url(cluster.fields, source=source),
        priority=PRIORITY,
    )
    _tls.warn_if_insecure(info, logger=logger or _logger, source=source)
    return info


def _find_current_context(config: _Config, *, where: str) -> _Named:
    if not config.current_context:
        raise KubeconfigError(f"The kubeconfig has no current context (set one with "
                              f"`kubectl config use-context NAME`): {where}")
    context = config.contexts.get(config.current_context)
    if context is None:
        raise KubeconfigError(f"The current context {config.current_context!r} "
                              f"is not defined in the kubeconfig: {where}")
    return context


def _find_cluster(config: _Config, context: _Named, *, where: str) -> tuple[_Named, Any]:
    """The context's cluster and its server (required both)."""
    cluster_name = context.fields.get('cluster')
    if not cluster_name:
        raise KubeconfigError(f"The context {context.name!r} has no cluster in {context.origin}")
    cluster = config.clusters.get(cluster_name)
    if cluster is None:
        raise KubeconfigError(f"The cluster {cluster_name!r} of the context {context.name!r} "
                              f"is not defined in the kubeconfig: {where}")
    server = cluster.fields.get('server')
    if not server:
        raise KubeconfigError(f"The cluster {cluster.name!r} has no server in {cluster.origin}")
    return cluster, server


def _find_user(config: _Config, context: _Named, *, where: str) -> Optional[_Named]:
    """The context's user, if it names one."""
    user_name = context.fields.get('user')
    user = config.users.get(user_name) if user_name else None
    if user_name and user is None:
        raise KubeconfigError(f"The user {user_name!r} of the context {context.name!r} "
                              f"is not defined in the kubeconfig: {where}")
    return user


def read_proxy_url(cluster: Mapping[str, Any], *, source: str) -> Optional[str]:
    """The cluster's ``proxy-url``, if any, checked now: a login error is clearer than failing requests."""
    value = cluster.get(PROXY_URL)
    if value is None or value == '':
        return None
    try:
        return _proxies.check_proxy_url(str(value), source=f"kubeconfig's {PROXY_URL}")
    except _proxies.ProxyError as exc:
        raise KubeconfigError(f"{exc} (in {source})") from None


def describe_cluster(cluster: Optional[str], *, context: Optional[str], origin: Optional[object]) -> str:
    """Where a cluster's settings come from, for the messages: the names and the file."""
    where = f"the cluster {cluster!r} of the context {context!r}"
    return f"{where} in {origin}" if origin else where


def read_insecure_flag(cluster: Mapping[str, Any], *, source: str) -> Optional[bool]:
    """
    The cluster's ``insecure-skip-tls-verify``, as strictly as ``kubectl`` reads it.

    Also refused as in ``kubectl``: the flag together with a CA (in ``kubectl``'s
    words, "specifying a root certificates file with the insecure flag is not allowed").
    """
    insecure = read_boolean(cluster, INSECURE, source=source)
    ca_keys = [key for key in CA_KEYS if cluster.get(key)]
    if insecure and ca_keys:
        raise KubeconfigError(
            f"The kubeconfig has both {INSECURE}: true and {ca_keys[0]} in {source}; kubectl refuses "
            f"it too (specifying a root certificates file with the insecure flag is not allowed). "
            f"Remove {INSECURE} to verify the server with this CA, or remove the CA.")
    return insecure


def read_boolean(fields: Mapping[str, Any], key: str, *, source: str) -> Optional[bool]:
    """A YAML boolean, or ``None`` if absent; anything else (``"false"``, ``0``) is refused, not guessed."""
    value = fields.get(key)
    if value is None or isinstance(value, bool):
        return value
    spelled = value.strip().lower() if isinstance(value, str) else ''
    fix = f'{key}: {spelled}' if spelled in ('true', 'false') else f'{key}: true (or false)'
    what = f'the string {value!r}' if isinstance(value, str) else f'{value!r} ({type(value).__name__})'
    raise KubeconfigError(
        f"The kubeconfig's {key} must be a YAML boolean, but it is {what} in {source}; "
        f"kubectl refuses it too. Write it without quotes: `{fix}`.")


def check_current_cluster(environ: Mapping[str, str]) -> Optional[str]:
    """
    Check the TLS flags of the current context's cluster in the kubeconfig files; return where it is.

    For the client libraries that read the same files but keep only the values derived
    from them (the official client's ``verify_ssl = not insecure-skip-tls-verify`` takes
    the string ``"false"`` for true): the raw value is checked here instead.
    ``None`` if there is no such cluster in the files (e.g. in a cluster): nothing to check.
    """
    paths = find_kubeconfig_paths(environ)
    config = _merge([_load(path) for path in paths])
    context = config.contexts.get(config.current_context or '')
    cluster = config.clusters.get(str(context.fields.get('cluster') or '')) if context is not None else None
    if context is None or cluster is None:
        return None
    source = describe_cluster(cluster.name, context=context.name, origin=cluster.origin)
    read_insecure_flag(cluster.fields, source=source)
    return source


@dataclasses.dataclass(frozen=True)
class _Named:
    """A cluster, user or context, with the file that defines it (to resolve relative paths)."""
    name: str
    fields: Mapping[str, Any] = dataclasses.field(repr=False)  # the users' hold tokens & keys
    origin: pathlib.Path


@dataclasses.dataclass
class _Config:
    current_context: Optional[str] = None
    clusters: Dict[str, _Named] = dataclasses.field(default_factory=dict)
    users: Dict[str, _Named] = dataclasses.field(default_factory=dict)
    contexts: Dict[str, _Named] = dataclasses.field(default_factory=dict)


def _load(path: pathlib.Path) -> _Config:
    """One kubeconfig file, with its named items."""
    try:
        with path.open(encoding='utf-8') as f:
            doc = yaml.safe_load(f)
    except (OSError, yaml.YAMLError) as exc:
        raise KubeconfigError(f"The kubeconfig cannot be read: {path}: {exc}") from exc
    if doc is None:  # an empty file is a valid (empty) kubeconfig
        doc = {}
    if not isinstance(doc, dict):
        raise KubeconfigError(f"The kubeconfig is not a mapping: {path}")

    config = _Config(current_context=doc.get('current-context') or None)
    for section, key, target in [('clusters', 'cluster', config.clusters),
                                 ('users', 'user', config.users),
                                 ('contexts', 'context', config.contexts)]:
        for item in doc.get(section) or []:
            if isinstance(item, dict) and item.get('name') and item['name'] not in target:
                fields = item.get(key) or {}
                if not isinstance(fields, dict):
                    raise KubeconfigError(f"The {key} {item['name']!r} is not a mapping in {path}")
                target[item['name']] = _Named(name=item['name'], fields=fields, origin=path)
    return config


def _merge(configs: Sequence[_Config]) -> _Config:
    """Merge the configs as kubectl does: the first definition of anything wins."""
    merged = _Config()
    for config in configs:
        merged.current_context = merged.current_context or config.current_context
        for source, target in [(config.clusters, merged.clusters),
                               (config.users, merged.users),
                               (config.contexts, merged.contexts)]:
            for name, item in source.items():
                target.setdefault(name, item)
    return merged


def _file(item: _Named, key: str) -> pathlib.Path:
    """An existing file referred to by an item, relative to the kubeconfig that defines the item."""
    path = pathlib.Path(str(item.fields[key])).expanduser()
    if not path.is_absolute():
        path = item.origin.parent / path
    if not path.is_file():
        raise KubeconfigError(f"The {key} file of {item.name!r} does not exist: {path} (in {item.origin})")
    return path


def _path_unless_data(item: _Named, key: str) -> Optional[str]:
    """The file's path, unless the same value is also given inline (which wins, as in kubectl)."""
    if item.fields.get(f'{key}-data') or not item.fields.get(key):
        return None
    return str(_file(item, key))


def _data(item: _Named, key: str) -> Optional[bytes]:
    value = item.fields.get(key)
    if not value:
        return None
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise KubeconfigError(f"The {key} of {item.name!r} is not valid base64 in {item.origin}") from exc


def _warn_about_plugins(user: _Named, *, logger: Optional[Any]) -> None:
    """Say why the credentials will not work if they need plugins that are not supported here."""
    static = ('token', 'tokenFile', 'client-certificate', 'client-certificate-data', 'username')
    plugins = [key for key in ('exec', 'auth-provider') if user.fields.get(key)]
    if plugins and not any(user.fields.get(key) for key in static):
        (logger or _logger).warning(
            f"The kubeconfig user {user.name!r} authenticates with {' & '.join(plugins)}, "
            f"which the built-in kubeconfig login does not support; the requests will be anonymous. "
            f"Install pykube-ng or kubernetes to use their authentication, or add a @kopf.on.login handler.")


def _unique(paths: Sequence[pathlib.Path]) -> Sequence[pathlib.Path]:
    seen: Dict[pathlib.Path, None] = {}
    for path in paths:
        seen.setdefault(path, None)
    return list(seen)
