"""
``kopf.__version__``: the installed kopf-core's version, read lazily (not at import).
"""
import importlib.metadata

import pytest

import kopf
from kopf._cogs.helpers import installation


def test_the_version_is_the_installed_distributions() -> None:
    assert kopf.__version__ == importlib.metadata.version('kopf-core')


def test_the_version_is_listed() -> None:
    assert '__version__' in dir(kopf)


def test_a_vendored_copy_without_metadata_has_a_placeholder_version(monkeypatch: pytest.MonkeyPatch) -> None:
    def not_found(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, 'version', not_found)
    assert kopf.__version__ == installation.UNKNOWN_VERSION == '0+unknown'
