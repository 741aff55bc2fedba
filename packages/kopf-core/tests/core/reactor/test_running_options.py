"""
The embedding API's options: declared once, checked at the call, each doing what it says.

Inputs: ``kopf.operator()``/``kopf.spawn_tasks()`` with a client driver whose API
never answers (every request waits forever), so the operator stays in its start-up
or serving phase until the test stops it. Not faked: the operator's lifecycle,
the activities' retries, the stop-flag, the root tasks.
"""
import asyncio
import inspect
import logging
from typing import Any, AsyncIterator, List, NoReturn, Sequence

import pytest

import kopf
from kopf._core.reactor import options


class SilentClient:
    """An API client whose every request waits forever, as a cluster that never answers."""

    def __getattr__(self, name: str) -> Any:
        async def wait_forever(*_: Any, **__: Any) -> NoReturn:
            await asyncio.Event().wait()
            raise AssertionError("unreachable")
        return wait_forever

    async def watch_objects(self, *_: Any, **__: Any) -> AsyncIterator[Any]:
        await asyncio.Event().wait()
        yield  # pragma: no cover  (makes it an async generator)

    async def close(self) -> None:
        pass


class SilentDriver:
    def create_client(self, **_: Any) -> Any:
        return SilentClient()

    def default_login_fns(self) -> Sequence[Any]:
        return []


def make_registry(*, failing_startup: bool = False) -> tuple[kopf.OperatorRegistry, List[str]]:
    registry = kopf.OperatorRegistry()
    calls: List[str] = []

    @kopf.on.login(registry=registry)
    def login_fn(**_: Any) -> kopf.ConnectionInfo:
        return kopf.ConnectionInfo(server='https://localhost:1')

    @kopf.on.startup(registry=registry)
    def startup_fn(**_: Any) -> None:
        calls.append('startup')
        if failing_startup:
            raise kopf.TemporaryError("Not yet.", delay=0.1)

    @kopf.on.cleanup(registry=registry)
    def cleanup_fn(**_: Any) -> None:
        calls.append('cleanup')

    return registry, calls


async def test_stop_flag_interrupts_a_retrying_startup_handler(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    registry, calls = make_registry(failing_startup=True)
    stop_flag = asyncio.Event()
    operator = asyncio.create_task(kopf.operator(registry=registry, client=SilentDriver(), stop_flag=stop_flag,
                                                 clusterwide=True, standalone=True))
    await asyncio.sleep(0.5)
    assert calls.count('startup') >= 2  # retrying
    stop_flag.set()
    await asyncio.wait_for(operator, timeout=5)
    assert calls[-1] == 'cleanup'
    assert "Startup activity is only partially executed due to cancellation." in caplog.messages


async def test_command_is_a_root_task_and_stops_the_operator_when_it_ends() -> None:
    registry, calls = make_registry()
    command_ran = asyncio.Event()

    async def command() -> None:
        await asyncio.sleep(0.2)
        command_ran.set()

    tasks = await kopf.spawn_tasks(registry=registry, client=SilentDriver(), clusterwide=True, standalone=True,
                                   _command=command())
    assert [task.get_name() for task in tasks] == ['kopf operator', 'the command']
    await asyncio.wait_for(kopf.run_tasks(tasks), timeout=5)
    assert command_ran.is_set()
    assert calls == ['startup', 'cleanup']


async def test_failing_command_fails_the_operator() -> None:
    registry, _ = make_registry()

    async def command() -> None:
        raise ValueError("the command failed")

    with pytest.raises(ValueError, match="the command failed"):
        await asyncio.wait_for(kopf.operator(registry=registry, client=SilentDriver(), clusterwide=True,
                                             standalone=True, _command=command()), timeout=5)


async def test_indexers_of_a_wrong_type_are_refused() -> None:
    with pytest.raises(TypeError, match=r"indexers= must be a kopf.OperatorIndexers \(or None\), got dict"):
        await kopf.spawn_tasks(indexers={})  # type: ignore[arg-type]


def test_unknown_option_is_refused() -> None:
    with pytest.raises(TypeError, match="unexpected keyword argument 'priorty'"):
        kopf.run(priorty=10)  # type: ignore[call-arg]


@pytest.mark.parametrize('fn', [kopf.run, kopf.operator, kopf.spawn_tasks])
def test_signatures_show_every_option(fn: Any) -> None:
    names = list(inspect.signature(fn).parameters)
    expected = [field for field in options.OperatorOptions.__dataclass_fields__]
    assert names[:len(expected)] == expected
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in inspect.signature(fn).parameters.values())


def test_only_run_takes_a_loop() -> None:
    assert 'loop' in inspect.signature(kopf.run).parameters
    assert 'loop' not in inspect.signature(kopf.operator).parameters
    assert 'loop' not in inspect.signature(kopf.spawn_tasks).parameters


def test_embedding_functions_stay_coroutine_functions() -> None:
    assert inspect.iscoroutinefunction(kopf.operator)
    assert inspect.iscoroutinefunction(kopf.spawn_tasks)
    assert not inspect.iscoroutinefunction(kopf.run)


def test_namespace_and_namespaces_are_served_together() -> None:
    opts = options.OperatorOptions(namespaces=['a', 'b*'], namespace='c')
    assert opts.all_namespaces == ('a', 'b*', 'c')


def test_options_are_frozen() -> None:
    opts = options.OperatorOptions()
    with pytest.raises(AttributeError):
        opts.priority = 1  # type: ignore[misc]
