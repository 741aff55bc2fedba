"""
An operator run in a thread of the test process, with its log captured live.

In-process, the handlers defined in the test itself can run (they are in the
test's registry, not in a file), mocks set up in the test are seen by them, and
any API client can be given: the real one (kopf-client, via ``$KUBECONFIG``) or
the in-memory API of :mod:`kopf_testing.memory`. Files are loaded into the same
registry. The log lines have kopf's default format, so that the same patterns
match here and in the output of ``kopf run``.
"""
import asyncio
import concurrent.futures
import importlib.util
import logging
import pathlib
import sys
import threading
from collections.abc import Iterable, Sequence
from typing import Any, Optional, Union

import kopf
from kopf_testing._logs import OperatorLog
from kopf_testing._polling import patient

_FORMAT = '[%(asctime)s] %(name)-20.20s [%(levelname)-8.8s] %(message)s'


class InProcessOperator(OperatorLog):
    """
    The handlers of a registry (plus those of the given files), served in one namespace.

    Started by :meth:`start` (it returns once the operator is ready), stopped by
    :meth:`stop`, which re-raises the operator's own crash if it had one.
    """

    poll_interval = 0.01  # in-process, the log is in memory: cheap to check

    def __init__(
            self,
            *,
            registry: kopf.OperatorRegistry,
            namespace: Optional[str],
            paths: Sequence[Union[str, pathlib.Path]] = (),
            settings: Optional[kopf.OperatorSettings] = None,
            client: Optional[kopf.clients.ClientDriver] = None,
            timeout: float = 60,
    ) -> None:
        self.registry = registry
        self.namespace = namespace
        self.settings = settings
        self.client = client
        self.timeout = patient(timeout)
        load_files(paths, registry=registry)
        self._lines: list[str] = []
        self._handler = _ListHandler(self._lines)
        self._ready = threading.Event()
        self._stop: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._thread: Optional[threading.Thread] = None
        self._crash: Optional[BaseException] = None
        self._previous_level = logging.NOTSET

    def start(self) -> 'InProcessOperator':
        kopf_logger = logging.getLogger('kopf')
        self._previous_level = kopf_logger.level
        kopf_logger.setLevel(logging.DEBUG)  # the framework's debug lines are what tests wait for
        kopf_logger.addHandler(self._handler)
        self._thread = threading.Thread(target=self._run, name=f'operator in {self.namespace}', daemon=True)
        self._thread.start()
        if not self._ready.wait(self.timeout):
            self.stop()
            raise AssertionError(f'The operator did not become ready in {self.timeout}s:\n{self.log}')
        if self._crash is not None:
            self.stop()
        return self

    def stop(self) -> None:
        """Stop it as the stop-flag does (gracefully); re-raise its crash if it has crashed."""
        if self._thread is not None:
            if not self._stop.done():
                self._stop.set_result(None)
            self._thread.join(self.timeout)
            alive = self._thread.is_alive()
            self._thread = None
            logging.getLogger('kopf').removeHandler(self._handler)
            logging.getLogger('kopf').setLevel(self._previous_level)
            if alive:
                raise AssertionError(f'The operator did not stop in {self.timeout}s:\n{self.log}')
        if self._crash is not None:
            crash, self._crash = self._crash, None
            raise crash

    def _run(self) -> None:
        loop = asyncio.new_event_loop()
        try:
            namespaces = [self.namespace] if self.namespace else []
            loop.run_until_complete(kopf.operator(
                registry=self.registry, settings=self.settings, client=self.client,
                standalone=True, clusterwide=not namespaces, namespaces=namespaces,
                ready_flag=self._ready, stop_flag=self._stop,
            ))
        except BaseException as e:
            self._crash = e
        finally:
            loop.close()
            self._ready.set()  # if it has crashed before becoming ready: do not wait forever

    @property
    def log(self) -> str:
        return '\n'.join(self._lines)

    def _why_stopped(self) -> Optional[str]:
        return 'has stopped' if self._thread is None or not self._thread.is_alive() else None


class _ListHandler(logging.Handler):
    def __init__(self, lines: list[str]) -> None:
        super().__init__(logging.DEBUG)
        self.setFormatter(logging.Formatter(_FORMAT))
        self._lines = lines

    def emit(self, record: logging.LogRecord) -> None:
        self._lines.extend(self.format(record).splitlines())


def load_files(paths: Iterable[Union[str, pathlib.Path]], *, registry: kopf.OperatorRegistry) -> None:
    """Execute operator files as ``kopf run`` does, with their handlers landing in the given registry."""
    previous = kopf.get_default_registry()
    kopf.set_default_registry(registry)
    try:
        for path in paths:
            path = pathlib.Path(path)
            if not path.is_file():
                raise FileNotFoundError(f'No operator file at {path}.')
            name = f'kopf_testing_operator_{path.stem}'
            spec = importlib.util.spec_from_file_location(name, path)
            if spec is None or spec.loader is None:
                raise ImportError(f'Cannot load {path} as a Python module.')
            module = importlib.util.module_from_spec(spec)
            sys.modules[name] = module  # so that dataclasses/pickling in the file find their module
            spec.loader.exec_module(module)
    finally:
        kopf.set_default_registry(previous)
