"""
Conversion reviews as data: what is checked in a request, and how the response is built.

The apiservers send a ``ConversionReview`` (``apiextensions.k8s.io/v1``) with
the objects of a CRD and the version they want them in
(``desiredAPIVersion``); the webhook returns every object converted, in the
same order, with the review's ``uid`` echoed, or a failure with a message
(which ``kubectl`` shows).

A malformed review raises :class:`~kopf._core.engines.webhooks.admission.MalformedReviewError`
(a ``ValueError``, which the servers answer with ``400 Bad Request``). A review of
more than :data:`MAX_OBJECTS` objects is well-formed but refused as a whole with
:class:`TooManyObjectsError`, which becomes a failed review naming the limit.
"""
from __future__ import annotations

import json
from typing import Any, Dict, List, Literal, Mapping, Optional, Sequence, Tuple, TypedDict, cast

from kopf._core.engines.webhooks import admission

# The most objects converted in one review. Real objects (200+ bytes of metadata each) fit ~40,000
# at most into a webhook server's body limit (8 MiB); at ~25 µs of the framework's own CPU per object
# (measured with a trivial function on a loaded 2-core VM), the limit is ~0.25 s per review.
MAX_OBJECTS = 10_000


class ConversionRequestPayload(TypedDict):
    """The ``.request`` of a conversion review: what the apiserver asks to convert."""
    uid: str  # must be echoed back in the response
    desiredAPIVersion: str
    objects: List[Mapping[str, Any]]


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


class TooManyObjectsError(ConversionFailure):
    """The review has more objects than one review may have: none of them is converted."""


def split_api_version(api_version: str) -> Tuple[str, str]:
    group, _, version = api_version.rpartition('/')
    return group, version


def parse_review(request: Any, *, max_objects: int = MAX_OBJECTS) -> ConversionRequestPayload:
    """The ``.request`` of a conversion review, checked for what the framework reads in it; or a clear error."""
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
    if len(objects) > max_objects:  # before anything is done per object
        raise TooManyObjectsError(f"The conversion review has {len(objects)} objects, more than the limit "
                                  f"of {max_objects} per review: none is converted.")
    for index, obj in enumerate(objects):
        _check_object(index, obj)
    return cast(ConversionRequestPayload, payload)  # each of its fields is checked above


def _check_object(index: int, obj: Any) -> None:
    if not isinstance(obj, Mapping):
        raise admission.MalformedReviewError(f"The conversion review's objects[{index}] is not an object.")
    api_version, kind = obj.get('apiVersion'), obj.get('kind')
    if not isinstance(api_version, str) or not all(split_api_version(api_version)):
        raise admission.MalformedReviewError(
            f"The conversion review's objects[{index}] has no apiVersion 'group/version': {api_version!r}.")
    if not isinstance(kind, str) or not kind:
        raise admission.MalformedReviewError(f"The conversion review's objects[{index}] has no kind.")
    admission.check_metadata(obj, where=f"The conversion review's objects[{index}]")


def finish_object(result: Any, *, source: Mapping[str, Any], api_version: str, title: str) -> Dict[str, Any]:
    """
    The function's result as the converted object: ``apiVersion`` set, ``kind`` & ``metadata`` kept if absent.

    Kubernetes refuses a converted object whose metadata differs from the
    original except in labels and annotations; so a function that builds a new
    object without metadata gets the original's (the same dict: the original
    is not used for anything else once converted).
    """
    target_version = api_version.rpartition('/')[2]
    if not isinstance(result, Mapping):
        raise ConversionFailure(f"{title} returned {type(result).__name__} instead of the object in "
                                f"{target_version}: return the converted object (a dict).")
    converted: Dict[str, Any] = dict(result)
    converted['apiVersion'] = api_version
    converted.setdefault('kind', source['kind'])
    converted.setdefault('metadata', source.get('metadata', {}))
    return converted


def check_serialisable(converted: Sequence[Mapping[str, Any]], titles: Sequence[Optional[str]]) -> None:
    """
    Fail the review if its objects cannot be serialised to JSON, naming the function that returned the culprit.

    The whole list is serialised once (in C, a fraction of the time of the
    functions' calls); only if that fails, the objects are tried one by one.
    ``titles`` are the titles of the last functions that made each object
    (``None`` for the objects returned as they came: not the functions' doing).
    """
    try:
        json.dumps(converted, allow_nan=False)
    except (TypeError, ValueError):
        pass
    else:
        return
    for obj, title in zip(converted, titles, strict=True):
        if title is None:
            continue  # as it came in the review (e.g. with a NaN, which Python's JSON parser accepts)
        try:
            json.dumps(obj, allow_nan=False)
        except (TypeError, ValueError) as e:
            raise ConversionFailure(f"{title} returned an object that cannot be serialised to JSON: {e}") from e


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
