"""
Admission reviews: from a request of the apiservers to the handlers and back.

The webhook server (see :mod:`kopf._cogs.structs.reviews`) calls
:class:`AdmissionFn` with each parsed review. The handlers of the webhook named
in the URL run one after another with the same ``patch`` and ``warnings``; the
review's verdict is built from their outcomes: allowed if none failed, else the
one most specific error (``AdmissionError`` first, then permanent, temporary,
and arbitrary errors), and the mutations as a base64-encoded JSON-patch.

Only the transport-independent part is here: malformed reviews raise
:class:`MalformedReviewError` (a ``ValueError``), which servers answer with
``400 Bad Request``; the handlers' failures are verdicts, not errors.
"""
from __future__ import annotations

import base64
import contextlib
import copy
import dataclasses
import json
import logging
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Tuple

from kopf._cogs.configs import configuration
from kopf._cogs.structs import bodies, patches, references, reviews
from kopf._core.actions import errors, invocation, loggers
from kopf._core.intents import matching, registries, webhooks

logger = logging.getLogger('kopf.engines.admission')


class AdmissionError(errors.PermanentError):
    """
    The admission is denied with this message and code (``kubectl`` shows both).

    Raised by the admission handlers; any other exception denies the admission
    too, but with the general code 500.
    """

    def __init__(self, message: Optional[str] = '', code: Optional[int] = 500) -> None:
        super().__init__(message)
        self.code = code


class MalformedReviewError(ValueError):
    """The payload is not an admission review that can be answered."""


# The order in which one error is chosen to be reported among several: the most specific first.
_ERROR_PRIORITY: Sequence[type] = (AdmissionError, errors.PermanentError, errors.TemporaryError, Exception)


@dataclasses.dataclass(frozen=True)
class AdmissionContext:
    """What the handlers get besides the review itself (the operator's shared state)."""
    registry: registries.OperatorRegistry
    settings: configuration.OperatorSettings
    memo: Any
    memo_of: Callable[[Mapping[str, Any]], Optional[Any]]  # the memo of a known object, if any
    indices: Mapping[str, Any]
    resources: Mapping[Tuple[str, str, str], references.Resource]  # (group, version, plural) -> resource


@dataclasses.dataclass
class _Outcome:
    handler: webhooks.WebhookHandler
    exception: Optional[BaseException]


class AdmissionFn:
    """The framework's :class:`kopf.WebhookFn`: what the webhook servers call for each review."""

    def __init__(self, context: AdmissionContext) -> None:
        self.context = context

    async def __call__(
            self,
            request: reviews.Request,
            *,
            webhook: Optional[str] = None,
            headers: Optional[reviews.Headers] = None,
            sslpeer: Optional[reviews.SSLPeer] = None,
    ) -> reviews.Response:
        payload = parse_review(request)
        with refusing_deep_nesting("admission review"):
            resource = self._resolve_resource(payload)
            body = bodies.Body(dict(payload.get('object') or payload.get('oldObject') or {}))
            patch = patches.Patch(body=dict(body))
            warnings: List[str] = []
            kwargs = self._build_kwargs(payload, resource=resource, body=body, patch=patch, warnings=warnings,
                                        headers=headers, sslpeer=sslpeer)
            handlers_ = self._select_handlers(payload, webhook=webhook, resource=resource, body=body, kwargs=kwargs)
            outcomes: List[_Outcome] = []
            for handler in handlers_:
                outcomes.append(await self._invoke(handler, kwargs=kwargs))
            return build_response(request, outcomes=outcomes, patch=patch, body=body, warnings=warnings)

    def _resolve_resource(self, payload: reviews.RequestPayload) -> references.Resource:
        """The discovered resource of the review (for selectors by any name), or one made from the review."""
        raw = payload['resource']
        key = (raw.get('group', ''), raw.get('version', ''), raw.get('resource', ''))
        known = self.context.resources.get(key)
        if known is not None:
            return known
        request_kind = payload.get('kind')  # null allowed
        kind = request_kind.get('kind') if request_kind else None
        return references.Resource(*key, kind=kind, namespaced=bool(payload.get('namespace')))

    def _build_kwargs(
            self,
            payload: reviews.RequestPayload,
            *,
            resource: references.Resource,
            body: bodies.Body,
            patch: patches.Patch,
            warnings: List[str],
            headers: Optional[reviews.Headers],
            sslpeer: Optional[reviews.SSLPeer],
    ) -> Dict[str, Any]:
        memo = None if payload['operation'] == 'CREATE' else self.context.memo_of(body)
        kwargs: Dict[str, Any] = dict(
            resource=resource,
            body=body,
            spec=body.spec,
            meta=body.metadata,
            status=body.status,
            uid=body.metadata.uid,
            name=body.metadata.name or payload.get('name'),
            namespace=body.metadata.namespace or payload.get('namespace'),
            labels=body.metadata.labels,
            annotations=body.metadata.annotations,
            patch=patch,
            logger=loggers.LocalObjectLogger(body=body, settings=self.context.settings),
            # A creation's memo is discarded: the object may never be admitted (see the manual).
            memo=memo if memo is not None else copy.copy(self.context.memo),
            old=payload.get('oldObject'),
            new=payload.get('object'),
            dryrun=bool(payload.get('dryRun')),
            warnings=warnings,
            userinfo=payload.get('userInfo') or {},
            headers=headers if headers is not None else {},
            # As in Kopf 1.45.2: always a mapping, empty without a client certificate (or an unverified one).
            sslpeer=sslpeer if sslpeer else {},
            subresource=payload.get('subResource') or None,
            operation=payload['operation'],
        )
        kwargs.update(self.context.indices)  # indices override the framework's kwargs by name
        return kwargs

    def _select_handlers(
            self,
            payload: reviews.RequestPayload,
            *,
            webhook: Optional[str],
            resource: references.Resource,
            body: bodies.Body,
            kwargs: Mapping[str, Any],
    ) -> Sequence[webhooks.WebhookHandler]:
        selected: List[webhooks.WebhookHandler] = []
        for handler in self.context.registry.get_webhook_handlers():
            if webhook is not None and handler.id != webhook:
                continue
            if handler.selector is None or not handler.selector.check(resource):
                continue
            if not handler.accepts(operation=payload['operation'], subresource=payload.get('subResource')):
                continue
            if handler in selected or any(h.fn is handler.fn and h.id == handler.id for h in selected):
                continue  # the same function under several selectors runs once
            handler_kwargs = dict(kwargs, param=handler.param)
            if matching.match_resource_filters(handler, body=body, kwargs=handler_kwargs):
                selected.append(handler)
        return selected

    async def _invoke(self, handler: webhooks.WebhookHandler, *, kwargs: Mapping[str, Any]) -> _Outcome:
        handler_kwargs = dict(kwargs, param=handler.param)
        try:
            await invocation.invoke(handler.fn, kwargs=handler_kwargs, settings=self.context.settings)
        except AdmissionError as e:
            handler_kwargs['logger'].info(f"{handler.title} denied the admission: {e}")
            return _Outcome(handler, e)
        except Exception as e:
            handler_kwargs['logger'].exception(f"{handler.title} failed with an exception.")
            return _Outcome(handler, e)
        handler_kwargs['logger'].debug(f"{handler.title} succeeded.")
        return _Outcome(handler, None)


def parse_review(request: Any) -> reviews.RequestPayload:
    """The ``.request`` of a review, checked for what the framework reads in it; or a clear error."""
    if not isinstance(request, Mapping):
        raise MalformedReviewError("The admission review must be a JSON object.")
    if request.get('kind') != 'AdmissionReview':
        raise MalformedReviewError(f"The payload is not an AdmissionReview: kind={request.get('kind')!r}.")
    payload = request.get('request')
    if not isinstance(payload, Mapping):
        raise MalformedReviewError("The admission review has no 'request' object.")
    if not isinstance(payload.get('uid'), str) or not payload['uid']:
        raise MalformedReviewError("The admission review's request has no 'uid'.")
    if payload.get('operation') not in webhooks.ALL_OPERATIONS:
        raise MalformedReviewError(f"The admission review's operation is unknown: {payload.get('operation')!r}.")
    if not isinstance(payload.get('resource'), Mapping):
        raise MalformedReviewError("The admission review's request has no 'resource' object.")
    _check_strings(payload['resource'], ('group', 'version', 'resource'), where="resource")
    if payload.get('kind') is not None:
        if not isinstance(payload['kind'], Mapping):
            raise MalformedReviewError("The admission review's 'kind' must be an object or null.")
        _check_strings(payload['kind'], ('group', 'version', 'kind'), where="kind")
    _check_strings(payload, ('name', 'namespace', 'subResource'), where="request")
    for field in ('object', 'oldObject'):
        if payload.get(field) is not None and not isinstance(payload.get(field), Mapping):
            raise MalformedReviewError(f"The admission review's {field!r} must be an object or null.")
        if payload.get(field) is not None:
            check_metadata(payload[field], where=f"The admission review's {field!r}")
    # Unproven: the fields that the framework only passes on to the handlers (userInfo, dryRun, ...) are unchecked.
    return payload  # type: ignore[return-value]


def _check_strings(mapping: Mapping[str, Any], fields: Sequence[str], *, where: str) -> None:
    """The names that the framework compares, hashes or passes on as strings: strings or absent."""
    for field in fields:
        value = mapping.get(field)
        if value is not None and not isinstance(value, str):
            raise MalformedReviewError(f"The admission review's {where}.{field} must be a string, "
                                       f"not {type(value).__name__}.")


def check_metadata(obj: Mapping[str, Any], *, where: str) -> None:
    """
    An object's ``metadata``, if present, must be an object: the framework reads the names and uid in it.

    Anything else (e.g. ``"metadata": "x"``) is a malformed review, not a failure of the framework.
    """
    if 'metadata' in obj and not isinstance(obj['metadata'], Mapping):
        raise MalformedReviewError(f"{where} has metadata that is not an object: {type(obj['metadata']).__name__}.")


@contextlib.contextmanager
def refusing_deep_nesting(what: str) -> Iterator[None]:
    """
    A ``RecursionError`` of the framework's own work on a review is the review's nesting: the review is refused.

    The servers' parsers allow about as deep a nesting as Python's recursion
    limit; copying, comparing or serialising such an object recursively fails.
    (The handlers' own errors, ``RecursionError`` too, are caught in their calls.)
    """
    try:
        yield
    except RecursionError as e:
        raise MalformedReviewError(f"The {what} is nested too deeply to be processed.") from e


def build_response(
        request: reviews.Request,
        *,
        outcomes: Sequence[_Outcome],
        patch: patches.Patch,
        body: Mapping[str, Any],
        warnings: Sequence[str],
) -> reviews.Response:
    """The review's verdict: allowed or denied with one error; the warnings; the mutations."""
    response: reviews.ResponsePayload = {'uid': request['request']['uid'], 'allowed': True}
    if warnings:
        response['warnings'] = [str(warning) for warning in warnings]

    error = _choose_error([outcome.exception for outcome in outcomes if outcome.exception is not None])
    if error is None and (patch or patch.fns):
        try:
            encoded = encode_patch(body, patch)
        except (TypeError, ValueError) as e:
            logger.exception("The admission patch cannot be serialised; the admission is denied.")
            error = AdmissionError(f"The mutation's patch cannot be serialised to JSON: {e}", code=500)
        else:
            if encoded is not None:
                response['patch'] = encoded
                response['patchType'] = 'JSONPatch'
    if error is not None:
        response['allowed'] = False
        code = error.code if isinstance(error, AdmissionError) and error.code is not None else 500
        response['status'] = {'message': str(error) or type(error).__name__, 'code': code}
    return {'apiVersion': request.get('apiVersion', 'admission.k8s.io/v1'),
            'kind': 'AdmissionReview', 'response': response}


def _choose_error(exceptions: Sequence[BaseException]) -> Optional[BaseException]:
    for cls in _ERROR_PRIORITY:
        for exception in exceptions:
            if isinstance(exception, cls):
                return exception
    return exceptions[0] if exceptions else None


def encode_patch(body: Mapping[str, Any], patch: patches.Patch) -> Optional[str]:
    """
    The mutations as Kubernetes wants them: a base64-encoded JSON-patch, or ``None`` if none.

    The merge-patch content comes first; the ``patch.fns`` are applied to its
    result. The apiserver applies the operations to the very object of the
    review, so no resourceVersion test is needed (nor wanted).
    """
    ops = list(patch.as_json_patch(body))
    if patch.fns:
        merged = patches.apply_merge_patch(copy.deepcopy(dict(body)), patch.as_merge_patch())
        ops.extend(op for op in patches.build_json_patch(merged, patch.fns)
                   if not (op.get('op') == 'test' and op.get('path') == '/metadata/resourceVersion'))
    if not ops:
        return None
    return base64.b64encode(json.dumps(ops, allow_nan=False).encode('utf-8')).decode('ascii')
