"""
The event loops the frameworks are measured on, and how their records are named.

The first loop of a run runs every scenario under the scenarios' own names; each
other loop runs the bursts again (on the framework sides only), named with the
loop as a suffix: ``burst-uvloop``, ``burst-defaults-uvloop``.
"""
from collections.abc import Sequence

LOOPS = ('asyncio', 'uvloop')
DEFAULT_LOOPS = ('asyncio',)  # the results written before the loops were chosen ran on asyncio's own
RERUN_KINDS = ('churn', 'defaults')  # the sessions that run again on every other loop: the bursts


def scenario_on(scenario: str, loop: str, loops: Sequence[str]) -> str:
    """The scenario's name in the records of that loop."""
    return scenario if loop == loops[0] else f'{scenario}-{loop}'


def describe(loop: str) -> str:
    if loop == 'uvloop':
        return 'on uvloop (both frameworks)'
    return "on asyncio's own loop (uvloop hidden from both frameworks)"
