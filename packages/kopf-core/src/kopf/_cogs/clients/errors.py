"""
Errors that API clients raise, classified by what the framework does about them.

A client maps HTTP statuses to these classes, so that the framework can react
without knowing the transport: 404 means gone, 409/422 means a conflict to be
retried on the next cycle, 410 means a watch must re-list, 401 means the
credentials must be invalidated and replaced.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional


class APIError(Exception):
    """An error response from the Kubernetes API (a ``Status`` object, if any)."""

    def __init__(
            self,
            payload: Optional[Mapping[str, Any]] = None,
            *,
            status: int,
            message: Optional[str] = None,
    ) -> None:
        self.payload = dict(payload) if payload else None
        self.status = status
        text = message or (self.payload or {}).get('message') or f'HTTP {status}'
        super().__init__(text)

    @property
    def code(self) -> Optional[int]:
        return (self.payload or {}).get('code')

    @property
    def reason(self) -> Optional[str]:
        return (self.payload or {}).get('reason')

    @property
    def details(self) -> Optional[Mapping[str, Any]]:
        return (self.payload or {}).get('details')


class APIClientError(APIError):
    """4xx: the request is wrong; retrying it as is will not help."""


class APIServerError(APIError):
    """5xx: the server is wrong; retrying later may help."""


class APIUnauthorizedError(APIClientError):
    """401: the credentials used are invalid (expired, revoked)."""


class APIForbiddenError(APIClientError):
    """403: the credentials are valid but lack the permissions (RBAC)."""


class APINotFoundError(APIClientError):
    """404: the object or the resource does not exist (anymore)."""


class APIConflictError(APIClientError):
    """409: a conflicting change (e.g. an outdated resourceVersion)."""


class APIGoneError(APIClientError):
    """410: the requested resourceVersion is too old; a watch must re-list."""


class APIUnprocessableEntityError(APIClientError):
    """422: the content is invalid (e.g. a failed JSON-patch ``test`` operation)."""


class APITooManyRequestsError(APIClientError):
    """429: throttled by the server; ``retry_after`` says when to come back."""

    def __init__(
            self,
            payload: Optional[Mapping[str, Any]] = None,
            *,
            status: int = 429,
            message: Optional[str] = None,
            retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(payload, status=status, message=message)
        self.retry_after = retry_after


_CLASSES_BY_STATUS: Mapping[int, type[APIError]] = {
    401: APIUnauthorizedError,
    403: APIForbiddenError,
    404: APINotFoundError,
    409: APIConflictError,
    410: APIGoneError,
    422: APIUnprocessableEntityError,
    429: APITooManyRequestsError,
}


def error_class_for_status(status: int) -> type[APIError]:
    """The most specific error class for an HTTP status (>= 400)."""
    if status in _CLASSES_BY_STATUS:
        return _CLASSES_BY_STATUS[status]
    if 400 <= status < 500:
        return APIClientError
    if status >= 500:
        return APIServerError
    return APIError
