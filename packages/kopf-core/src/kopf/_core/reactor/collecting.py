"""
Garbage collection tuned for an operator's process.

An operator keeps the objects in handling alive across its awaits: each body
is a tree of many dicts and lists, and there are as many bodies as objects in
flux. With Python's default threshold of the youngest generation (700 net
allocations of containers), the collector scans them again and again: about
a fifth of the operator's CPU under a burst of changes. A larger youngest
generation is scanned far less often, and the bodies mostly die by reference
counting before any scan. The modules, classes and functions made at start-up
never become garbage: frozen, they are left out of the full collections.

This is only for the process the framework owns (``kopf run``, ``kopf.run()``),
never for ``kopf.operator()`` in someone else's loop, and never over the
thresholds the process has set itself: only Python's defaults are replaced.
"""
import gc
import logging

logger = logging.getLogger('kopf.reactor.running')

# Python's own thresholds (3.8 to 3.13). Other versions (e.g. the incremental collector
# of 3.14) have other defaults and other meanings: they are left as they are.
PYTHON_DEFAULT_THRESHOLDS = (700, 10, 10)

# Ten times Python's default: measured on a burst of 1,000 objects, the collector's time falls
# from ~21% to ~12% of the operator's CPU, at the cost of ~6 MiB of peak memory.
YOUNGEST_GENERATION_THRESHOLD = 7000


def tune_garbage_collection() -> bool:
    """Freeze what start-up has made, and enlarge the youngest generation; whether it was done."""
    if gc.get_threshold() != PYTHON_DEFAULT_THRESHOLDS or not gc.isenabled():
        return False  # the process manages its collector itself
    gc.collect()  # the start-up's garbage is not to be frozen forever
    gc.freeze()
    gc.set_threshold(YOUNGEST_GENERATION_THRESHOLD, *PYTHON_DEFAULT_THRESHOLDS[1:])
    logger.debug(f"Garbage collection is tuned: {gc.get_freeze_count()} objects of the start-up are frozen, "
                 f"the thresholds are {gc.get_threshold()}.")
    return True
