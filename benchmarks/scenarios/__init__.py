"""
The scenarios, each a function of a running session that returns its figures.

- ``burst``: many objects created at once, then all updated, then all deleted.
- ``lifecycle``: the requests of one object's create → update → delete.
- ``restart``: the operator started over many objects it has already handled.
- ``idle``: the same operator watching them with nothing to do.
- ``rates``: objects arriving at a steady rate, open-loop: the latency per rate, for the capacity.
- ``baseline``: no operator at all; checks that the harness's own requests are subtracted exactly.
"""
