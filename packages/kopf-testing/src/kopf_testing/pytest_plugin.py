"""
The pytest plugin of kopf-testing (enabled when the package is installed).

It only adds fixtures; tests that do not use them are not affected:

- ``kopf_registry``: a fresh, empty registry, made the default for the test
  (so that the handlers decorated in the test land there), restored afterwards.
- ``kopf_runner``: a factory of :class:`KopfRunner` with that registry, e.g.
  ``with kopf_runner(['run', '-A', 'operator.py']) as runner: ...``.
"""
from __future__ import annotations

from typing import Any, Callable, Iterator

import pytest

import kopf
from kopf_testing._runner import KopfRunner


@pytest.fixture
def kopf_registry() -> Iterator[kopf.OperatorRegistry]:
    previous = kopf.get_default_registry()
    registry = kopf.OperatorRegistry()
    kopf.set_default_registry(registry)
    try:
        yield registry
    finally:
        kopf.set_default_registry(previous)


@pytest.fixture
def kopf_runner(kopf_registry: kopf.OperatorRegistry) -> Callable[..., KopfRunner]:
    def make(*args: Any, **kwargs: Any) -> KopfRunner:
        kwargs.setdefault('registry', kopf_registry)
        return KopfRunner(*args, **kwargs)
    return make
