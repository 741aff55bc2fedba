"""
Engines: the activities beside the watch-streams' handling, one room per capability.

- ``coordination``: peering, leader election, sharding, and the Leases behind them;
- ``endpoints``: the operator's own HTTP endpoints (the health probes, the metrics);
- ``webhooks``: admission and conversion (the reviews, their servers, their configurations);
- ``background``: daemons and timers;
- ``events``: k8s-events, posted explicitly or from the per-object logs.

The modules shared by them stay here: the activities (startup, cleanup, login, probes),
indexing, and the retrying of the activities. The rooms do not import each other.
"""
