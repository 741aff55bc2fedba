"""
Conversion reviews: from a request of the apiservers to the conversion functions and back.

The webhook returns every object of a review converted to the desired version,
in the same order, or a failure with a message (which ``kubectl`` shows). One
failed object fails the whole review, as Kubernetes uses all of the objects or
none. The review's structure is checked and the response built in
:mod:`~kopf._core.engines.webhooks.conversionreviews`.

A review does not name the resource, only the objects' ``apiVersion`` and
``kind``: the resource is found among the discovered ones by its group and
kind (discovered again once if unknown, e.g. for a CRD created after the start).

A review may carry thousands of objects, so the framework's own work per
object is kept small: the functions and the resource are looked up once per
``apiVersion`` & ``kind`` of the review, the objects are given to the functions
as they came (no copies: nothing else uses them), the sync functions of a
review are all called in one hop to a worker thread, the result is checked
for JSON in one go, and the log gets one line per review, not per object.

Only the transport-independent part is here: malformed reviews raise
:class:`~kopf._core.engines.webhooks.admission.MalformedReviewError` (a ``ValueError``),
which servers answer with ``400 Bad Request``; the functions' failures are
``Failure`` results, not errors.
"""
from __future__ import annotations

import asyncio
import contextvars
import copy
import dataclasses
import logging
import threading
import time
from typing import Any, Awaitable, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from kopf._cogs.structs import bodies, references, reviews
from kopf._core.actions import errors, invocation, loggers
from kopf._core.actions import kwargs as actions_kwargs
from kopf._core.engines.webhooks import admission, conversionreviews
from kopf._core.intents import conversions

logger = logging.getLogger('kopf.engines.conversion')

# A review for a kind unknown to the operator rescans the cluster's resources, but not more often than this.
RESCAN_INTERVAL = 10.0


@dataclasses.dataclass(frozen=True)
class ConversionContext(admission.AdmissionContext):
    """The operator's shared state, as the admission handlers get it, and a refresh of its resources."""
    rescan: Optional[Callable[[], Awaitable[None]]] = None  # a review names only a kind: maybe a new one


@dataclasses.dataclass(frozen=True)
class _Plan:
    """How the objects of one ``apiVersion`` & ``kind`` become the desired version: the functions in order."""
    resource: Optional[references.Resource] = None
    group: str = ''
    chain: Sequence[conversions.ConversionHandler] = ()  # none if in the desired version already
    failure: Optional[str] = None  # why they cannot be converted at all
    is_sync: bool = True  # whether all the functions are sync (to be called in a thread)

    @property
    def title(self) -> Optional[str]:
        """The title of the function that makes the converted object, if any."""
        return self.chain[-1].title if self.chain else None


Planned = Sequence[Tuple[Mapping[str, Any], _Plan]]


class ConversionFn:
    """What the webhook servers call for each conversion review (via the reviews' dispatcher)."""

    max_objects: int = conversionreviews.MAX_OBJECTS  # per review; more are refused at once (see the constant)

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
    ) -> conversionreviews.ConversionResponse:
        try:
            payload = conversionreviews.parse_review(request, max_objects=self.max_objects)
        except conversionreviews.TooManyObjectsError as e:
            logger.warning(f"A conversion review is refused: {e}")
            return conversionreviews.build_response(request, failure=str(e))
        extra = dict(headers=headers if headers is not None else {}, sslpeer=sslpeer if sslpeer else {})
        started = time.monotonic()
        try:
            with admission.refusing_deep_nesting("conversion review"):
                planned, failure = await self._plan_all(payload['objects'], desired=payload['desiredAPIVersion'])
                converted = await self._convert_all(planned, extra=extra)
                conversionreviews.check_serialisable(converted, [plan.title for _, plan in planned])
                if failure is not None:  # after the objects before the unconvertible one, as they come
                    raise conversionreviews.ConversionFailure(failure)
        except conversionreviews.ConversionFailure as e:
            return conversionreviews.build_response(request, failure=str(e))
        logger.debug(f"Converted {len(converted)} objects to {payload['desiredAPIVersion']} "
                     f"in {time.monotonic() - started:.3f} s.")
        return conversionreviews.build_response(request, converted=converted)

    async def _plan_all(self, objects: Sequence[Mapping[str, Any]], *, desired: str) -> Tuple[Planned, Optional[str]]:
        """The objects with their plans, up to the first one that cannot be converted (and why)."""
        plans: Dict[Tuple[str, str], _Plan] = {}
        planned: List[Tuple[Mapping[str, Any], _Plan]] = []
        for raw in objects:
            key = (raw['apiVersion'], raw['kind'])
            plan = plans.get(key)
            if plan is None:
                plan = plans[key] = await self._plan(*key, desired=desired)
            if plan.failure is not None:
                return planned, plan.failure
            planned.append((raw, plan))
        return planned, None

    async def _plan(self, api_version: str, kind: str, *, desired: str) -> _Plan:
        group, version = conversionreviews.split_api_version(api_version)
        desired_group, desired_version = conversionreviews.split_api_version(desired)
        if group != desired_group:
            return _Plan(failure=f"{kind} of {api_version} cannot be converted to another API group: {desired}.")
        if version == desired_version:
            return _Plan()  # e.g. the objects of a list that are stored in the desired version already
        resource = await self._resolve_resource(group, version, kind)
        chain = self.context.registry.get_conversion_handlers().find_chain(
            resource, source=version, target=desired_version)
        if chain is None:
            return _Plan(failure=(
                f"No conversion of {kind} ({group}) from {version} to {desired_version}: register one with "
                f"@kopf.on.convert({group!r}, {resource.plural or kind!r}, source={version!r}, "
                f"target={desired_version!r}), or a chain of them."))
        is_sync = not any(invocation.is_async_fn(handler.fn) for handler in chain)
        return _Plan(resource=resource, group=group, chain=chain, is_sync=is_sync)

    async def _convert_all(self, planned: Planned, *, extra: Mapping[str, Any]) -> List[Mapping[str, Any]]:
        """All the objects converted, in order; the sync functions all in one hop to a thread, if only those."""
        if not all(plan.is_sync for _, plan in planned):
            return [await self._convert_on_loop(raw, plan, extra=extra) for raw, plan in planned]
        if not any(plan.chain for _, plan in planned):
            return [raw for raw, _ in planned]
        loop = asyncio.get_running_loop()
        context = contextvars.copy_context()  # as the executor's calls get it: each call gets a copy of it
        stop = threading.Event()
        try:
            return await loop.run_in_executor(self.context.settings.execution.executor,
                                              self._convert_in_thread, planned, extra, context, stop)
        finally:
            stop.set()  # if cancelled: the thread stops at the next object instead of converting them all

    def _convert_in_thread(
            self,
            planned: Planned,
            extra: Mapping[str, Any],
            context: contextvars.Context,
            stop: threading.Event,
    ) -> List[Mapping[str, Any]]:
        converted: List[Mapping[str, Any]] = []
        for raw, plan in planned:
            if stop.is_set():
                raise conversionreviews.ConversionFailure("The conversion review was cancelled.")
            current = raw
            for handler in plan.chain:
                kwargs = self._build_kwargs(handler, body=current, plan=plan, extra=extra)
                try:
                    result = context.copy().run(invocation.call_sync, handler.fn, kwargs=kwargs)
                except Exception as e:
                    raise _fail(handler, kwargs, e) from e
                current = _finish(result, source=current, plan=plan, handler=handler)
            converted.append(current)
        return converted

    async def _convert_on_loop(self, raw: Mapping[str, Any], plan: _Plan, *,
                               extra: Mapping[str, Any]) -> Mapping[str, Any]:
        current = raw
        for handler in plan.chain:
            kwargs = self._build_kwargs(handler, body=current, plan=plan, extra=extra)
            try:
                result = await invocation.invoke(handler.fn, kwargs=kwargs, settings=self.context.settings)
            except Exception as e:
                raise _fail(handler, kwargs, e) from e
            current = _finish(result, source=current, plan=plan, handler=handler)
        return current

    def _build_kwargs(
            self,
            handler: conversions.ConversionHandler,
            *,
            body: Mapping[str, Any],
            plan: _Plan,
            extra: Mapping[str, Any],
    ) -> Dict[str, Any]:
        # The object as it came in the review, not a copy: nothing else uses it; changing it changes nothing.
        # The memo and the logger's reference are read from the raw dict: a view resolves every field anew.
        view = bodies.Body(body)
        memo = self.context.memo_of(body)
        assert plan.resource is not None  # a plan with functions has its resource
        kwargs = actions_kwargs.build_body_kwargs(plan.resource, view)
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


def _finish(result: Any, *, source: Mapping[str, Any], plan: _Plan,
            handler: conversions.ConversionHandler) -> Mapping[str, Any]:
    api_version = f'{plan.group}/{handler.target}'
    return conversionreviews.finish_object(result, source=source, api_version=api_version, title=handler.title)


def _fail(
        handler: conversions.ConversionHandler,
        kwargs: Mapping[str, Any],
        error: Exception,
) -> conversionreviews.ConversionFailure:
    """The failure of the review with the function's error as its message; the error logged."""
    if isinstance(error, errors.PermanentError):
        kwargs['logger'].error(f"{handler.title} failed permanently: {error}")
    else:
        kwargs['logger'].exception(f"{handler.title} failed with an exception.", exc_info=error)
    return conversionreviews.ConversionFailure(str(error) or type(error).__name__)
