"""The waits' timeouts, stretched by ``$KOPF_TESTING_PATIENCE`` for slow or busy machines."""
import pytest

from kopf_testing import poll
from kopf_testing._polling import DEFAULT_TIMEOUT, PATIENCE_VARIABLE, patient


def test_without_the_variable_a_timeout_is_as_given(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(PATIENCE_VARIABLE, raising=False)
    assert patient(30) == 30
    assert patient(DEFAULT_TIMEOUT) == 120


@pytest.mark.parametrize('text, expected', [('2', 60.0), ('0.5', 15.0), ('1', 30.0), ('', 30.0)])
def test_the_variable_multiplies_every_timeout(monkeypatch: pytest.MonkeyPatch, text: str, expected: float) -> None:
    monkeypatch.setenv(PATIENCE_VARIABLE, text)
    assert patient(30) == expected


@pytest.mark.parametrize('text', ['0', '-1', 'slow', 'nan'])
def test_a_factor_that_is_not_a_positive_number_is_refused_with_the_fix(
        monkeypatch: pytest.MonkeyPatch, text: str) -> None:
    monkeypatch.setenv(PATIENCE_VARIABLE, text)
    with pytest.raises(ValueError) as info:
        patient(30)
    assert str(info.value) == (f"$KOPF_TESTING_PATIENCE must be a positive number (a factor for the waits' "
                               f"timeouts), not {text!r}: e.g. KOPF_TESTING_PATIENCE=2, or unset it.")


def test_a_wait_gives_up_after_the_stretched_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(PATIENCE_VARIABLE, '3')

    def never() -> None:
        """the impossible"""

    with pytest.raises(AssertionError) as info:
        poll(never, timeout=0.05, interval=0.01)
    assert str(info.value).startswith("Not reached in 0.15")
    assert 'the impossible' in str(info.value)
