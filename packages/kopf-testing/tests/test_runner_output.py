"""
KopfRunner's output keeps every log line while another thread replaces ``sys.stderr``.

pytest's capture replaces ``sys.stderr`` between a test's phases, in the main
thread, while the operator of a ``KopfRunner`` keeps logging in its own thread.
As in Kopf, the operator's log goes to the stream of the moment the logging was
configured (the runner's capture), not to whatever ``sys.stderr`` is later.
"""
import io
import pathlib
import re
import sys
import textwrap
import time

import pytest

import kopf
from kopf.testing import KopfRunner

OPERATOR = '''
import asyncio
import kopf

@kopf.on.login()
def login_fn(**_):
    return kopf.ConnectionInfo(server='https://127.0.0.1:9')

@kopf.on.startup()
async def start_ticking(logger, memo, **_):
    async def tick():
        for n in range(1000):
            logger.info(f"tick {n}")
            await asyncio.sleep(0.1)
    memo['ticking'] = asyncio.create_task(tick())
'''


@pytest.fixture(autouse=True)
def isolated_default_registry(kopf_registry: kopf.OperatorRegistry) -> kopf.OperatorRegistry:
    return kopf_registry


def test_log_lines_are_kept_while_stderr_is_replaced_in_another_thread(tmp_path: pathlib.Path) -> None:
    path = tmp_path / 'operator.py'
    path.write_text(textwrap.dedent(OPERATOR))
    replacement = io.StringIO()
    with KopfRunner(['run', '--standalone', '-A', str(path)], timeout=30) as runner:
        time.sleep(0.3)
        saved, sys.stderr = sys.stderr, replacement
        try:
            time.sleep(0.6)
        finally:
            sys.stderr = saved
        time.sleep(0.3)
    ticks = [int(n) for n in re.findall(r'tick (\d+)', runner.output)]
    assert len(ticks) >= 8  # ~12 over 1.2 s: enough to span the replacement
    assert ticks == list(range(len(ticks)))
    assert 'tick' not in replacement.getvalue()
