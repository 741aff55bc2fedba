"""The API's error responses, as the real API server words them (``Status`` objects)."""
from typing import Any, NoReturn, Optional

from kopf import clients

_REASONS = {400: 'BadRequest', 404: 'NotFound', 409: 'Conflict', 410: 'Expired', 422: 'Invalid'}


class UnsupportedByMemoryApi(Exception):
    """
    The in-memory API cannot do this as the real API server does, so it does not do it at all.

    Use the local control plane (``--kopf-cluster=local``) for such a test.
    """


def fail(code: int, message: str, *, reason: Optional[str] = None, **details: Any) -> NoReturn:
    payload = {'kind': 'Status', 'apiVersion': 'v1', 'metadata': {}, 'status': 'Failure', 'message': message,
               'reason': reason or _REASONS.get(code, ''), 'details': details, 'code': code}
    raise clients.error_class_for_status(code)(payload, status=code)


def unsupported(what: str) -> NoReturn:
    raise UnsupportedByMemoryApi(f'The in-memory API does not support {what}; '
                                 f'run this test against a real API server (--kopf-cluster=local).')
