"""
An unavailable API during the peering: logged, retried with backoff, never fatal.

The API client is a fake that fails the first peering requests (a 5xx, or a
transport error of the client that is no API error), then works. The time is
fake (looptime): the delays between the attempts are exact loop seconds.
"""
import asyncio
import itertools
import logging
from typing import Any, Dict, List, Optional

import pytest

from kopf._cogs.clients import errors as apierrors
from kopf._cogs.configs import configuration
from kopf._cogs.structs import references
from kopf._core.engines.coordination import peering

TARGET = peering.PeeringTarget(resource=peering.CLUSTER_PEERINGS[0], namespace=None, name='main')


class ServerDisconnected(Exception):
    """Like a transport error of a client library: neither an API error nor an OSError."""


class FlakyClient:
    """Fails the first ``failures`` requests with ``error``, then works; remembers when it was asked."""

    def __init__(self, *, failures: int, error: Exception) -> None:
        self.failures = failures
        self.error = error
        self.requests: List[float] = []
        self.patches: List[Dict[str, Any]] = []

    def _check(self) -> None:
        self.requests.append(asyncio.get_running_loop().time())
        if self.failures > 0:
            self.failures -= 1
            raise self.error

    async def get_object(self, resource: references.Resource, *, namespace: Optional[str], name: str) -> Any:
        self._check()
        return {'metadata': {'name': name}}

    async def patch_object(self, resource: references.Resource, *, namespace: Optional[str], name: str,
                           patch: Dict[str, Any]) -> Any:
        self._check()
        self.patches.append(patch)
        return {}


def gaps(times: List[float]) -> List[float]:
    return [later - earlier for earlier, later in itertools.pairwise(times)]


@pytest.mark.looptime
@pytest.mark.parametrize('error', [
    apierrors.APIServerError({'message': 'etcdserver: leader changed'}, status=500),
    ServerDisconnected('Server disconnected'),
])
async def test_keepalive_survives_failures_with_backoff(caplog: pytest.LogCaptureFixture, error: Exception) -> None:
    caplog.set_level(logging.INFO, logger='kopf.reactor.outages')
    settings = configuration.OperatorSettings()
    settings.peering.lifetime = 60
    client = FlakyClient(failures=6, error=error)
    task = asyncio.create_task(peering.keepalive(client=client, settings=settings,  # type: ignore[arg-type]
                                                 identity='me', target=TARGET))
    await asyncio.sleep(36)  # 1+2+4+8+10+10 seconds of retries: the 7th attempt works
    assert not task.done()
    task.cancel()
    await asyncio.wait([task])
    assert gaps(client.requests) == [1, 2, 4, 8, 10, 10]
    assert len(client.patches) == 1
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 6
    assert errors[0] == ("Failed to renew the keep-alive in the peering object 'main' cluster-wide; "
                         "retrying in 1s (attempt 1); the operator keeps its current pause or operation. "
                         f"The error: {error!r}")
    assert errors[5].startswith("Failed to renew the keep-alive in the peering object 'main' cluster-wide; "
                                "retrying in 10s (attempt 6);")
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == ["Succeeded to renew the keep-alive in the peering object 'main' cluster-wide "
                     "after 6 failure(s)."]


@pytest.mark.looptime
async def test_finding_the_target_survives_failures_with_backoff(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger='kopf.reactor.outages')
    settings = configuration.OperatorSettings()
    settings.peering.name = 'main'
    client = FlakyClient(failures=3, error=ServerDisconnected('Server disconnected'))
    targets = await peering.find_targets(client=client, settings=settings,  # type: ignore[arg-type]
                                         scopes=[None])
    assert targets == [TARGET]
    assert gaps(client.requests) == [1, 2, 4]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert errors[2] == ("Failed to find the peering object 'main'; retrying in 4s (attempt 3); "
                         "the operator waits before serving anything. "
                         "The error: ServerDisconnected('Server disconnected')")
    infos = [r.getMessage() for r in caplog.records if r.levelno == logging.INFO]
    assert infos == ["Succeeded to find the peering object 'main' after 3 failure(s)."]


async def test_a_failed_removal_of_dead_peers_is_logged_not_raised(caplog: pytest.LogCaptureFixture) -> None:
    settings = configuration.OperatorSettings()
    client = FlakyClient(failures=1, error=apierrors.APIServerError(None, status=503))
    body = {'status': {'dead': {'priority': 0, 'lifetime': 1, 'lastseen': '2020-01-01T00:00:00+00:00'}}}
    operating = asyncio.Event()
    await peering.react(client=client, settings=settings, identity='me', target=TARGET,  # type: ignore[arg-type]
                        body=body, paused={}, operating=operating)
    assert operating.is_set()
    [error] = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert error == ("Failed to remove the dead peers from 'main' cluster-wide; retrying on its next change. "
                     "The error: APIServerError('HTTP 503')")
    await peering.react(client=client, settings=settings, identity='me', target=TARGET,  # type: ignore[arg-type]
                        body=body, paused={}, operating=operating)
    assert client.patches == [{'status': {'dead': None}}]
