"""
Conversion reviews: from a request of the apiservers to the conversion functions and back.

The apiservers send a ``ConversionReview`` (``apiextensions.k8s.io/v1``) with
the objects of a CRD and the version they want them in
(``desiredAPIVersion``); the webhook returns every object converted, in the
same order, with the review's ``uid`` echoed, or a failure with a message
(which ``kubectl`` shows). One failed object fails the whole review, as
Kubernetes uses all of the objects or none.

A review does not name the resource, only the objects' ``apiVersion`` and
``kind``: the resource is found among the discovered ones by its group and
kind (discovered again once if unknown, e.g. for a CRD created after the start).

Only the transport-independent part is here: malformed reviews raise
:class:`~kopf._core.engines.admission.MalformedReviewError` (a ``ValueError``),
which servers answer with ``400 Bad Request``; the functions' failures are
``Failure`` results, not errors.
"""
from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import logging
import time
from typing import Any, Awaitable, Callable, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, TypedDict

from kopf._cogs.structs import bodies, references, reviews
from kopf._core.actions import errors, invocation, loggers
from kopf._core.actions import kwargs as actions_kwargs
from kopf._core.engines import admission
from kopf._core.intents import conversions

logger = logging.getLogger('kopf.engines.conversion')

# A review for a kind unknown to the operator rescans the cluster's resources, but not more often than this.
RESCAN_INTERVAL = 10.0


class ConversionRequestPayload(TypedDict):
    """The ``.request`` of a conversion review: what the apiserver asks to convert."""
    uid: str  # must be echoed back in the response
    desiredAPIVersion: str
    objects: List[Mapping[str, Any]]


class ConversionRequest(TypedDict):
    apiVersion: str
    kind: Literal['ConversionReview']
    request: ConversionRequestPayload


class ConversionResult(TypedDict, total=False):
    status: Literal['Success', 'Failure']
    message: str


class ConversionResponsePayload(TypedDict):
    uid: str
    convertedObjects: List[Mapping[str, Any]]
    result: ConversionResult


class ConversionResponse(TypedDict):
    apiVersion: str
    kind: Literal['ConversionReview']
    response: ConversionResponsePayload


class ConversionFailure(Exception):
    """The review cannot be converted: its message goes to the review's ``result``."""


@dataclasses.dataclass(frozen=True)
class ConversionContext(admission.AdmissionContext):
    """The operator's shared state, as the admission handlers get it, and a refresh of its resources."""
    rescan: Optional[Callable[[], Awaitable[None]]] = None  # a review names only a kind: maybe a new one


class ConversionFn:
    """What the webhook servers call for each conversion review (via the reviews' dispatcher)."""

    def __init__(self, context: ConversionContext) -> None:
        self.context = context
        self._rescanned_at: Optional[float] = None
        self._rescan_lock = asyncio.Lock()

    async def __call__(
            self,
            request: Any,
            *,
            webhook: Optional[str] = None,
            headers: Optional[reviews.Headers] = None,
            sslpeer: Optional[reviews.SSLPeer] = None,
    ) -> ConversionResponse:
        payload = parse_review(request)
        extra = dict(headers=headers if headers is not None else {}, sslpeer=sslpeer if sslpeer else None)
        converted: List[Mapping[str, Any]] = []
        try:
            for raw in payload['objects']:
                converted.append(await self._convert(raw, desired=payload['desiredAPIVersion'], extra=extra))
        except ConversionFailure as e:
            return build_response(request, failure=str(e))
        return build_response(request, converted=converted)

    async def _convert(self, raw: Mapping[str, Any], *, desired: str, extra: Mapping[str, Any]) -> Mapping[str, Any]:
        group, version = split_api_version(raw['apiVersion'])
        desired_group, desired_version = split_api_version(desired)
        kind = raw['kind']
        if group != desired_group:
            raise ConversionFailure(f"{kind} of {raw['apiVersion']} cannot be converted to another API group: "
                                    f"{desired}.")
        if version == desired_version:
            return raw  # e.g. the objects of a list that are stored in the desired version already
        resource = await self._resolve_resource(group, version, kind)
        chain = self.context.registry.get_conversion_handlers().find_chain(
            resource, source=version, target=desired_version)
        if chain is None:
            raise ConversionFailure(
                f"No conversion of {kind} ({group}) from {version} to {desired_version}: register one with "
                f"@kopf.on.convert({group!r}, {resource.plural or kind!r}, source={version!r}, "
                f"target={desired_version!r}), or a chain of them.")
        current = raw
        for handler in chain:
            current = await self._invoke(handler, current, resource=resource, group=group, extra=extra)
        return current

    async def _invoke(
            self,
            handler: conversions.ConversionHandler,
            raw: Mapping[str, Any],
            *,
            resource: references.Resource,
            group: str,
            extra: Mapping[str, Any],
    ) -> Mapping[str, Any]:
        body = bodies.Body(copy.deepcopy(dict(raw)))
        kwargs = self._build_kwargs(handler, body=body, resource=resource, extra=extra)
        try:
            result = await invocation.invoke(handler.fn, kwargs=kwargs, settings=self.context.settings)
        except errors.PermanentError as e:
            kwargs['logger'].error(f"{handler.title} failed permanently: {e}")
            raise ConversionFailure(str(e) or type(e).__name__) from e
        except Exception as e:
            kwargs['logger'].exception(f"{handler.title} failed with an exception.")
            raise ConversionFailure(str(e) or type(e).__name__) from e
        converted = finish_object(result, source=raw, api_version=f'{group}/{handler.target}', title=handler.title)
        kwargs['logger'].debug(f"{handler.title} succeeded.")
        return converted

    def _build_kwargs(
            self,
            handler: conversions.ConversionHandler,
            *,
            body: bodies.Body,
            resource: references.Resource,
            extra: Mapping[str, Any],
    ) -> Dict[str, Any]:
        memo = self.context.memo_of(body)
        kwargs = actions_kwargs.build_body_kwargs(resource, body)
        kwargs.update(
            logger=loggers.LocalObjectLogger(body=body, settings=self.context.settings),
            # An object being created is not known yet, and may never be stored: a throwaway memo then.
            memo=memo if memo is not None else copy.copy(self.context.memo),
            param=handler.param,
            source=handler.source,
            target=handler.target,
            **extra,
        )
        kwargs.update(self.context.indices)  # indices override the framework's kwargs by name
        return kwargs

    async def _resolve_resource(self, group: str, version: str, kind: str) -> references.Resource:
        """The discovered resource of the objects (for selectors by any name), or one made from them."""
        found = self._find_resource(group, kind)
        if found is None and self.context.rescan is not None:
            async with self._rescan_lock:
                found = self._find_resource(group, kind)  # rescanned by another review meanwhile?
                now = time.monotonic()
                if found is None and (self._rescanned_at is None or now - self._rescanned_at > RESCAN_INTERVAL):
                    self._rescanned_at = now
                    await self.context.rescan()
                    found = self._find_resource(group, kind)
        return found if found is not None else references.Resource(group, version, '', kind=kind)

    def _find_resource(self, group: str, kind: str) -> Optional[references.Resource]:
        # The selectors without a version match the preferred version only; every version is the same resource.
        matched = [r for r in self.context.resources.values() if r.group == group and r.kind == kind]
        preferred = [r for r in matched if r.preferred] or [dataclasses.replace(r, preferred=True) for r in matched]
        return preferred[0] if preferred else None


def split_api_version(api_version: str) -> Tuple[str, str]:
    group, _, version = api_version.rpartition('/')
    return group, version


def finish_object(result: Any, *, source: Mapping[str, Any], api_version: str, title: str) -> Dict[str, Any]:
    """
    The function's result as the converted object: ``apiVersion`` set, ``kind`` & ``metadata`` kept if absent.

    Kubernetes refuses a converted object whose metadata differs from the
    original except in labels and annotations; so a function that builds a new
    object without metadata gets the original's.
    """
    target_version = api_version.rpartition('/')[2]
    if not isinstance(result, Mapping):
        raise ConversionFailure(f"{title} returned {type(result).__name__} instead of the object in "
                                f"{target_version}: return the converted object (a dict).")
    converted: Dict[str, Any] = dict(result)
    converted['apiVersion'] = api_version
    converted.setdefault('kind', source['kind'])
    converted.setdefault('metadata', copy.deepcopy(source.get('metadata', {})))
    try:
        json.dumps(converted, allow_nan=False)
    except (TypeError, ValueError) as e:
        raise ConversionFailure(f"{title} returned an object that cannot be serialised to JSON: {e}") from e
    return converted


def parse_review(request: Any) -> ConversionRequestPayload:
    """The ``.request`` of a conversion review, checked for what the response needs; or a clear error."""
    if not isinstance(request, Mapping):
        raise admission.MalformedReviewError("The conversion review must be a JSON object.")
    if request.get('kind') != 'ConversionReview':
        raise admission.MalformedReviewError(
            f"The payload is not a ConversionReview: kind={request.get('kind')!r}.")
    payload = request.get('request')
    if not isinstance(payload, Mapping):
        raise admission.MalformedReviewError("The conversion review has no 'request' object.")
    if not isinstance(payload.get('uid'), str) or not payload['uid']:
        raise admission.MalformedReviewError("The conversion review's request has no 'uid'.")
    desired = payload.get('desiredAPIVersion')
    if not isinstance(desired, str) or not all(split_api_version(desired)):
        raise admission.MalformedReviewError(
            f"The conversion review's desiredAPIVersion must be 'group/version', not {desired!r}.")
    objects = payload.get('objects')
    if not isinstance(objects, list):
        raise admission.MalformedReviewError("The conversion review's request has no 'objects' list.")
    for index, obj in enumerate(objects):
        _check_object(index, obj)
    return payload  # type: ignore[return-value]


def _check_object(index: int, obj: Any) -> None:
    if not isinstance(obj, Mapping):
        raise admission.MalformedReviewError(f"The conversion review's objects[{index}] is not an object.")
    api_version, kind = obj.get('apiVersion'), obj.get('kind')
    if not isinstance(api_version, str) or not all(split_api_version(api_version)):
        raise admission.MalformedReviewError(
            f"The conversion review's objects[{index}] has no apiVersion 'group/version': {api_version!r}.")
    if not isinstance(kind, str) or not kind:
        raise admission.MalformedReviewError(f"The conversion review's objects[{index}] has no kind.")


def build_response(
        request: Mapping[str, Any],
        *,
        converted: Sequence[Mapping[str, Any]] = (),
        failure: Optional[str] = None,
) -> ConversionResponse:
    """The review's answer: all objects converted, or none and the reason (as Kubernetes uses them)."""
    result: ConversionResult = {'status': 'Success'} if failure is None else {'status': 'Failure',
                                                                              'message': failure}
    return {
        'apiVersion': request.get('apiVersion') or 'apiextensions.k8s.io/v1',
        'kind': 'ConversionReview',
        'response': {
            'uid': request['request']['uid'],
            'convertedObjects': list(converted) if failure is None else [],
            'result': result,
        },
    }
