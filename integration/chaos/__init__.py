"""
A chaos soak: the operator under injected faults, checked for lost changes and repeated handlers.

From the repository's root::

    hatch run integration:python -m integration.chaos --minutes 30 --objects 1000 --seed 1

See ``_harness`` for the course of a soak, ``_schedule`` for the faults,
``_proxy`` for the faults on the wire, ``operator.py`` for the handlers and
``_invariants`` for what is checked at the end.
"""
