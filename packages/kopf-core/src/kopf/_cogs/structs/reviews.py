"""
Admission reviews and the seam between the framework and webhook servers.

Kubernetes calls admission webhooks over HTTPS; an operator cannot pull the
admission requests the way it watches resources. So the transport (a local
HTTPS server, a server reachable from a local cluster, a tunnel) lives outside
the core, in ``kopf-webhooks`` or in the operator's own code. The core only
declares what passes between the two:

* a **server** (:class:`WebhookServerProtocol`) is a callable that gets the
  framework's function (:class:`WebhookFn`) and returns an async iterator of
  :class:`WebhookClientConfig` — one whenever its public address changes;
  while iterated, it serves the requests by calling that function;
* the **function** (:class:`WebhookFn`) takes a parsed admission review request
  and returns an admission review response, both as in ``admission.k8s.io/v1``.

For example, a custom server or tunnel can be as small as::

    async def mytunnel(fn: kopf.WebhookFn) -> AsyncIterator[kopf.WebhookClientConfig]:
        ...  # start listening, and call `await fn(request, webhook=...)` per request
        yield {'url': 'https://myhost:8443/admission', 'caBundle': '...'}
        await asyncio.Event().wait()

These are structures for type hints only: the payloads are plain JSON-like
dicts at runtime, exactly as they travel over the wire.
"""
from __future__ import annotations

from typing import Any, AsyncIterator, List, Literal, Mapping, Optional, Protocol, TypedDict

Headers = Mapping[str, str]
"""The HTTP headers of an admission request (e.g. ``Authorization``), if known."""

SSLPeer = Mapping[str, Any]
"""The client's certificate as :meth:`ssl.SSLSocket.getpeercert` returns it, if verified."""

Operation = Literal['CREATE', 'UPDATE', 'DELETE', 'CONNECT']


class RequestKind(TypedDict):
    group: str
    version: str
    kind: str


class RequestResource(TypedDict):
    group: str
    version: str
    resource: str


class UserInfo(TypedDict, total=False):
    """Who makes an admission request (the review's ``userInfo``): the ``userinfo`` kwarg."""
    username: str
    uid: str
    groups: List[str]
    extra: Mapping[str, List[str]]


class CreateOptions(TypedDict, total=False):
    apiVersion: Literal['meta.k8s.io/v1']
    kind: Literal['CreateOptions']
    dryRun: List[str]
    fieldManager: str


class UpdateOptions(TypedDict, total=False):
    apiVersion: Literal['meta.k8s.io/v1']
    kind: Literal['UpdateOptions']
    dryRun: List[str]
    fieldManager: str


class DeleteOptions(TypedDict, total=False):
    apiVersion: Literal['meta.k8s.io/v1']
    kind: Literal['DeleteOptions']
    dryRun: List[str]
    gracePeriodSeconds: int
    propagationPolicy: str


class RequestPayload(TypedDict, total=False):
    """The ``.request`` of an admission review: what the apiserver asks about."""
    uid: str  # must be echoed back in the response
    kind: RequestKind
    resource: RequestResource
    subResource: str
    requestKind: RequestKind
    requestResource: RequestResource
    requestSubResource: str
    userInfo: UserInfo
    name: str
    namespace: Optional[str]
    operation: Operation
    options: Optional[CreateOptions | UpdateOptions | DeleteOptions]
    dryRun: bool
    object: Optional[Mapping[str, Any]]
    oldObject: Optional[Mapping[str, Any]]


class Request(TypedDict):
    """An admission review as sent by the apiservers to the webhooks."""
    apiVersion: Literal['admission.k8s.io/v1', 'admission.k8s.io/v1beta1']
    kind: Literal['AdmissionReview']
    request: RequestPayload


class ResponseStatus(TypedDict, total=False):
    message: str
    code: int


class ResponsePayload(TypedDict, total=False):
    """The ``.response`` of an admission review: the webhook's verdict."""
    uid: str
    allowed: bool
    warnings: Optional[List[str]]
    status: Optional[ResponseStatus]
    patch: Optional[str]  # base64-encoded JSON-patch, for mutating webhooks only
    patchType: Optional[Literal['JSONPatch']]


class Response(TypedDict):
    """An admission review as returned by the webhooks to the apiservers."""
    apiVersion: Literal['admission.k8s.io/v1', 'admission.k8s.io/v1beta1']
    kind: Literal['AdmissionReview']
    response: ResponsePayload


class WebhookClientConfigService(TypedDict, total=False):
    """A Service that the API server calls for a webhook (instead of a URL)."""
    namespace: str
    name: str
    path: str
    port: int


class WebhookClientConfig(TypedDict, total=False):
    """
    How the apiservers reach the webhooks: ``.webhooks[*].clientConfig``.

    It goes into the managed Validating/MutatingWebhookConfiguration as is;
    the fields are only for hinting. The framework appends a handler's id as
    the last path component of ``url`` or ``service.path`` for each webhook,
    so servers must route the requests by that last component.
    """
    caBundle: str  # base64-encoded PEM bundle, as Kubernetes expects it
    url: Optional[str]
    service: Optional[WebhookClientConfigService]


class WebhookFn(Protocol):
    """
    A framework-provided function to call when an admission request arrives.

    Servers do not implement it: they get it, call it with the parsed review,
    and send back the review it returns. ``webhook`` is the handler id from
    the URL's last path component (with none, all admission handlers run, so
    servers should pass it); ``headers`` and ``sslpeer`` are passed through
    to the handlers for their own authentication of the apiservers.

    A payload that is not an admission review raises a ``ValueError`` with the
    reason, which servers answer with ``400 Bad Request``; the handlers' own
    failures are never raised: they are denials inside the returned review.
    """

    async def __call__(
            self,
            request: Request,
            *,
            webhook: Optional[str] = None,
            headers: Optional[Headers] = None,
            sslpeer: Optional[SSLPeer] = None,
    ) -> Response: ...


class WebhookServerProtocol(Protocol):
    """
    A webhook server or tunnel: serves admission requests with the given ``fn``.

    It yields a client config once it accepts the requests, and a new one every
    time its public address changes. It holds the control for as long as it
    serves; when it is closed or cancelled, it stops and releases its resources.
    If it exits by itself, the operator exits too.
    """

    def __call__(self, fn: WebhookFn) -> AsyncIterator[WebhookClientConfig]: ...
