"""
The fault schedule of a soak: which fault strikes when, drawn from a seed.

The schedule is computed up front from the seed, the soak's duration and the
rate of each kind of fault, so the same seed always gives the same schedule
(what makes a failing soak reproducible). Faults on the wire are carried out
by the proxy (``_proxy``), faults on processes by the harness (``_harness``).
"""
import dataclasses
import random
from collections.abc import Mapping

# Faults carried out by the proxy on the HTTP traffic between the operator and the API server.
DROP_REQUEST = 'drop-request'      # the connection of the next request is cut after the API server got it
DROP_WATCH = 'drop-watch'          # an open watch stream is cut mid-stream
STALL_WATCH = 'stall-watch'        # an open watch stream goes silent for a while, then resumes
GONE_WATCH = 'gone-watch'          # an open watch stream gets a 410 Gone ERROR event and ends
DELAY = 'delay'                    # the next requests are answered late
THROTTLE = 'throttle'              # the next requests are answered 429 with Retry-After
SERVER_ERROR = 'server-error'      # the next requests are answered 500 or 503
WIRE_KINDS = (DROP_REQUEST, DROP_WATCH, STALL_WATCH, GONE_WATCH, DELAY, THROTTLE, SERVER_ERROR)

# Faults carried out by the harness on processes.
KILL_OPERATOR = 'kill-operator'    # kill -9 of the operator, then a restart
RESTART_APISERVER = 'restart-apiserver'
RESTART_ETCD = 'restart-etcd'
PROCESS_KINDS = (KILL_OPERATOR, RESTART_APISERVER, RESTART_ETCD)

KINDS = WIRE_KINDS + PROCESS_KINDS

# Faults per minute of each kind when all are enabled: frequent on the wire, rarer for processes.
DEFAULT_RATES: Mapping[str, float] = {
    DROP_REQUEST: 2.0, DROP_WATCH: 2.0, STALL_WATCH: 1.0, GONE_WATCH: 1.0,
    DELAY: 2.0, THROTTLE: 2.0, SERVER_ERROR: 2.0,
    KILL_OPERATOR: 0.5, RESTART_APISERVER: 0.2, RESTART_ETCD: 0.2,
}


@dataclasses.dataclass(frozen=True)
class Fault:
    at: float          # seconds since the soak's start
    kind: str
    count: int         # how many requests it hits (for per-request faults), else 1
    seconds: float     # how long it delays, stalls or asks to retry after (0 where meaningless)
    status: int        # the HTTP status answered (for throttles and server errors), else 0


def make_schedule(seed: int, duration: float, rates: Mapping[str, float] = DEFAULT_RATES) -> list[Fault]:
    """
    The faults of a soak of ``duration`` seconds, sorted by time.

    Each kind's faults come at exponentially distributed intervals (a Poisson
    process) of its own rate per minute; every draw comes from one generator
    seeded with ``seed``, in a fixed order of kinds, hence reproducible.
    """
    unknown = set(rates) - set(KINDS)
    if unknown:
        raise ValueError(f"Unknown fault kinds: {sorted(unknown)}; known are: {', '.join(KINDS)}.")
    rng = random.Random(seed)
    faults: list[Fault] = []
    for kind in KINDS:
        rate = rates.get(kind, 0.0)
        if rate <= 0:
            continue
        at = rng.expovariate(rate / 60.0)
        while at < duration:
            faults.append(_make_fault(rng, kind, at))
            at += rng.expovariate(rate / 60.0)
    return sorted(faults, key=lambda fault: (fault.at, fault.kind))


def _make_fault(rng: random.Random, kind: str, at: float) -> Fault:
    count = rng.randint(1, 5)
    seconds = round(rng.uniform(0.5, 8.0), 2)
    status = rng.choice((500, 503)) if kind == SERVER_ERROR else 429 if kind == THROTTLE else 0
    if kind in PROCESS_KINDS or kind in (DROP_WATCH, STALL_WATCH, GONE_WATCH):
        count = 1
    if kind in (DROP_REQUEST, DROP_WATCH, GONE_WATCH, SERVER_ERROR) or kind in PROCESS_KINDS:
        seconds = 0.0
    if kind == THROTTLE:
        seconds = float(rng.randint(1, 3))
    if kind == STALL_WATCH:  # some stalls outlast the operator's inactivity timeout, some do not
        seconds = round(rng.uniform(1.0, 40.0), 2)
    return Fault(at=round(at, 3), kind=kind, count=count, seconds=seconds, status=status)


def parse_rates(spec: str) -> dict[str, float]:
    """
    Rates from the command line: ``all`` (the defaults), ``none``, or
    ``kind=rate,...`` over the defaults (``kill-operator=0`` disables one).
    """
    if spec == 'all':
        return dict(DEFAULT_RATES)
    if spec == 'none':
        return {}
    rates = dict(DEFAULT_RATES)
    for item in spec.split(','):
        kind, sep, value = item.partition('=')
        kind = kind.strip()
        if not sep or kind not in KINDS:
            raise ValueError(f"Bad fault rate {item!r}: expected kind=rate with a kind of: {', '.join(KINDS)}.")
        try:
            rates[kind] = float(value)
        except ValueError:
            raise ValueError(f"Bad fault rate {item!r}: the rate must be a number of faults per minute.") from None
    return rates
