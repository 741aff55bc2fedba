"""
The controls of the command line that cannot be passed as command line options.

``kopf run`` is usually started from a shell, where everything is options and
arguments. But the same command is also run in-process, e.g. by
``kopf.testing.KopfRunner`` in a thread of a test: the test needs to stop the
operator, to know when it is ready, to give it its own registry, settings and
credentials. These objects go through click's context object (``obj=``).
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import dataclasses
import threading
from typing import Any, Optional, Union

import kopf

Flag = Union[asyncio.Future[Any], asyncio.Event, concurrent.futures.Future[Any], threading.Event]


@dataclasses.dataclass()
class CLIControls:
    """``KopfRunner`` controls, which are impossible to pass via CLI."""
    ready_flag: Optional[Flag] = None
    stop_flag: Optional[Flag] = None
    vault: Optional[kopf.clients.Vault] = None
    registry: Optional[Any] = None  # kopf.OperatorRegistry
    settings: Optional[kopf.OperatorSettings] = None
    loop: Optional[asyncio.AbstractEventLoop] = None
