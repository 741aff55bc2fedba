"""
Plain GET requests to the cluster's servers, with the standard library only.

The control plane needs a few requests of its own (readiness, the ``default``
namespace, ``/metrics``) before any Kubernetes client is involved; and it must
not depend on the client under test, so ``urllib`` with an SSL context does.
"""
import pathlib
import ssl
import urllib.error
import urllib.request


def make_ssl_context(
        *,
        ca_path: pathlib.Path,
        cert_path: pathlib.Path | None = None,
        key_path: pathlib.Path | None = None,
) -> ssl.SSLContext:
    """A client context that trusts only the cluster's CA, optionally with a client certificate."""
    context = ssl.create_default_context(cafile=str(ca_path))
    if cert_path is not None:
        context.load_cert_chain(str(cert_path), str(key_path) if key_path is not None else None)
    return context


def get(
        url: str,
        *,
        context: ssl.SSLContext | None = None,
        token: str | None = None,
        timeout: float = 5.0,
) -> tuple[int, bytes]:
    """
    The status and body of a GET, including for error statuses (they are answers too).

    Connection errors propagate as ``OSError`` (``urllib.error.URLError`` is one).
    """
    request = urllib.request.Request(url)
    if token is not None:
        request.add_header('Authorization', f'Bearer {token}')
    try:
        with urllib.request.urlopen(request, context=context, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as e:
        with e:
            return e.code, e.read()
