"""
``KopfRunner``: the ``kopf`` command run in a thread of the test process.

Threads, not processes: the operator's exceptions (with their tracebacks)
reach the test, and mocks set up in the test are seen by the handlers.
The operator is started with its own event loop in the thread, and is told to
stop via the stop-flag when the ``with`` block exits.
"""
from __future__ import annotations

import asyncio
import concurrent.futures
import threading
import types
from typing import Any, Optional, Type

import click.testing

import kopf
import kopf_cli


class KopfRunner:
    """
    A context manager to run a Kopf-based operator in parallel with the tests::

        with KopfRunner(['run', '-A', '--verbose', 'examples/01-minimal/example.py']) as runner:
            ...  # do something while the operator is running
        assert runner.exit_code == 0
        assert runner.exception is None
        assert 'And here we are!' in runner.stdout

    The positional and keyword arguments go to click's ``CliRunner.invoke()``.
    Without ``registry=``, the default registry is used: the handlers that
    the test module (or a module imported already) has registered run too,
    and ``['run']`` with no files runs only them. The default registry is
    restored when the operator exits, whatever the run has set.

    The ``with`` block starts once the operator is ready (or has exited);
    the properties proxy to click's ``Result`` (see :attr:`future`) once the
    block has exited.
    """

    def __init__(
            self,
            *args: Any,
            reraise: bool = True,
            timeout: Optional[float] = None,
            registry: Optional[kopf.OperatorRegistry] = None,
            settings: Optional[kopf.OperatorSettings] = None,
            **kwargs: Any,
    ) -> None:
        self.args = args
        self.kwargs = kwargs
        self.reraise = reraise
        self.timeout = timeout
        self.registry = registry
        self.settings = settings
        self._future: concurrent.futures.Future[click.testing.Result] = concurrent.futures.Future()
        self._ready = threading.Event()
        self._stop: concurrent.futures.Future[Any] = concurrent.futures.Future()
        self._thread: Optional[threading.Thread] = None

    def __enter__(self) -> KopfRunner:
        self._thread = threading.Thread(target=self._target, args=(kopf.get_default_registry(),),
                                        name='kopf runner', daemon=True)
        self._thread.start()
        if not self._ready.wait(self.timeout):
            self._stop_and_join()
            raise TimeoutError(f"The operator did not become ready in {self.timeout} seconds.")
        return self

    def __exit__(
            self,
            exc_type: Optional[Type[BaseException]],
            exc_val: Optional[BaseException],
            exc_tb: Optional[types.TracebackType],
    ) -> None:
        self._stop_and_join()
        if self.reraise and exc_val is None:
            failure = self._future.exception()  # of the runner itself, not of the operator
            if failure is not None:
                raise failure
            exception = self.exception
            if exception is not None and not _is_clean_exit(exception):
                raise exception

    def _stop_and_join(self) -> None:
        if not self._stop.done():
            self._stop.set_result(None)
        assert self._thread is not None
        self._thread.join(self.timeout)
        if self._thread.is_alive():
            raise TimeoutError(f"The operator did not stop in {self.timeout} seconds.")

    def _target(self, default_registry: kopf.OperatorRegistry) -> None:
        loop = asyncio.new_event_loop()
        try:
            controls = kopf_cli.CLIControls(ready_flag=self._ready, stop_flag=self._stop,
                                            registry=self.registry, settings=self.settings, loop=loop)
            runner = click.testing.CliRunner()
            result = runner.invoke(kopf_cli.main, *self.args, obj=controls, **self.kwargs)
        except BaseException as e:  # a failure of the runner itself, not of the operator
            self._future.set_exception(e)
        else:
            self._future.set_result(result)
        finally:
            kopf.set_default_registry(default_registry)  # "kopf run" sets the given one for its imports
            loop.close()
            self._ready.set()  # if the operator has exited before becoming ready: do not wait forever

    @property
    def future(self) -> concurrent.futures.Future[click.testing.Result]:
        """The click's result of the command once it has exited (or the runner's own failure)."""
        return self._future

    @property
    def result(self) -> click.testing.Result:
        if not self._future.done():
            raise RuntimeError("The operator's results are available only after it has exited.")
        return self._future.result()

    @property
    def exit_code(self) -> int:
        return self.result.exit_code

    @property
    def output(self) -> str:
        """Everything the operator printed and logged (stdout and stderr, interleaved)."""
        return self.result.output

    @property
    def stdout(self) -> str:
        """The operator's output including its log (as the manual's examples expect)."""
        return self.result.output

    @property
    def stdout_bytes(self) -> bytes:
        return self.result.stdout_bytes

    @property
    def stderr(self) -> str:
        return self.result.stderr

    @property
    def stderr_bytes(self) -> bytes:
        return self.result.stderr_bytes or b''

    @property
    def exception(self) -> Optional[BaseException]:
        return self.result.exception

    @property
    def exc_info(self) -> Any:
        return self.result.exc_info


def _is_clean_exit(exception: BaseException) -> bool:
    return isinstance(exception, SystemExit) and exception.code in (0, None)
