"""
A hint for the clients under load: which of the waiting requests to send first.

When more requests wait than a client sends at once, each object's step goes
by when the change that it handles arrived: first come, first served, by
changes, not by requests or objects. An object's first step then never waits
behind the later steps of the objects that came before it (as it would if the
objects that began earlier went first), and a step whose requests began long
ago is not overtaken by requests made a moment ago.

The framework sets the hint in each object's worker for each cycle (the loop
time when its change arrived; for a repeat after a delay, the time it is
repeated); the requests made without it (e.g. posting k8s-events, peering)
rank by the time they are made. Clients may ignore it.
"""
import contextvars
from typing import Optional

request_priority: contextvars.ContextVar[Optional[float]] = contextvars.ContextVar(
    'request_priority', default=None)  # lower goes first; in the loop's time
