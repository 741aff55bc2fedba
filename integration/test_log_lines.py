"""
The log lines of one operator's life under upstream Kopf and under ours, compared.

Inputs: one operator source (``operators_src/log_lines.py``), run by upstream Kopf
(its own virtual environment, ``integration.upstream``) and by ours, each through
the same lifecycle: start, create an object, update its field, delete it, stop
(Ctrl-C). Outputs: the two logs, reduced to their messages (no timestamps, no
logger names, no object dumps, the namespace replaced). Users' tests and
Kopf's own end-to-end tests wait for these lines, so they must be the same;
every remaining difference is listed below with its reason.
"""
import json
import pathlib
import re

import pytest

from integration.controlplane import Cluster
from integration.kubeobjects import FINISHED
from integration.operating import OperatorProcess
from integration.upstream import UpstreamOperatorProcess, ensure_upstream

OPERATOR = str(pathlib.Path(__file__).parent / 'operators_src' / 'log_lines.py')

# The environments differ: upstream Kopf's own virtual environment has only Kopf installed, so its
# default login is the kubeconfig one; ours has pykube-ng and kubernetes (as many operators' images
# do), so their logins run instead, as Kopf's own would with them installed.
LOGIN_ENVIRONMENT = "the login libraries installed differ between the two environments"

ONLY_UPSTREAM = {
    "DEBUG Activity 'login_with_kubeconfig' is invoked.": LOGIN_ENVIRONMENT,
    "INFO Activity 'login_with_kubeconfig' succeeded.": LOGIN_ENVIRONMENT,
    "DEBUG Admission insights chain is cancelled.": "ours runs no admission tasks without admission configured",
    "DEBUG Admission mutating configuration manager is cancelled.": "ditto",
    "DEBUG Admission validating configuration manager is cancelled.": "ditto",
    "DEBUG Admission webhook server is cancelled.": "ditto",
    "DEBUG Daemon killer is cancelled.": "ours stops the daemons in the exit sequence itself, in no task of its own",
    "DEBUG Namespace observer is cancelled.":
        "with exact namespace names (-n NS), ours does not watch the namespaces: nothing to match",
    "DEBUG Starting the watch-stream for namespaces.v1 cluster-wide.": "ditto",
    "DEBUG Stopping the watch-stream for namespaces.v1 cluster-wide.": "ditto",
}
ONLY_OURS = {
    "DEBUG Activity 'login_via_pykube' is invoked.": LOGIN_ENVIRONMENT,
    "DEBUG Activity 'login_via_client' is invoked.": LOGIN_ENVIRONMENT,
    "DEBUG Pykube is configured via kubeconfig file.": LOGIN_ENVIRONMENT,
    "DEBUG Client is configured via kubeconfig file.": LOGIN_ENVIRONMENT,
    "INFO Activity 'login_via_pykube' succeeded.": LOGIN_ENVIRONMENT,
    "INFO Activity 'login_via_client' succeeded.": LOGIN_ENVIRONMENT,
    "INFO [NS/obj] All handlers succeeded for creation.": "the manual shows it (Kopf 1.45 logs it no more)",
    "INFO [NS/obj] All handlers succeeded for update.": "ditto",
    "INFO [NS/obj] All handlers succeeded for deletion.": "ditto",
    "DEBUG Garbage collection is tuned: N objects of the start-up are frozen, the thresholds are (7000, 10, 10).":
        "ours tunes the garbage collector of the process that `kopf run` owns (see docs/migration.md)",
}

# Not compared: whether the API server asks to retry a request depends on the moment (e.g. a CRD's
# storage is still initializing right after its creation), not on the framework; the namespaces
# of other tests being deleted meanwhile are seen only by Kopf, which watches all namespaces (above);
# and whether the framework's own patch arrives as an event of its own or within the batch window
# of the next change (then no "not interested" line) depends on the timing, in both frameworks.
NOT_COMPARED = re.compile(r"^Request attempt #|^Namespace '(?!NS')[^']*' termination pending: "
                          r"|^\[NS/[^\]]+\] Something has changed, but we are not interested")

# "[2026-11-24 04:19:49,235] kopf.reactor.running [DEBUG   ] Starting Kopf 0.1.0."
LINE = re.compile(r'^\[[\d\-: ,]+\] \S+\s+\[(?P<level>\w+)\s*\] (?P<message>.*)$')


pytestmark = pytest.mark.usefixtures('example_crd')


@pytest.fixture(scope='module', autouse=True)
def upstream() -> None:
    ensure_upstream()  # once per session, and outside of the operators' start-up timeouts


def run_lifecycle(process: OperatorProcess, cluster: Cluster, namespace: str) -> str:
    process.start()
    try:
        process.wait_for(r"Starting the watch-stream for kopfexamples\.v1\.kopf\.dev")
        cluster.kubectl('create', '-n', namespace, '-f', '-', input=json.dumps({
            'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample', 'metadata': {'name': 'obj'},
            'spec': {'field': 'a'}}))
        process.wait_for(rf"\[{namespace}/obj\] {FINISHED}")
        cluster.kubectl('patch', '-n', namespace, 'kopfexample', 'obj', '--type=merge',
                        '-p', json.dumps({'spec': {'field': 'b'}}))
        process.wait_for(rf"\[{namespace}/obj\] {FINISHED}", count=2)
        cluster.kubectl('delete', '-n', namespace, 'kopfexample', 'obj', '--wait=false')
        process.wait_for(rf"\[{namespace}/obj\] Deleted, really deleted, and we are notified\.")
    finally:
        process.stop()
    return process.log


def messages(log: str, namespace: str) -> set[str]:
    """The distinct messages: the order of concurrent activities (and repetitions) is not compared."""
    result = set()
    for line in log.splitlines():
        match = LINE.match(line)
        if match is None:
            continue  # continuation lines: tracebacks, multi-line dumps
        message = match['message'].replace(namespace, 'NS')
        message = re.sub(r'([:=]) [\[{(].*$', r'\1 …', message)  # object dumps: diffs, patches, bodies
        message = re.sub(r'^Starting Kopf \S+\.$', 'Starting Kopf VERSION.', message)
        message = re.sub(r'^(Garbage collection is tuned: )\d+', r'\1N', message)  # the count varies
        if not NOT_COMPARED.match(message):
            result.add(f"{match['level']} {message}")
    return result


def test_log_lines_are_those_of_upstream_kopf(cluster: Cluster, namespace: str, tmp_path: pathlib.Path) -> None:
    args = [OPERATOR, '-n', namespace, '--verbose', '--standalone']
    theirs = run_lifecycle(UpstreamOperatorProcess(args, log_path=tmp_path / 'upstream.log'), cluster, namespace)
    ours = run_lifecycle(OperatorProcess(args, log_path=tmp_path / 'ours.log'), cluster, namespace)
    theirs_messages, ours_messages = messages(theirs, namespace), messages(ours, namespace)
    assert "INFO Signal SIGINT is received. Operator is stopping." in theirs_messages & ours_messages
    assert "DEBUG Root tasks are stopped: finishing normally; tasks left: set()" in theirs_messages & ours_messages
    assert sorted(theirs_messages - ours_messages) == sorted(ONLY_UPSTREAM)
    assert sorted(ours_messages - theirs_messages) == sorted(ONLY_OURS)
