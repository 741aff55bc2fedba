"""
A hint for the clients under load: which of the waiting requests to send first.

When more requests wait than a client sends at once, the requests made for the
objects whose handling began earlier should go first. The objects of a burst
are then finished one after another, each soon after its own arrival, instead
of all of them progressing together and finishing together at the end: the
same work and the same throughput, but a much lower latency for most objects.

The framework sets the hint in each object's worker (the loop time when the
object's current activity began); the requests made without it (e.g. posting
k8s-events, peering) rank by the time they are made. Clients may ignore it.
"""
import contextvars
from typing import Optional

request_priority: contextvars.ContextVar[Optional[float]] = contextvars.ContextVar(
    'request_priority', default=None)  # lower goes first; in the loop's time
