"""
Garbage collection of the operator's own process: tuned only over Python's defaults.
"""
import gc
from typing import Iterator

import pytest

from kopf._core.reactor import collecting


@pytest.fixture(autouse=True)
def restored_collector() -> Iterator[None]:
    thresholds, enabled = gc.get_threshold(), gc.isenabled()
    yield
    gc.unfreeze()
    gc.set_threshold(*thresholds)
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_python_defaults_are_replaced_and_the_start_up_is_frozen() -> None:
    gc.set_threshold(*collecting.PYTHON_DEFAULT_THRESHOLDS)
    gc.unfreeze()
    assert collecting.tune_garbage_collection()
    assert gc.get_threshold() == (collecting.YOUNGEST_GENERATION_THRESHOLD, 10, 10)
    assert gc.get_freeze_count() > 1000  # at least the modules' functions and classes


def test_thresholds_set_by_the_process_itself_are_kept() -> None:
    gc.set_threshold(1234, 5, 6)
    gc.unfreeze()
    assert not collecting.tune_garbage_collection()
    assert gc.get_threshold() == (1234, 5, 6)
    assert gc.get_freeze_count() == 0


def test_a_disabled_collector_stays_as_it_is() -> None:
    gc.set_threshold(*collecting.PYTHON_DEFAULT_THRESHOLDS)
    gc.unfreeze()
    gc.disable()
    assert not collecting.tune_garbage_collection()
    assert not gc.isenabled() and gc.get_freeze_count() == 0
