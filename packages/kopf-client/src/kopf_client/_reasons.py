"""
Why the login functions have found no credentials: for the one message of a failed login.

A login function that does not apply here returns ``None`` (as in Kopf: e.g.
no kubeconfig, or not in a cluster), which says nothing about why. When no
login function has found anything, the user needs to know what was looked
for and where; so each of them notes its reason here when it returns ``None``,
and the driver hands the notes to the framework for its login error.

The notes are per process and only ever overwritten: a function's note is read
only after the function has just returned ``None``, so it is always its latest.
"""
from __future__ import annotations

import threading
from typing import Dict, Mapping

_lock = threading.Lock()  # the synchronous login functions run in threads
_reasons: Dict[str, str] = {}


def nothing_found(fn_name: str, reason: str) -> None:
    """Note why this login function has returned no credentials."""
    with _lock:
        _reasons[fn_name] = reason


def noted() -> Mapping[str, str]:
    """The latest reasons of the login functions, by their names."""
    with _lock:
        return dict(_reasons)
