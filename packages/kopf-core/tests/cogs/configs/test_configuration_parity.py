"""
The settings of Kopf 1.45.2 with its defaults: queueing (formerly batching),
the watching's chunks, streaming and server-side selectors, the posting's retries and workers.
"""
import dataclasses
import warnings

import pytest

import kopf
from kopf._cogs.configs.configuration import QueueingSettings
from kopf._cogs.configs.selectormaps import SelectorMapping


def test_queueing_defaults() -> None:
    settings = kopf.OperatorSettings()
    assert isinstance(settings.queueing, QueueingSettings)
    assert settings.queueing.worker_limit is None
    assert settings.queueing.idle_timeout == 5.0
    assert settings.queueing.exit_timeout == 2.0
    assert tuple(settings.queueing.error_delays) == (1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 233, 377, 610)
    # Kopf 1.45.2 reads 0.1 and ignores it (no time-based batching); ours reads what it does: no window.
    assert settings.queueing.batch_window == 0.0


def test_queueing_fields_in_kopfs_positional_order() -> None:
    names = [field.name for field in dataclasses.fields(QueueingSettings)]
    assert names == ['worker_limit', 'idle_timeout', 'exit_timeout', 'error_delays', 'batch_window']


def test_batching_is_a_deprecated_alias_of_queueing() -> None:
    settings = kopf.OperatorSettings()
    with pytest.warns(DeprecationWarning, match=r"Batching settings are now queueing settings. "
                                                r"Please rename `settings.batching` -> `settings.queueing`"):
        batching = settings.batching
    assert batching is settings.queueing


def test_batching_alias_writes_through_to_queueing() -> None:
    settings = kopf.OperatorSettings()
    with warnings.catch_warnings():
        warnings.simplefilter('ignore', DeprecationWarning)
        settings.batching.worker_limit = 3
    assert settings.queueing.worker_limit == 3


def test_batching_is_neither_a_constructor_argument_nor_assignable() -> None:
    with pytest.raises(TypeError, match=r"batching"):
        kopf.OperatorSettings(batching=QueueingSettings())  # type: ignore[call-arg]
    with pytest.raises(AttributeError):
        kopf.OperatorSettings().batching = QueueingSettings()  # type: ignore[misc]


def test_watching_defaults() -> None:
    settings = kopf.OperatorSettings()
    assert settings.watching.inactivity_timeout == 70.0
    assert settings.watching.chunk_size is None
    assert settings.watching.initial_streaming is False
    for mapping in (settings.watching.label_selectors,
                    settings.watching.field_selectors,
                    settings.watching.shard_selectors):
        assert isinstance(mapping, SelectorMapping)
        assert len(mapping) == 0


def test_watching_selector_mappings_are_separate_per_setting_and_operator() -> None:
    settings1 = kopf.OperatorSettings()
    settings2 = kopf.OperatorSettings()
    settings1.watching.label_selectors['pods'] = 'a=b'
    assert 'pods' not in settings1.watching.field_selectors
    assert 'pods' not in settings2.watching.label_selectors


def test_watching_selectors_given_as_a_dict_become_a_mapping() -> None:
    settings = kopf.OperatorSettings()
    settings.watching.label_selectors = {'v1/pods': 'a=b'}  # type: ignore[assignment]
    assert isinstance(settings.watching.label_selectors, SelectorMapping)
    assert settings.watching.label_selectors['pods.v1'] == 'a=b'


def test_watching_selectors_given_as_none_become_an_empty_mapping() -> None:
    settings = kopf.OperatorSettings()
    settings.watching.field_selectors = None  # type: ignore[assignment]
    assert isinstance(settings.watching.field_selectors, SelectorMapping)
    assert dict(settings.watching.field_selectors) == {}


def test_watching_selectors_given_as_a_non_mapping_are_refused() -> None:
    settings = kopf.OperatorSettings()
    with pytest.raises(TypeError, match=r"label_selectors must be a mapping of resources to selectors, not list"):
        settings.watching.label_selectors = [('v1/pods', 'a=b')]  # type: ignore[assignment]


def test_posting_defaults() -> None:
    settings = kopf.OperatorSettings()
    assert tuple(settings.posting.default_backoffs) == (1, 1, 2, 3, 5, 8, 13, 21)  # type: ignore[arg-type]
    assert tuple(settings.posting.logging_backoffs) == (1, 1, 2, 3, 5)  # type: ignore[arg-type]
    assert settings.posting.worker_limit is None
    assert settings.posting.idle_timeout == 1.0
    assert settings.posting.enabled is True
    assert settings.posting.loggers is False
