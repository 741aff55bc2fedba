"""
Kopf 1.45's posting settings on a real API server: failed k8s-event posts retried, then given up.

Inputs: the operator ``operators_src/posting_parity.py``, run as the local control
plane's non-admin user, whose Role in the test's namespace allows handling the
objects but (at first) not creating events there — so every post fails with 403,
as it does in clusters whose RBAC forgets the events. The back-offs come from
``settings.posting.default_backoffs`` / ``logging_backoffs`` and the calls' ``backoffs=``.
Outputs: the operator's log (Kopf's lines for each attempt and for giving up),
the events in the API server, and the times of the attempts.
"""
import contextlib
import datetime
import itertools
import json
import pathlib
import re
from collections.abc import Iterator
from typing import Any, Optional

import pytest

from integration import kubeobjects
from integration.controlplane import NON_ADMIN_USER, Cluster
from integration.operating import OperatorProcess
from kopf_testing import poll

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'posting_parity.py')
READ = ['get', 'list', 'watch']
ATTEMPT = re.compile(r'^\[(\S+ \S+)\] .*Request attempt #(\d+)(?:/(\d+))? failed; (will retry|escalating): '
                     r'POST /api/v1/namespaces/[^/]+/events -> APIForbiddenError\(')

pytestmark = pytest.mark.usefixtures('example_crd')


def grant(cluster: Cluster, namespace: str, *, events: bool) -> None:
    rules: list[dict[str, Any]] = [
        {'apiGroups': ['kopf.dev'], 'resources': ['kopfexamples', 'kopfexamples/status'], 'verbs': [*READ, 'patch']}]
    if events:
        rules.append({'apiGroups': [''], 'resources': ['events'], 'verbs': ['create']})
    cluster.kubectl('apply', '-f', '-', input=json.dumps({
        'apiVersion': 'rbac.authorization.k8s.io/v1', 'kind': 'Role',
        'metadata': {'name': 'operator', 'namespace': namespace}, 'rules': rules}))


@contextlib.contextmanager
def start(cluster: Cluster, namespace: str, tmp_path: pathlib.Path, *, as_user: bool,
          env: Optional[dict[str, str]] = None) -> Iterator[OperatorProcess]:
    env = dict(env or {})
    if as_user:
        if cluster.control_plane is None:
            pytest.fail("This test runs the operator as the local control plane's non-admin user (--cluster=local).")
        cluster.kubectl('create', 'rolebinding', 'operator', '-n', namespace, '--role=operator',
                        f'--user={NON_ADMIN_USER}')
        env['KUBECONFIG'] = str(cluster.control_plane.user_kubeconfig)
    with OperatorProcess([OPERATOR, '-n', namespace, '--verbose', '--standalone'],
                         log_path=tmp_path / 'operator.log', env=env) as process:
        process.wait_for(r"Starting the watch-stream for kopfexamples", timeout=60)
        yield process


@pytest.fixture
def forbidden(cluster: Cluster, namespace: str) -> None:
    grant(cluster, namespace, events=False)


def create(cluster: Cluster, namespace: str, name: str, spec: Optional[dict[str, Any]] = None) -> None:
    kubeobjects.create_object(cluster, namespace, {
        'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': name}, 'spec': spec or {}})


def attempts(log: str) -> list[tuple[datetime.datetime, int, Optional[int], str]]:
    """The failed attempts of posting events: when, which attempt of how many, and what next."""
    result = []
    for line in log.splitlines():
        match = ATTEMPT.match(line)
        if match:
            when = datetime.datetime.fromisoformat(match.group(1).replace(',', '.'))
            total = int(match.group(3)) if match.group(3) else None
            result.append((when, int(match.group(2)), total, match.group(4)))
    return result


def given_up(log: str) -> list[str]:
    return [line for line in log.splitlines() if 'Failed to post an event. Ignoring and continuing.' in line]


def events_of(cluster: Cluster, namespace: str, name: str) -> list[str]:
    output = cluster.kubectl('get', 'events', '-n', namespace, '-o', 'json').stdout
    return sorted(item['reason'] for item in json.loads(output)['items']
                  if item['involvedObject'].get('name') == name and item['source'].get('component') == 'kopf')


@pytest.mark.usefixtures('forbidden')
def test_forbidden_post_is_retried_per_the_default_backoffs_then_given_up(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    env = {'PARITY_DEFAULT_BACKOFFS': '[1, 2]'}
    with start(cluster, namespace, tmp_path, as_user=True, env=env) as operator:
        create(cluster, namespace, 'obj1')
        operator.wait_for(r"Failed to post an event\. Ignoring and continuing\.", timeout=30)
        log = operator.log

    tries = attempts(log)
    assert [(number, total, what) for _, number, total, what in tries] == [
        (1, 3, 'will retry'), (2, 3, 'will retry'), (3, 3, 'escalating')]
    pauses = [(b[0] - a[0]).total_seconds() for a, b in itertools.pairwise(tries)]
    assert 1 <= pauses[0] < 1.9 and 2 <= pauses[1] < 2.9
    [line] = given_up(log)
    assert re.search(r"Failed to post an event\. Ignoring and continuing\. Code: 403\. "
                     r"Message: events is forbidden: User \"user\" cannot create resource \"events\" .*"
                     r"Details: \{.*'kind': 'events'.*\}"
                     r"Event: type='Normal', reason='Explicit-0', message='Explicit event 0 of obj1\.'\.$", line)
    assert 'Traceback' not in log


@pytest.mark.usefixtures('forbidden')
def test_per_call_backoffs_replace_the_default_ones(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    env = {'PARITY_DEFAULT_BACKOFFS': '[30, 30, 30]'}
    with start(cluster, namespace, tmp_path, as_user=True, env=env) as operator:
        create(cluster, namespace, 'obj1', spec={'backoffs': [0.5]})
        operator.wait_for(r"Failed to post an event\. Ignoring and continuing\.", timeout=20)
        log = operator.log
    assert [(number, total, what) for _, number, total, what in attempts(log)] == [
        (1, 2, 'will retry'), (2, 2, 'escalating')]


@pytest.mark.usefixtures('forbidden')
def test_log_messages_are_retried_per_the_logging_backoffs(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    env = {'PARITY_LOGGERS': 'true', 'PARITY_LOGGING_BACKOFFS': '[0.2, 0.2]', 'PARITY_DEFAULT_BACKOFFS': '[]'}
    with start(cluster, namespace, tmp_path, as_user=True, env=env) as operator:
        create(cluster, namespace, 'obj1')
        operator.wait_for(r"Handling cycle is finished", timeout=30)
        operator.wait_for(r"Failed to post an event.*reason='Logging'.*All handlers succeeded for creation",
                          timeout=30)
        log = operator.log
    logged = [line for line in given_up(log) if "reason='Logging'" in line]
    explicit = [line for line in given_up(log) if "reason='Explicit-0'" in line]
    assert len(logged) >= 4 and len(explicit) == 1  # the handler's message and the framework's own
    outcomes = [(number, total) for _, number, total, what in attempts(log) if what == 'escalating']
    assert sorted(set(outcomes)) == [(1, 1), (3, 3)]  # the explicit event: no retries; the logged: 2
    assert outcomes.count((3, 3)) == len(logged)


@pytest.mark.usefixtures('forbidden')
def test_a_post_allowed_while_retrying_succeeds(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    env = {'PARITY_DEFAULT_BACKOFFS': '[3, 3, 3, 3, 3, 3, 3, 3, 3, 3]'}
    with start(cluster, namespace, tmp_path, as_user=True, env=env) as operator:
        create(cluster, namespace, 'obj1')
        operator.wait_for(r"Request attempt #1/11 failed; will retry: POST .*/events", timeout=20)
        grant(cluster, namespace, events=True)
        reasons = poll(lambda: events_of(cluster, namespace, 'obj1') or None, timeout=40)
        log = operator.log
    assert reasons == ['Explicit-0']
    assert given_up(log) == []
    assert re.search(r"Request attempt #\d+/11 succeeded: POST .*/events", log)


def test_worker_limit_of_one_still_posts_every_event(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    env = {'PARITY_WORKER_LIMIT': '1', 'PARITY_IDLE_TIMEOUT': '0.2'}
    names = [f'obj{i}' for i in range(4)]
    with start(cluster, namespace, tmp_path, as_user=False, env=env):
        for name in names:
            create(cluster, namespace, name, spec={'events': 3})
        expected = ['Explicit-0', 'Explicit-1', 'Explicit-2']

        def all_posted() -> Optional[dict[str, list[str]]]:
            seen = {name: events_of(cluster, namespace, name) for name in names}
            return seen if all(reasons == expected for reasons in seen.values()) else None
        posted = poll(all_posted, timeout=40)
    assert posted == {name: expected for name in names}


def test_idle_workers_exit_and_objects_get_new_ones(
        cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    # One worker at a time, idling out quickly: each object's events need a new worker.
    env = {'PARITY_WORKER_LIMIT': '1', 'PARITY_IDLE_TIMEOUT': '0.1'}
    with start(cluster, namespace, tmp_path, as_user=False, env=env):
        create(cluster, namespace, 'obj1')
        poll(lambda: events_of(cluster, namespace, 'obj1') or None, timeout=30)
        create(cluster, namespace, 'obj2')
        assert poll(lambda: events_of(cluster, namespace, 'obj2') or None, timeout=30) == ['Explicit-0']

