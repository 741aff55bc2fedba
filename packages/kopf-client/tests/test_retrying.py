"""
Retrying of network errors, 5xx and 429 — and not retrying of other 4xx.

The requests go to a real local server; the sleeps between the attempts are
recorded by the client fixture instead of being slept.
"""
from __future__ import annotations

import asyncio
import email.utils
import logging
from typing import TYPE_CHECKING, List

import aiohttp
import pytest
from aiohttp import web

import kopf
from kopf import clients
from kopf_client import AiohttpClient
from kopf_client._retrying import RetryBudget, parse_retry_after

if TYPE_CHECKING:
    from conftest import FakeApi

PODS = kopf.Resource('', 'v1', 'pods', kind='Pod', namespaced=True)
POD_PATH = '/api/v1/namespaces/ns/pods/pod1'
PODS_PATH = '/api/v1/namespaces/ns/pods'
POD = {'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'pod1'}}


def test_budget_gives_the_backoffs_in_order_then_none() -> None:
    budget = RetryBudget([1, 2, 3])
    assert [budget.take(), budget.take(), budget.take(), budget.take()] == [1, 2, 3, None]


def test_budget_replaces_the_backoff_with_the_given_delay_but_consumes_it() -> None:
    budget = RetryBudget([1, 2])
    assert [budget.take(delay=10), budget.take(), budget.take(delay=10)] == [10, 2, None]


def test_budget_counts_the_attempts() -> None:
    budget = RetryBudget([1, 2])
    budget.take()
    budget.take()
    assert budget.attempt == 3


def test_budget_with_no_backoffs_allows_no_retries() -> None:
    assert RetryBudget([]).take() is None


@pytest.mark.parametrize('value, expected', [
    pytest.param('3', 3.0, id='seconds'),
    pytest.param(' 1.5 ', 1.5, id='fractional'),
    pytest.param('0', 0.0, id='zero'),
    pytest.param(None, None, id='absent'),
    pytest.param('', None, id='empty'),
    pytest.param('-1', None, id='negative'),
    pytest.param('soon', None, id='garbage'),
    pytest.param('nan', None, id='nan'),
])
def test_retry_after_in_seconds(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value) == expected


def test_retry_after_as_http_date_is_relative_to_now() -> None:
    value = email.utils.formatdate(1_000_030, usegmt=True)
    assert parse_retry_after(value, now=1_000_000) == 30


async def test_server_errors_are_retried_until_success(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
) -> None:
    settings.networking.error_backoffs = [1, 2, 3]
    api.add(POD_PATH, {'message': 'etcd is sad'}, status=500)
    api.add(POD_PATH, {'message': 'unavailable'}, status=503)
    api.add(POD_PATH, POD)
    body = await client.get_object(PODS, namespace='ns', name='pod1')
    assert body == POD
    assert sleeps == [1, 2]
    assert len(api.requests) == 3


async def test_server_errors_escalate_when_the_backoffs_are_over(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
) -> None:
    settings.networking.error_backoffs = [1, 2]
    for message in ['first', 'second', 'third']:
        api.add(POD_PATH, {'kind': 'Status', 'code': 503, 'message': message}, status=503)
    with pytest.raises(clients.APIServerError) as err:
        await client.get_object(PODS, namespace='ns', name='pod1')
    assert err.value.status == 503
    assert str(err.value) == 'third'  # the last attempt's error
    assert sleeps == [1, 2]
    assert len(api.requests) == 3


async def test_a_single_number_as_backoffs_means_one_retry(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
) -> None:
    settings.networking.error_backoffs = 5
    api.add(POD_PATH, status=500)
    api.add(POD_PATH, status=500)
    with pytest.raises(clients.APIServerError):
        await client.get_object(PODS, namespace='ns', name='pod1')
    assert sleeps == [5]


async def test_no_backoffs_mean_no_retries(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
) -> None:
    settings.networking.error_backoffs = []
    api.add(POD_PATH, status=502)
    with pytest.raises(clients.APIServerError):
        await client.get_object(PODS, namespace='ns', name='pod1')
    assert sleeps == []
    assert len(api.requests) == 1


async def test_backoffs_restart_for_every_request(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
) -> None:
    settings.networking.error_backoffs = [1, 2]
    for _ in range(2):
        api.add(POD_PATH, status=500)
        api.add(POD_PATH, POD)
    await client.get_object(PODS, namespace='ns', name='pod1')
    await client.get_object(PODS, namespace='ns', name='pod1')
    assert sleeps == [1, 1]


async def test_retries_are_logged_in_kopfs_words(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
        caplog: pytest.LogCaptureFixture,
) -> None:
    settings.networking.error_backoffs = [1, 2]
    api.add(POD_PATH, status=500)
    api.add(POD_PATH, POD)
    api.add(POD_PATH, status=500)
    api.add(POD_PATH, status=500)
    api.add(POD_PATH, status=500)
    with caplog.at_level(logging.DEBUG, logger='kopf_client'):
        await client.get_object(PODS, namespace='ns', name='pod1')
        with pytest.raises(clients.APIServerError):
            await client.get_object(PODS, namespace='ns', name='pod1')
    what = f'GET {api.url}{POD_PATH}'
    error = "APIServerError('HTTP 500')"
    first = (f"Request attempt #1/3 failed; will retry: {what} -> {error} "
             f"(2 more attempts within 3 s; the next failures are logged at the DEBUG level)")
    assert [(record.levelname, record.getMessage()) for record in caplog.records] == [
        ('WARNING', first),
        ('DEBUG', f"Request attempt #2/3: {what}"),
        ('INFO', f"Request attempt #2/3 succeeded: {what}"),
        ('WARNING', first),
        ('DEBUG', f"Request attempt #2/3: {what}"),
        ('DEBUG', f"Request attempt #2/3 failed; will retry: {what} -> {error}"),
        ('DEBUG', f"Request attempt #3/3: {what}"),
        ('WARNING', f"Request attempt #3/3 failed; escalating: {what} -> {error}"),
    ]


async def test_a_request_without_retries_leaves_the_error_to_the_caller(
        api: FakeApi, client: AiohttpClient, sleeps: List[float], caplog: pytest.LogCaptureFixture,
) -> None:
    api.add('/api/v1/namespaces/ns/pods', status=503)
    with caplog.at_level(logging.DEBUG, logger='kopf_client'):
        with pytest.raises(clients.APIServerError):
            await client.create_object(PODS, namespace='ns', body=POD, backoffs=())
    assert sleeps == []
    assert [record.levelname for record in caplog.records] == ['DEBUG']  # no warning: nothing was retried


async def test_a_generator_of_backoffs_is_warned_about_without_a_total(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
        caplog: pytest.LogCaptureFixture,
) -> None:
    settings.networking.error_backoffs = (delay for delay in [1, 2])
    api.add(POD_PATH, status=500)
    api.add(POD_PATH, POD)
    with caplog.at_level(logging.WARNING, logger='kopf_client'):
        await client.get_object(PODS, namespace='ns', name='pod1')
    assert caplog.messages == [f"Request attempt #1 failed; will retry: GET {api.url}{POD_PATH} -> "
                               f"APIServerError('HTTP 500') (more attempts as the back-offs allow; "
                               f"the next failures are logged at the DEBUG level)"]


@pytest.mark.parametrize('override, expected_sleeps, attempts', [
    pytest.param(None, [10, 20], 3, id='networking-backoffs-by-default'),
    pytest.param([1], [1], 2, id='own-backoffs-instead'),
    pytest.param((), [], 1, id='no-retries'),
])
async def test_create_object_retries_with_the_given_backoffs_instead_of_the_networking_ones(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
        override: list[float] | None, expected_sleeps: List[float], attempts: int,
) -> None:
    settings.networking.error_backoffs = [10, 20]
    for _ in range(3):
        api.add(PODS_PATH, status=503)
    with pytest.raises(clients.APIServerError):
        await client.create_object(PODS, namespace='ns', body=POD, backoffs=override)
    assert sleeps == expected_sleeps
    assert len(api.requests_to(PODS_PATH)) == attempts


@pytest.mark.parametrize('status, error_cls', [
    pytest.param(400, clients.APIClientError, id='400'),
    pytest.param(403, clients.APIForbiddenError, id='403'),
    pytest.param(404, clients.APINotFoundError, id='404'),
    pytest.param(409, clients.APIConflictError, id='409'),
    pytest.param(422, clients.APIUnprocessableEntityError, id='422'),
])
async def test_client_errors_are_not_retried(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
        status: int, error_cls: type[clients.APIError],
) -> None:
    settings.networking.error_backoffs = [1, 2]
    api.add(POD_PATH, {'kind': 'Status', 'code': status, 'message': 'no'}, status=status)
    with pytest.raises(error_cls):
        await client.get_object(PODS, namespace='ns', name='pod1')
    assert sleeps == []
    assert len(api.requests) == 1


async def test_throttling_waits_for_retry_after_and_retries(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
) -> None:
    settings.networking.error_backoffs = [1, 2]
    api.add(POD_PATH, {'kind': 'Status', 'code': 429}, status=429, headers={'Retry-After': '7'})
    api.add(POD_PATH, POD)
    body = await client.get_object(PODS, namespace='ns', name='pod1')
    assert body == POD
    assert sleeps == [7]


@pytest.mark.parametrize('enforce, expected', [
    pytest.param(False, 10, id='longer-backoff-wins'),
    pytest.param(True, 7, id='enforced-retry-after'),
])
async def test_throttling_with_a_shorter_retry_after_than_the_backoff(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
        enforce: bool, expected: float,
) -> None:
    settings.networking.error_backoffs = [10]
    settings.networking.enforce_retry_after = enforce
    api.add(POD_PATH, {'kind': 'Status', 'code': 429}, status=429, headers={'Retry-After': '7'})
    api.add(POD_PATH, POD)
    await client.get_object(PODS, namespace='ns', name='pod1')
    assert sleeps == [expected]


async def test_throttling_without_retry_after_waits_for_the_backoff(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
) -> None:
    settings.networking.error_backoffs = [3]
    api.add(POD_PATH, status=429)
    api.add(POD_PATH, POD)
    await client.get_object(PODS, namespace='ns', name='pod1')
    assert sleeps == [3]


async def test_throttling_escalates_when_the_backoffs_are_over(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
) -> None:
    settings.networking.error_backoffs = [1]
    api.add(POD_PATH, status=429, headers={'Retry-After': '7'})
    api.add(POD_PATH, status=429, headers={'Retry-After': '8'})
    with pytest.raises(clients.APITooManyRequestsError) as err:
        await client.get_object(PODS, namespace='ns', name='pod1')
    assert err.value.retry_after == 8
    assert sleeps == [7]


# aiohttp itself re-sends idempotent requests once on a dropped connection;
# creation is not idempotent, so every drop here is seen by the retrying.
async def test_dropped_connections_are_retried(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
) -> None:
    settings.networking.error_backoffs = [1, 2]
    api.add_drop(PODS_PATH)
    api.add(PODS_PATH, POD, status=201)
    body = await client.create_object(PODS, namespace='ns', body=POD)
    assert body == POD
    assert sleeps == [1]
    assert len(api.requests) == 2


async def test_dropped_connections_escalate_when_the_backoffs_are_over(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
) -> None:
    settings.networking.error_backoffs = [1]
    api.add_drop(PODS_PATH)
    api.add_drop(PODS_PATH)
    with pytest.raises(aiohttp.ClientConnectionError):
        await client.create_object(PODS, namespace='ns', body=POD)
    assert sleeps == [1]


async def test_timed_out_attempts_are_retried(
        api: FakeApi, client: AiohttpClient, settings: kopf.OperatorSettings, sleeps: List[float],
) -> None:
    async def hang(_: web.Request) -> web.StreamResponse:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    # The hanging attempt times out; the served one is far quicker, even on a loaded machine.
    settings.networking.request_timeout = 0.5
    settings.networking.error_backoffs = [1]
    api.add_handler(POD_PATH, hang)
    api.add(POD_PATH, POD)
    body = await client.get_object(PODS, namespace='ns', name='pod1')
    assert body == POD
    assert sleeps == [1]


async def test_refused_connections_are_retried_then_escalate(
        settings: kopf.OperatorSettings, sleeps: List[float], unused_tcp_port: int,
) -> None:
    async def sleep(delay: float) -> None:
        sleeps.append(delay)

    settings.networking.error_backoffs = [1, 2]
    vault = clients.Vault({'dead': kopf.ConnectionInfo(server=f'http://127.0.0.1:{unused_tcp_port}')})
    async with AiohttpClient(vault=vault, settings=settings, sleep=sleep) as client:
        with pytest.raises(OSError):  # aiohttp's connection errors are also OSError
            await client.get_object(PODS, namespace='ns', name='pod1')
    assert sleeps == [1, 2]
