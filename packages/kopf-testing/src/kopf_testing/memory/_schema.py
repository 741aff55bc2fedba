"""
A CRD's structural schema, applied as the API server applies it: pruning and types.

Unknown fields are dropped (unless ``x-kubernetes-preserve-unknown-fields``),
values of the wrong type and missing ``required`` fields are rejected (422).
Schemas with other keywords (formats, patterns, defaults, CEL rules, ...) are
refused when the CRD is created: the in-memory API would not enforce them.
"""
from collections.abc import Mapping
from typing import Any

from kopf_testing.memory._errors import fail, unsupported

Schema = Mapping[str, Any]

_SUPPORTED = {'type', 'properties', 'items', 'required', 'description', 'x-kubernetes-preserve-unknown-fields'}
_TYPES: dict[str, tuple[type, ...]] = {
    'object': (dict,), 'array': (list,), 'string': (str,), 'boolean': (bool,),
    'integer': (int,), 'number': (int, float),
}
_ALWAYS_KEPT = ('apiVersion', 'kind', 'metadata')


def check_supported(schema: Schema, path: str = '') -> None:
    """Refuse, at CRD creation, a schema that the in-memory API would not enforce the same way."""
    extra = set(schema) - _SUPPORTED
    if extra:
        unsupported(f'the schema keywords {", ".join(sorted(extra))} (at {path or "the root"} of the CRD schema)')
    for name, sub in schema.get('properties', {}).items():
        check_supported(sub, f'{path}.{name}')
    if 'items' in schema:
        check_supported(schema['items'], f'{path}[]')


def apply_schema(body: dict[str, Any], schema: Schema) -> dict[str, Any]:
    """The body as stored: pruned by the schema, and checked against its types; the root's meta fields stay."""
    meta = {key: body[key] for key in _ALWAYS_KEPT if key in body}
    rest = {key: value for key, value in body.items() if key not in _ALWAYS_KEPT}
    pruned = _apply(rest, schema, '')
    return {**meta, **pruned}


def _apply(value: Any, schema: Schema, path: str) -> Any:
    expected = schema.get('type')
    if expected is not None and not (isinstance(value, _TYPES[expected]) and
                                      not (expected in ('integer', 'number') and isinstance(value, bool))):
        fail(422, f'{path.lstrip(".") or "<root>"}: Invalid value: must be of type {expected}')
    if isinstance(value, dict):
        properties = schema.get('properties', {})
        missing = [name for name in schema.get('required', []) if name not in value]
        if missing:
            fail(422, f'{path.lstrip(".")}.{missing[0]}: Required value'.lstrip('.'))
        keep_unknown = schema.get('x-kubernetes-preserve-unknown-fields', False)
        return {key: _apply(item, properties[key], f'{path}.{key}') if key in properties else item
                for key, item in value.items() if key in properties or keep_unknown}
    if isinstance(value, list) and 'items' in schema:
        return [_apply(item, schema['items'], f'{path}[{i}]') for i, item in enumerate(value)]
    return value


def find_unknown_fields(body: Mapping[str, Any], schema: Schema, path: str = '') -> list[str]:
    """The paths of the fields that the schema would prune (for strict validation, as kubectl asks for)."""
    if not isinstance(body, Mapping) or schema.get('x-kubernetes-preserve-unknown-fields'):
        return []
    properties = schema.get('properties', {})
    unknown: list[str] = []
    for key, value in body.items():
        if not path and key in _ALWAYS_KEPT:
            continue
        if key not in properties:
            unknown.append(f'{path}{key}')
        elif isinstance(value, Mapping):
            unknown.extend(find_unknown_fields(value, properties[key], f'{path}{key}.'))
    return unknown
