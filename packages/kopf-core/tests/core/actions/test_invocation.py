"""
Invocation of the user functions: async ones in the event loop, sync ones in the executor.

A real thread pool is used (the executor of the settings); nothing is mocked.
"""
import asyncio
import concurrent.futures
import contextvars
import functools
import threading
from typing import Any, List

import pytest

from kopf._cogs.configs.configuration import OperatorSettings
from kopf._core.actions.invocation import HandlerSignatureError, check_signature, invoke, is_async_fn

var: contextvars.ContextVar[str] = contextvars.ContextVar('var')


async def test_async_functions_are_awaited_in_the_event_loop() -> None:
    async def fn(**kwargs: Any) -> Any:
        return threading.get_ident(), kwargs

    thread_id, kwargs = await invoke(fn, kwargs={'a': 1})
    assert thread_id == threading.get_ident()
    assert kwargs == {'a': 1}


async def test_sync_functions_are_called_in_the_executor() -> None:
    def fn(**kwargs: Any) -> Any:
        return threading.get_ident(), kwargs

    thread_id, kwargs = await invoke(fn, kwargs={'a': 1})
    assert thread_id != threading.get_ident()
    assert kwargs == {'a': 1}


async def test_sync_functions_use_the_executor_of_the_settings() -> None:
    names: List[str] = []
    settings = OperatorSettings()
    settings.execution.executor = concurrent.futures.ThreadPoolExecutor(thread_name_prefix='custom-pool')

    def fn(**_: Any) -> None:
        names.append(threading.current_thread().name)

    try:
        await invoke(fn, kwargs={}, settings=settings)
    finally:
        settings.execution.executor.shutdown(wait=True)
    assert len(names) == 1
    assert names[0].startswith('custom-pool')


@pytest.mark.parametrize('max_workers, expected_concurrency', [(1, 1), (3, 3)])
async def test_sync_functions_run_at_most_max_workers_at_once(max_workers: int, expected_concurrency: int) -> None:
    settings = OperatorSettings()
    settings.execution.max_workers = max_workers
    lock = threading.Lock()
    running: List[int] = [0]
    peaks: List[int] = []
    meeting = threading.Barrier(max_workers)

    def fn(**_: Any) -> None:
        with lock:
            running[0] += 1
            peaks.append(running[0])
        meeting.wait(timeout=5)  # the workers that can run at once meet here
        with lock:
            running[0] -= 1

    try:
        await asyncio.gather(*[invoke(fn, kwargs={}, settings=settings) for _ in range(max_workers * 2)])
    finally:
        settings.execution.executor.shutdown(wait=True)
    assert max(peaks) == expected_concurrency


def test_max_workers_must_be_positive() -> None:
    with pytest.raises(ValueError, match="must be positive"):
        OperatorSettings().execution.max_workers = 0


async def test_sync_functions_see_the_context_variables() -> None:
    def fn(**_: Any) -> str:
        return var.get()

    var.set('hello')
    assert await invoke(fn, kwargs={}) == 'hello'


async def test_context_changes_in_sync_functions_do_not_leak_out() -> None:
    def fn(**_: Any) -> None:
        var.set('changed')

    var.set('original')
    await invoke(fn, kwargs={})
    assert var.get() == 'original'


async def test_positional_args_are_passed_first() -> None:
    def fn(value: Any, /, **kwargs: Any) -> Any:
        return value, kwargs

    assert await invoke(fn, args=('v',), kwargs={'a': 1}) == ('v', {'a': 1})


async def test_exceptions_propagate_from_sync_functions() -> None:
    def fn(**_: Any) -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await invoke(fn, kwargs={})


async def test_exceptions_propagate_from_async_functions() -> None:
    async def fn(**_: Any) -> None:
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        await invoke(fn, kwargs={})


async def _async_fn(**_: Any) -> None:
    pass


def _sync_fn(**_: Any) -> None:
    pass


class _AsyncCallable:
    async def __call__(self, **_: Any) -> None:
        pass


class _SyncCallable:
    def __call__(self, **_: Any) -> None:
        pass


@pytest.mark.parametrize('fn, expected', [
    pytest.param(_async_fn, True, id='async-function'),
    pytest.param(_sync_fn, False, id='sync-function'),
    pytest.param(functools.partial(_async_fn, a=1), True, id='async-partial'),
    pytest.param(functools.partial(functools.partial(_async_fn, a=1), b=2), True, id='nested-async-partial'),
    pytest.param(functools.partial(_sync_fn, a=1), False, id='sync-partial'),
    pytest.param(_AsyncCallable(), True, id='async-callable-object'),
    pytest.param(_SyncCallable(), False, id='sync-callable-object'),
    pytest.param(lambda **_: None, False, id='lambda'),
])
def test_async_functions_are_detected(fn: Any, expected: bool) -> None:
    assert is_async_fn(fn) is expected


async def test_async_callable_objects_are_awaited() -> None:
    class Callable:
        async def __call__(self, **kwargs: Any) -> Any:
            await asyncio.sleep(0)
            return kwargs

    assert await invoke(Callable(), kwargs={'a': 1}) == {'a': 1}


# Signatures.

def _with_kwargs(spec: Any, **kwargs: Any) -> None:
    pass


def _with_underscore(**_: Any) -> None:
    pass


@pytest.mark.parametrize('fn', [
    pytest.param(_with_kwargs, id='named-kwargs'),
    pytest.param(_with_underscore, id='underscore'),
    pytest.param(lambda **_: None, id='lambda'),
    pytest.param(functools.partial(_with_kwargs, spec=None), id='partial'),
    pytest.param(_SyncCallable(), id='callable-object'),
    pytest.param(getattr, id='builtin-uninspectable'),
])
def test_functions_with_arbitrary_kwargs_pass_silently(fn: Any, caplog: pytest.LogCaptureFixture) -> None:
    check_signature(fn)
    assert caplog.records == []


def test_functions_without_arbitrary_kwargs_are_warned_about_not_refused(caplog: pytest.LogCaptureFixture) -> None:
    def create_fn(spec: Any, name: Any) -> None:
        pass

    check_signature(create_fn, kind='daemon')  # no exception: Kopf registers it too
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert message.startswith('The daemon ')
    assert 'create_fn(spec: Any, name: Any)' in message
    assert 'does not accept arbitrary keyword arguments' in message
    assert 'add **kwargs' in message


def _named_fn(spec: Any, name: Any) -> None:
    pass


def _wrap_async(fn: Any) -> Any:
    @functools.wraps(fn)
    async def _wrapper(**kwargs: Any) -> Any:
        return kwargs
    return _wrapper


def _wrap_sync(fn: Any) -> Any:
    @functools.wraps(fn)
    def _wrapper(**kwargs: Any) -> Any:
        return kwargs
    return _wrapper


@pytest.mark.parametrize('wrap', [_wrap_async, _wrap_sync])
def test_wrappers_are_judged_by_their_own_signature(wrap: Any, caplog: pytest.LogCaptureFixture) -> None:
    check_signature(wrap(_named_fn))
    assert caplog.records == []


@pytest.mark.parametrize('wrap', [_wrap_async, _wrap_sync])
async def test_wrappers_get_all_the_kwargs(wrap: Any) -> None:
    assert await invoke(wrap(_named_fn), kwargs={'spec': 1, 'name': 'n', 'extra': 2}) == {
        'spec': 1, 'name': 'n', 'extra': 2}


async def test_sync_wrappers_of_async_functions_are_awaited() -> None:
    # As in Kopf: the async-ness of the wrapped function counts; the wrapper returns its coroutine.
    async def fn(**kwargs: Any) -> Any:
        return threading.get_ident(), kwargs

    @functools.wraps(fn)
    def wrapper(**kwargs: Any) -> Any:
        return fn(**kwargs)

    thread_id, kwargs = await invoke(wrapper, kwargs={'a': 1})
    assert thread_id == threading.get_ident()
    assert kwargs == {'a': 1}


async def test_sync_wrappers_of_async_functions_may_return_plain_values() -> None:
    async def fn(**_: Any) -> None:
        pass

    @functools.wraps(fn)
    def wrapper(**_: Any) -> str:
        return 'plain'

    assert await invoke(wrapper, kwargs={}) == 'plain'


@pytest.mark.parametrize('is_async', [False, True])
async def test_calls_failing_on_the_signature_say_what_to_change(is_async: bool) -> None:
    def fn(spec: Any) -> None:
        pass

    async def afn(spec: Any) -> None:
        pass

    with pytest.raises(HandlerSignatureError) as err:
        await invoke(afn if is_async else fn, kwargs={'spec': 1, 'name': 'n'})
    assert 'does not accept arbitrary keyword arguments: add **kwargs' in str(err.value)
    assert "unexpected keyword argument 'name'" in str(err.value)
    assert isinstance(err.value, TypeError)  # handled as any other error of a handler, as in Kopf


async def test_functions_naming_all_their_kwargs_are_called() -> None:
    def fn(spec: Any, name: Any) -> Any:
        return spec, name

    assert await invoke(fn, kwargs={'spec': 1, 'name': 'n'}) == (1, 'n')


@pytest.mark.parametrize('is_async', [False, True])
async def test_type_errors_inside_the_functions_are_not_explained(is_async: bool) -> None:
    def fn(spec: Any) -> None:
        raise TypeError('from inside')

    async def afn(spec: Any) -> None:
        raise TypeError('from inside')

    with pytest.raises(TypeError, match=r'^from inside$') as err:
        await invoke(afn if is_async else fn, kwargs={'spec': 1})
    assert not isinstance(err.value, HandlerSignatureError)
