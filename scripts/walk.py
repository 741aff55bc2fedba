"""
The walk of one watch event through the framework: which of its files the event passes, in what order.

One operator runs in this process under ``sys.setprofile`` against a real API
server (``$KUBECONFIG``); once it is idle, one object is created, and the calls
to the framework's own functions are recorded while that object's first watch
event is carried to the create handler and the handler's result is patched::

    python scripts/walk.py trace [--posting default|off] [--list] [--json FILE]

(``trace`` expects the CRD of ``examples/crd.yaml`` in the cluster; ``compare``
applies it. ``kubectl`` is taken from ``PATH`` unless ``--kubectl`` names one.)

The same file is the operator for every framework it runs with: whichever
``kopf`` the interpreter imports is walked (ours with ``kopf_client``, or
upstream Kopf). ``compare`` runs ``trace`` with each given interpreter and
prints one table::

    python scripts/walk.py compare --side ours=PYTHON --side kopf-1.45.2=/tmp/kopf145/bin/python

The walk, defined the same for every framework:

* **Start**: the object's decoded watch event (``{'type': 'ADDED', 'object': ...}``)
  is returned by the function that decoded it (e.g. ``json.loads``) into the
  framework. The framework's function that receives it is the first stop.
* **End**: the object patched with the handler's result (``status.create_fn``)
  is returned by the decoding of a PATCH response: the result is on the server.
* **Whose calls**: those of the task that reads the watch stream, until it asks
  the stream for the next event (the innermost generator that yielded this
  event is resumed); those of the tasks created meanwhile, by whichever task
  (the object's worker: a scheduler's task may spawn it); and those of the tasks
  that these tasks create later. Other tasks (e.g. the stream's next read, other
  streams, the sender of k8s-events, peering) and callbacks outside any task are
  not followed.
* **A call**: a new frame of a function defined in the framework's files
  (``kopf``, and ``kopf_client`` where installed); the resumption of a
  suspended coroutine or generator is not a call.
* **A stop**: consecutive calls in one file are one stop.
* **A return to a file already left**: a stop in a file that an earlier stop was in.

The operator is the same for every framework: one synchronous create handler
that returns a result; cluster-wide, standalone (no peering), logging at the
informational level as ``kopf run`` does by default, the settings' defaults
otherwise, except ``--posting off`` (``settings.posting.enabled = False``).
"""
from __future__ import annotations

import argparse
import asyncio
import collections
import dataclasses
import dis
import importlib.metadata
import importlib.util
import inspect
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import types
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

NAMESPACE = 'default'
OBJECT_NAME = 'walk-example'
RESULT = {'message': 'hello world'}
MANIFEST = json.dumps({
    'apiVersion': 'kopf.dev/v1', 'kind': 'KopfExample',
    'metadata': {'name': OBJECT_NAME, 'namespace': NAMESPACE},
    'spec': {'field': 'value', 'items': ['item1', 'item2']},
})
FRAMEWORK_PACKAGES = ('kopf', 'kopf_client')  # those of them that are installed
CRD_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'examples', 'crd.yaml')

_SUSPENDABLE = inspect.CO_GENERATOR | inspect.CO_COROUTINE | inspect.CO_ASYNC_GENERATOR | inspect.CO_ITERABLE_COROUTINE
_GENERATORS = inspect.CO_GENERATOR | inspect.CO_ASYNC_GENERATOR
_RESUME = dis.opmap.get('RESUME')  # 3.11+: its argument is 0 only at a function's start


@dataclasses.dataclass(frozen=True)
class Call:
    file: str  # relative to the packages' directory, e.g. kopf/_core/reactor/queueing.py
    function: str
    task: str


@dataclasses.dataclass
class Stop:
    file: str
    functions: List[str]
    tasks: List[str]


def is_fresh_call(frame: types.FrameType) -> bool:
    """Whether a profiler's ``call`` is a new call, not the resumption of a suspended coroutine or generator."""
    code = frame.f_code
    if not code.co_flags & _SUSPENDABLE:
        return True
    if _RESUME is None:  # before 3.11: a new frame has not executed any instruction yet
        return frame.f_lasti < 0
    raw = code.co_code
    return raw[frame.f_lasti] == _RESUME and raw[frame.f_lasti + 1] == 0


def _nested(data: Any, *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


class Recorder:
    """
    The profiler's callback: waits for the object's event, then records the walk until its end.

    It runs for every call and return of the operator's thread, so the cheap checks go first.
    """

    def __init__(self, *, name: str, roots: Sequence[str]) -> None:
        self.name = name
        self.roots = tuple(os.path.join(root, '') for root in roots)
        self.calls: List[Call] = []
        self.marks: List[Tuple[int, str]] = []  # (the number of calls before it, what happened)
        self.started = False
        self.finished = False
        self._uid: Optional[str] = None
        self._stream_task: Optional[asyncio.Task[Any]] = None
        self._stream_open = False  # whether the stream's task is still carrying the event
        self._boundary: Optional[types.FrameType] = None  # resumed when the next event is asked for
        self._old_tasks: set[asyncio.Task[Any]] = set()  # those before the start
        self._walk_tasks: set[asyncio.Task[Any]] = set()  # those carrying the event after the stream's part

    def profile(self, frame: types.FrameType, event: str, arg: Any) -> None:
        if self.finished:
            return
        if event == 'return' and type(arg) is dict:
            if not self.started:
                self._maybe_start(frame, arg)
            elif self._is_result(arg) and self._is_walking(frame):
                self.marks.append((len(self.calls), 'the patched object with the result is received'))
                self.finished = True
        elif event == 'return' and self.started and isinstance(arg, asyncio.Task) and self._is_walking(frame):
            self._walk_tasks.add(arg)  # e.g. from loop.create_task(): a task of the walk creates a task
        elif event == 'call' and self.started:
            if self._is_walking(frame) and is_fresh_call(frame) and frame.f_code.co_filename.startswith(self.roots):
                self._record(frame)

    def mark(self, what: str) -> None:
        """Note where in the walk something happened (e.g. the handler's call, in another thread)."""
        self.marks.append((len(self.calls), what))

    def _maybe_start(self, frame: types.FrameType, arg: Dict[str, Any]) -> None:
        if arg.get('type') != 'ADDED' or _nested(arg, 'object', 'metadata', 'name') != self.name:
            return
        receiver = self._framework_frame(frame.f_back)
        task = asyncio.current_task()
        if receiver is None or task is None:
            return  # decoded by something else than the framework's stream
        self.started = True
        self._uid = _nested(arg, 'object', 'metadata', 'uid')
        self._stream_task, self._stream_open = task, True
        self._old_tasks = set(asyncio.all_tasks())
        self._boundary = self._innermost_generator(receiver)
        self.marks.append((0, 'the watch event is decoded'))
        self._record(receiver)

    def _is_result(self, arg: Dict[str, Any]) -> bool:
        return bool(_nested(arg, 'metadata', 'uid') == self._uid and
                    _nested(arg, 'status', 'create_fn') == RESULT)

    def _is_walking(self, frame: types.FrameType) -> bool:
        """Whether the current task carries the event at this moment (see the module's docstring)."""
        task = asyncio.current_task()
        if task is None:
            return False
        if task is self._stream_task:
            if self._stream_open and frame is self._boundary:
                self._close_stream()
            return self._stream_open
        if self._stream_open:
            return task not in self._old_tasks
        return task in self._walk_tasks

    def _close_stream(self) -> None:
        """
        The stream is asked for its next event: the event is handed over.

        The tasks made meanwhile carry the event on, whoever has made them (e.g. a
        scheduler's own task spawning a worker on the stream's request); later on,
        only the tasks made by the walk's tasks do.
        """
        self._stream_open = False
        self.marks.append((len(self.calls), 'the stream is asked for its next event'))
        self._walk_tasks.update(task for task in asyncio.all_tasks() if task not in self._old_tasks)
        self._old_tasks.clear()

    def _framework_frame(self, frame: Optional[types.FrameType]) -> Optional[types.FrameType]:
        while frame is not None and not frame.f_code.co_filename.startswith(self.roots):
            frame = frame.f_back
        return frame

    def _innermost_generator(self, frame: Optional[types.FrameType]) -> Optional[types.FrameType]:
        while frame is not None and not frame.f_code.co_flags & _GENERATORS:
            frame = frame.f_back
        return frame

    def _record(self, frame: types.FrameType) -> None:
        task = asyncio.current_task()
        self.calls.append(Call(file=self._relative(frame.f_code.co_filename),
                               function=getattr(frame.f_code, 'co_qualname', frame.f_code.co_name),
                               task=task.get_name() if task is not None else '-'))

    def _relative(self, filename: str) -> str:
        for root in self.roots:
            if filename.startswith(root):
                return os.path.join(os.path.basename(os.path.dirname(root)), filename[len(root):])
        return filename


def collapse(calls: Sequence[Call]) -> List[Stop]:
    """Consecutive calls in one file make one stop."""
    stops: List[Stop] = []
    for call in calls:
        if not stops or stops[-1].file != call.file:
            stops.append(Stop(file=call.file, functions=[], tasks=[]))
        stops[-1].functions.append(call.function)
        if call.task not in stops[-1].tasks:
            stops[-1].tasks.append(call.task)
    return stops


ENGINE_FILES = 'kopf/_core/'  # the engine's layers (reactor, engines, actions, intents) in both frameworks


def summarize(calls: Sequence[Call]) -> Dict[str, Any]:
    """The walk's figures: stops, distinct files, returns to a file already left, and by which files."""
    stops = collapse(calls)
    seen: set[str] = set()
    reentries: collections.Counter[str] = collections.Counter()
    for stop in stops:
        if stop.file in seen:
            reentries[stop.file] += 1
        seen.add(stop.file)
    return {
        'calls': len(calls),
        'stops': len(stops),
        'files': len(seen),
        'returns': sum(reentries.values()),
        'reentries': dict(reentries.most_common()),
        'tasks': sorted({call.task for call in calls}),
    }


def views(calls: Sequence[Call]) -> Dict[str, Dict[str, Any]]:
    """
    The walk through all the framework's files, and through the engine's files only.

    The second view leaves out the utilities, structures, settings and the API
    client (``kopf/_cogs``, ``kopf_client``): it shows the engine's own shape,
    which the helpers' small calls (a body's field, a storage key) would hide.
    """
    return {'all': summarize(calls),
            'engine': summarize([call for call in calls if call.file.startswith(ENGINE_FILES)])}


# The operator: the same for every framework (whichever ``kopf`` this interpreter has).

RECORDER: Optional[Recorder] = None


def create_fn(**_: Any) -> Dict[str, str]:
    if RECORDER is not None:
        RECORDER.mark('the create handler is called')
    return dict(RESULT)


def register_handlers(posting: bool) -> None:
    import kopf

    def configure_fn(settings: kopf.OperatorSettings, **_: Any) -> None:
        settings.posting.enabled = posting

    kopf.on.startup()(configure_fn)
    kopf.on.create('kopf.dev', 'v1', 'kopfexamples')(create_fn)


def framework_roots() -> List[str]:
    roots: List[str] = []
    for package in FRAMEWORK_PACKAGES:
        spec = importlib.util.find_spec(package)
        if spec is not None and spec.submodule_search_locations:
            roots.extend(os.path.realpath(path) for path in spec.submodule_search_locations)
    return roots


def framework_version() -> str:
    for distribution in ('kopf-core', 'kopf'):
        try:
            return f'{distribution} {importlib.metadata.version(distribution)}'
        except importlib.metadata.PackageNotFoundError:
            continue
    return 'kopf (unknown version)'


def kubectl(binary: str, *args: str, stdin: Optional[str] = None, check: bool = True) -> str:
    done = subprocess.run([binary, *args], input=stdin, capture_output=True, text=True, timeout=120)
    if check and done.returncode != 0:
        raise SystemExit(f"kubectl {' '.join(args)} failed: {done.stderr.strip()}")
    return done.stdout


def delete_object(binary: str) -> None:
    """Remove the walked object, finalizers included (the operator is gone by then)."""
    where = ['-n', NAMESPACE, f'kopfexample/{OBJECT_NAME}']
    kubectl(binary, 'patch', *where, '--type=merge', '-p', '{"metadata": {"finalizers": null}}', check=False)
    kubectl(binary, 'delete', *where, '--ignore-not-found', '--wait=true', '--timeout=60s')


async def walk_one_event(recorder: Recorder, *, binary: str, settle: float, timeout: float) -> None:
    """Start the operator, wait until it is idle, create the object, record until the walk's end."""
    import kopf

    stop_flag, ready_flag = asyncio.Event(), asyncio.Event()
    operator = asyncio.create_task(kopf.operator(clusterwide=True, standalone=True,
                                                 stop_flag=stop_flag, ready_flag=ready_flag))
    try:
        await asyncio.wait_for(ready_flag.wait(), timeout)
        await asyncio.sleep(settle)  # the initial listing is over, nothing is left to do
        sys.setprofile(recorder.profile)
        try:
            # In a thread, so that no task of this process is made for it during the walk.
            await asyncio.to_thread(kubectl, binary, 'create', '-f', '-', stdin=MANIFEST)
            deadline = asyncio.get_running_loop().time() + timeout
            # Polled, not an asyncio.Event: the profiler's callback must not schedule anything itself.
            while not recorder.finished and asyncio.get_running_loop().time() < deadline:  # noqa: ASYNC110
                await asyncio.sleep(0.05)
        finally:
            sys.setprofile(None)
    finally:
        stop_flag.set()
        await asyncio.wait_for(operator, timeout)
    if not recorder.finished:
        raise SystemExit(f"The walk has not ended within {timeout}s "
                         f"({'started' if recorder.started else 'the event never came'}).")


def trace(args: argparse.Namespace) -> None:
    import kopf

    global RECORDER
    kopf.configure(debug=False, verbose=False)  # as ``kopf run`` without options: the informational level
    register_handlers(posting=args.posting == 'default')
    recorder = RECORDER = Recorder(name=OBJECT_NAME, roots=framework_roots())
    delete_object(args.kubectl)
    try:
        asyncio.run(walk_one_event(recorder, binary=args.kubectl, settle=args.settle, timeout=args.timeout))
    finally:
        delete_object(args.kubectl)
    report = {
        'framework': framework_version(),
        'python': sys.version.split()[0],
        'posting': args.posting,
        'packages': recorder.roots,
        **views(recorder.calls),
        'marks': recorder.marks,
        'walk': [dataclasses.asdict(stop) for stop in collapse(recorder.calls)],
    }
    if args.json:
        with open(args.json, 'w') as file:
            json.dump(report, file, indent=1)
    print(render_summary(report))
    if args.list:
        print(render_walk(report))


def render_summary(report: Mapping[str, Any]) -> str:
    lines = [f"{report['framework']} (Python {report['python']}), posting {report['posting']}: "
             f"{', '.join(report['packages'])}"]
    for view, figures in ((view, report[view]) for view in ('all', 'engine')):
        top = ', '.join(f'{file} {n}' for file, n in list(figures['reentries'].items())[:5])
        lines.append(f"  {view}: {figures['stops']} stops ({figures['calls']} calls) in {figures['files']} files, "
                     f"{figures['returns']} returns to a file already left; most re-entered: {top or 'none'}")
    lines.append(f"  tasks: {', '.join(report['all']['tasks'])}")
    return '\n'.join(lines)


def render_walk(report: Mapping[str, Any]) -> str:
    lines: List[str] = []
    calls = 0
    marks = collections.defaultdict(list)
    for position, what in report['marks']:
        marks[position].append(what)
    for number, stop in enumerate(report['walk'], start=1):
        for position in sorted(p for p in list(marks) if p <= calls):
            lines.extend(f'     -- {what}' for what in marks.pop(position))
        functions = ', '.join(dict.fromkeys(stop['functions']))
        lines.append(f"{number:4d} {stop['file']}: {functions}  [{', '.join(stop['tasks'])}]")
        calls += len(stop['functions'])
    lines.extend(f'     -- {what}' for position in sorted(marks) for what in marks[position])
    return '\n'.join(lines)


def compare(args: argparse.Namespace) -> None:
    """Run ``trace`` with each interpreter and each posting variant; print the table in Markdown."""
    kubectl(args.kubectl, 'apply', '-f', CRD_FILE)
    kubectl(args.kubectl, 'wait', '--for=condition=established', '--timeout=60s', 'crd/kopfexamples.kopf.dev')
    rows = ['| framework | posting | view | stops | calls | files | returns to a file already left '
            '| re-entered most |',
            '|---|---|---|---:|---:|---:|---:|---|']
    with tempfile.TemporaryDirectory() as tmpdir:
        for label, python in (side.split('=', 1) for side in args.side):
            for posting in args.posting:
                report = run_side(args, python=python, posting=posting,
                                  output=os.path.join(tmpdir, f'{label}-{posting}.json'))
                print(render_summary(report), file=sys.stderr)
                for view in ('all', 'engine'):
                    figures = report[view]
                    top = ', '.join(f'`{file}` {n}' for file, n in list(figures['reentries'].items())[:3])
                    rows.append(f"| {label} ({report['framework']}) | {posting} | {view} | {figures['stops']} | "
                                f"{figures['calls']} | {figures['files']} | {figures['returns']} | {top} |")
    print('\n'.join(rows))


def run_side(args: argparse.Namespace, *, python: str, posting: str, output: str) -> Dict[str, Any]:
    """
    Trace with one interpreter (a command line: e.g. ``env PYTHONPATH=... python``) in a process of its own.

    ``$PYTHONPATH`` is not inherited: what one side needs must not leak into the other side's imports.
    """
    env = {name: value for name, value in os.environ.items() if name != 'PYTHONPATH'}
    command = [*shlex.split(python), os.path.abspath(__file__), 'trace', '--posting', posting, '--json', output,
               '--kubectl', args.kubectl, '--settle', str(args.settle), '--timeout', str(args.timeout)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout * 4, env=env)
    if done.returncode != 0:
        raise SystemExit(f"{python} (posting {posting}) failed:\n{done.stdout}{done.stderr[-3000:]}")
    with open(output) as file:
        report: Dict[str, Any] = json.load(file)
    return report


def main(argv: Optional[Sequence[str]] = None) -> None:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument('--kubectl', default=shutil.which('kubectl') or 'kubectl')
    common.add_argument('--settle', type=float, default=3.0, help='seconds to let the operator become idle')
    common.add_argument('--timeout', type=float, default=60.0, help='seconds to wait for each step')
    parser = argparse.ArgumentParser(description=(__doc__ or '').split('\n\n')[0])
    commands = parser.add_subparsers(dest='command', required=True)
    trace_parser = commands.add_parser('trace', parents=[common], help="walk one event through this kopf")
    trace_parser.add_argument('--posting', choices=['default', 'off'], default='default')
    trace_parser.add_argument('--list', action='store_true', help='print every stop of the walk')
    trace_parser.add_argument('--json', help='write the figures and the walk to this file')
    compare_parser = commands.add_parser('compare', parents=[common], help='trace with each interpreter')
    compare_parser.add_argument('--side', action='append', required=True, metavar='LABEL=PYTHON',
                                help='a label and the interpreter (a command line, e.g. env VAR=... python)')
    compare_parser.add_argument('--posting', nargs='+', choices=['default', 'off'], default=['default', 'off'])
    args = parser.parse_args(argv)
    if not os.environ.get('KUBECONFIG'):
        parser.error("$KUBECONFIG is not set: start a cluster, e.g. "
                     "'python -m kopf_testing.controlplane start --state-dir DIR', and export what it prints.")
    if args.command == 'compare':
        if not all('=' in side for side in args.side):
            parser.error("--side takes LABEL=PYTHON, e.g. --side kopf-1.45.2=/tmp/kopf145/bin/python")
        compare(args)
    else:
        trace(args)


if __name__ == '__main__':
    main()
