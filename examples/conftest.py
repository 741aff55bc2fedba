"""
The examples' shared test harness: each example's operator run on a real API server.

Every ``NN-topic/test_TOPIC.py`` asks for the ``example`` fixture: it applies
the examples' CRD (``crd.yaml``), runs the operator of the test's own folder
(its one ``TOPIC.py``) in the test's namespace (in-process by default, or as a
``kopf run`` process), creates, patches and deletes ``KopfExample`` objects,
and counts the handlers' successes in the operator's log. At the end of the
test, the operator is stopped and its log must hold no traceback; its ERROR
lines fail the test too (kopf-testing's ``kopf_operator`` fixtures check them).

Run them all on the local control plane::

    pytest examples --kopf-cluster=local
"""
import pathlib
import re
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Optional, Union

import pytest

from kopf_testing import InProcessOperator, KubeClient, OperatorProcess

EXAMPLES = pathlib.Path(__file__).parent
CRD = EXAMPLES / 'crd.yaml'
RESOURCE = 'kopfexamples.kopf.dev'

Object = dict[str, Any]
RunningOperator = Union[InProcessOperator, OperatorProcess]


def example_body(name: str, *, labels: Optional[dict[str, str]] = None,
                 annotations: Optional[dict[str, str]] = None, **spec: Any) -> Object:
    """A ``KopfExample`` body with these labels, annotations and spec fields."""
    metadata: Object = {'name': name, 'labels': labels or {}, 'annotations': annotations or {}}
    return {'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': metadata, 'spec': spec}


def succeeded(handler: str) -> str:
    """The log line of a handler's, activity's, daemon's or timer's success (by its id), as a regexp."""
    return rf"(?:Handler|Activity|Daemon|Timer) '{re.escape(handler)}' succeeded\."


def successes(log: str, handler: str) -> int:
    """How many times the handler (by its id) has succeeded."""
    return len(re.findall(succeeded(handler), log))


class ScriptProcess(OperatorProcess):
    """An application that embeds the operator, run as ``python FILE ARGS`` (not ``kopf run``)."""

    def __init__(self, path: pathlib.Path, args: Sequence[str], *, log_path: pathlib.Path) -> None:
        super().__init__(args, log_path=log_path)
        self.args = [sys.executable, str(path), *args]


class ExampleRun:
    """One example's operator and the objects a test makes it handle."""

    def __init__(self, folder: pathlib.Path, kube: KubeClient,
                 operator: Callable[..., InProcessOperator],
                 operator_process: Callable[[], Callable[..., OperatorProcess]],
                 tmp_path: pathlib.Path) -> None:
        self.folder = folder
        self.kube = kube
        self.tmp_path = tmp_path
        self._operator = operator
        self._operator_process = operator_process
        self.operators: list[RunningOperator] = []

    @property
    def operator(self) -> RunningOperator:
        """The first operator started (most examples start only one)."""
        return self.operators[0]

    @property
    def log(self) -> str:
        """The logs of all the operators started, one after another."""
        return '\n'.join(running.log for running in self.operators)

    @property
    def source(self) -> pathlib.Path:
        """The folder's operator: its one Python file that is not a test."""
        [path] = [path for path in self.folder.glob('*.py') if not path.name.startswith('test_')]
        return path

    def run(self, *, expected_errors: Sequence[str] = ()) -> InProcessOperator:
        """Run the folder's operator in a thread of the test, serving the test's namespace."""
        running = self._operator(self.source, expected_errors=expected_errors)
        self.operators.append(running)
        return running

    def run_process(self, *args: str, ready: str = r'Starting the watch-stream',
                    expected_errors: Sequence[str] = (), log_name: str = 'operator.log') -> OperatorProcess:
        """``kopf run TOPIC.py --verbose ARGS -n NAMESPACE``, as users run it; returns once it logs ``ready``."""
        make = self._operator_process()
        process = make(str(self.source), '--verbose', *args,
                       expected_errors=expected_errors, log_name=log_name)
        self.operators.append(process)
        process.wait_for(ready, timeout=60)
        return process

    def run_script(self, *args: str, ready: str, log_name: str = 'application.log') -> ScriptProcess:
        """``python TOPIC.py ARGS``: an application of our own; returns once it logs ``ready``."""
        process = ScriptProcess(self.source, args, log_path=self.tmp_path / log_name)
        self.operators.append(process)
        process.start()
        process.wait_for(ready, timeout=60)
        return process

    def wait_for(self, pattern: str, *, count: int = 1, timeout: float = 30) -> str:
        """Wait until the operator has logged the pattern (a regexp) ``count`` times; return the log."""
        return self.operator.wait_for(pattern, count=count, timeout=timeout)

    def wait_handled(self, *handlers: str, timeout: float = 30) -> str:
        """Wait until each handler has succeeded (at least once)."""
        for handler in handlers:
            self.wait_for(succeeded(handler), timeout=timeout)
        return self.log

    def create(self, name: str, **kwargs: Any) -> Object:
        return self.kube.create(example_body(name, **kwargs))

    def patch(self, name: str, patch: Object) -> Object:
        return self.kube.patch(RESOURCE, name, patch)

    def get(self, name: str) -> Object:
        return self.kube.get(RESOURCE, name)

    def wait_object(self, name: str, predicate: Callable[[Object], Any], timeout: float = 30) -> Object:
        return self.kube.wait_for(RESOURCE, name, predicate, timeout=timeout)

    def delete(self, name: str, *, timeout: float = 30) -> None:
        """Delete the object and wait until it is gone: the operator has released it (no finalizer left)."""
        self.kube.delete(RESOURCE, name, wait=True, timeout=timeout)

    def assert_handled_once(self, *handlers: str) -> None:
        """Each of the handlers has succeeded exactly once (none ran twice, none is missing)."""
        self.assert_succeeded({handler: 1 for handler in handlers})

    def assert_succeeded(self, expected: dict[str, int]) -> None:
        """The handlers have succeeded so many times each (in-process, the log does not name the objects)."""
        log = self.log
        counts = {handler: successes(log, handler) for handler in expected}
        assert counts == expected, f'Successes per handler: {counts}, expected: {expected}\n{log}'

    def stop(self) -> None:
        """Stop the operators; fail if any of them logged a traceback or an error (the fixtures' own check
        the ERROR lines of their operators too, with the expected ones: not of the applications here)."""
        for running in self.operators:
            running.stop()
        for running in self.operators:
            assert 'Traceback (most recent call last)' not in running.log, f'A traceback:\n{running.log}'
            if isinstance(running, ScriptProcess):
                assert not running.error_lines, f'Errors logged:\n{running.log}'


@pytest.fixture
def example(request: pytest.FixtureRequest, kopf_crd: Callable[..., list[str]], kopf_kube: KubeClient,
            kopf_operator: Callable[..., InProcessOperator], tmp_path: pathlib.Path) -> Iterator[ExampleRun]:
    """The example of the test's folder, with the examples' CRD applied; checked for tracebacks at the end."""
    kopf_crd(CRD)

    def operator_process() -> Callable[..., OperatorProcess]:
        return request.getfixturevalue('kopf_operator_process')  # type: ignore[no-any-return]

    run = ExampleRun(request.path.parent, kopf_kube, kopf_operator, operator_process, tmp_path)
    yield run
    run.stop()

