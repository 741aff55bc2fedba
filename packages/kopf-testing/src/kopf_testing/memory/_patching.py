"""
The two patch formats that the framework uses: JSON merge patch and JSON patch.

JSON patch (RFC 6902, including ``test``) comes from the ``jsonpatch`` library;
merge patch (RFC 7386) is a few lines: ``null`` removes a key, objects merge
recursively, anything else replaces.
"""
import copy
from collections.abc import Mapping, Sequence
from typing import Any

import jsonpatch

from kopf_testing.memory._errors import fail


def merge_patch(target: Any, patch: Any) -> Any:
    if not isinstance(patch, Mapping):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, Mapping) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_patch(target: Mapping[str, Any], operations: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Apply the operations; a failed ``test`` or a bad path is rejected as the API server does (422)."""
    try:
        # jsonpatch (not annotated) applies the operations to a copy of the JSON object, and returns it.
        patch = jsonpatch.JsonPatch([dict(op) for op in operations])
        patched: dict[str, Any] = patch.apply(copy.deepcopy(dict(target)))
        return patched
    except jsonpatch.JsonPatchTestFailed as e:
        fail(422, f'the server rejected our request due to an error in our request: {e}')
    except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as e:
        fail(422, f'the server rejected our request due to an error in our request: {e}')
