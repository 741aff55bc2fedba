import json

import pytest

from kopf_client import _jsons


def test_ordinary_documents_are_decoded() -> None:
    assert _jsons.loads(b'{"type": "ADDED", "object": {"a": [1, 2.5, null, true, "\\u00e9"]}}') == \
        {'type': 'ADDED', 'object': {'a': [1, 2.5, None, True, 'é']}}


def test_64_bit_integers_are_exact() -> None:
    assert _jsons.loads(b'[9223372036854775807, -9223372036854775808, 18446744073709551615]') == \
        [2**63 - 1, -2**63, 2**64 - 1]


@pytest.mark.parametrize('text', ['{"n": NaN}', '{"n": -Infinity}', '[Infinity]'])
def test_what_the_fast_decoder_refuses_is_decoded_as_the_standard_library_does(text: str) -> None:
    result = _jsons.loads(text.encode())
    expected = json.loads(text)
    assert repr(result) == repr(expected)


def test_invalid_documents_raise_the_standard_value_error() -> None:
    with pytest.raises(ValueError):
        _jsons.loads(b'{"unterminated": ')


@pytest.mark.parametrize('data', [
    {'metadata': {'annotations': {'a': '{"x": 1}'}}, 'spec': [1, 2.5, None, True, 'é']},
    [{'op': 'test', 'path': '/metadata/resourceVersion', 'value': '123'}],
    {1: 'an integer key', None: 'a null key'},
    {'big': 2**70},
])
def test_request_bodies_are_encoded_as_the_standard_library_encodes_them(data: object) -> None:
    assert json.loads(_jsons.dumps(data)) == json.loads(json.dumps(data))


def test_what_cannot_be_encoded_raises_the_standard_type_error() -> None:
    with pytest.raises(TypeError):
        _jsons.dumps({'an object': object()})
