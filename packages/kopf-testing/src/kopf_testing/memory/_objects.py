"""
The in-memory API's objects as the API server forms them: new ones, updates, CRDs, list continuations.

Pure functions of the objects and their resources (no state): the store
(:mod:`kopf_testing.memory._store`) calls them under its lock.
"""
import base64
import binascii
import copy
import datetime
import json
import secrets
import uuid
from typing import Any, Optional

from kopf_testing.memory._errors import fail
from kopf_testing.memory._resources import Served

Object = dict[str, Any]
Key = tuple[str, str, str, str]  # group, plural, namespace ('' if cluster-scoped), name


def describe(served: Served) -> str:
    """The resource as the API server names it in its messages (e.g. ``widgets.kopf.dev``)."""
    r = served.resource
    return f'{r.plural}.{r.group}' if r.group else r.plural


def prepare_new(served: Served, namespace: Optional[str], obj: Object, *, namespace_exists: bool) -> Object:
    """A new object as the API server stores it (names, uid, generation), or the server's refusal."""
    r = served.resource
    if obj.get('kind') != r.kind or obj.get('apiVersion') != r.api_version:
        fail(400, f'the API version and kind in the body ({obj.get("apiVersion")}, {obj.get("kind")}) '
                  f'do not match the resource ({r.api_version}, {r.kind})')
    meta = obj.setdefault('metadata', {})
    if 'resourceVersion' in meta:
        fail(500, 'resourceVersion should not be set on objects to be created', reason='InternalError')
    if r.namespaced:
        if meta.get('namespace', namespace) != namespace:
            fail(400, 'the namespace of the provided object does not match the namespace sent on the request')
        if namespace is not None and not namespace_exists:
            fail(404, f'namespaces "{namespace}" not found', name=namespace, kind='namespaces')
        meta['namespace'] = namespace
    else:
        meta.pop('namespace', None)
    if not meta.get('name'):
        if not meta.get('generateName'):
            fail(422, f'{r.kind}.{r.group} "" is invalid: metadata.name: Required value: '
                      f'name or generateName is required')
        meta['name'] = meta['generateName'] + secrets.token_hex(3)[:5]
    for field in ('deletionTimestamp', 'deletionGracePeriodSeconds', 'uid', 'creationTimestamp', 'generation'):
        meta.pop(field, None)
    meta.update(uid=str(uuid.uuid4()), creationTimestamp=now())
    if served.has_generation:
        meta['generation'] = 1
    if served.has_status:
        obj.pop('status', None)
    if (r.group, r.plural) == ('', 'namespaces'):
        meta.setdefault('labels', {})['kubernetes.io/metadata.name'] = meta['name']
        obj['spec'] = {'finalizers': ['kubernetes']}
        obj['status'] = {'phase': 'Active'}
    return obj


def accept_crd(crd: Object) -> None:
    """The status of a CRD accepted and established (at once, as nothing else can claim its names)."""
    moment = now()
    crd['status'] = {
        'acceptedNames': crd['spec']['names'],
        'storedVersions': [v['name'] for v in crd['spec']['versions'] if v.get('storage')],
        'conditions': [
            {'type': kind, 'status': 'True', 'lastTransitionTime': moment, 'reason': reason, 'message': message}
            for kind, reason, message in [
                ('NamesAccepted', 'NoConflicts', 'no conflicts found'),
                ('Established', 'InitialNamesAccepted', 'the initial names have been accepted'),
            ]],
    }


def keep_what_the_server_owns(served: Served, old: Object, new: Object) -> Object:
    """The new body with what the client cannot change (identity, versions, the status subresource) kept."""
    meta = new['metadata']
    for field in ('uid', 'creationTimestamp', 'name', 'namespace', 'generation', 'resourceVersion',
                  'deletionTimestamp', 'deletionGracePeriodSeconds'):
        if field in old['metadata']:
            meta[field] = old['metadata'][field]
        else:
            meta.pop(field, None)
    for field in ('kind', 'apiVersion'):
        new[field] = old[field]
    if served.has_status:  # the main resource cannot change the status subresource
        if 'status' in old:
            new['status'] = copy.deepcopy(old['status'])
        else:
            new.pop('status', None)
    return new


def make_continue(resource_version: int, key: Key) -> str:
    raw = json.dumps({'rv': resource_version, 'start': list(key)}).encode()
    return base64.urlsafe_b64encode(raw).decode()

def parse_continue(token: str, *, oldest: int) -> tuple[int, Key]:
    try:
        parsed = json.loads(base64.urlsafe_b64decode(token.encode()))
        resource_version, start = int(parsed['rv']), tuple(parsed['start'])
    except (ValueError, KeyError, TypeError, binascii.Error):
        fail(400, 'continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)')
    if resource_version < oldest:
        fail(410, 'The provided continue parameter is too old to display a consistent list result. '
                  'You can start a new list without the continue parameter.', reason='Expired')
    return resource_version, start


def spec_of(obj: Object, served: Served) -> Object:
    """What ``generation`` counts changes of: all but metadata (and status, if it is a subresource)."""
    skipped = {'metadata', 'status'} if served.has_status else {'metadata'}
    return {key: value for key, value in obj.items() if key not in skipped}


def now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
