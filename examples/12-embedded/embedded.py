"""
Embedding: the operator in a thread of an application of our own.

The application starts the operator with ``kopf.run()`` in a thread, with a
stop-flag and a ready-flag, and does its own work in the main thread: here, it
reports the objects that the handlers keep in a shared dict. Ctrl-C (SIGINT)
stops the application, which stops the operator with the flag: signal handlers
can only be installed in the main thread, so the operator does without them.

Only kopf-core and kopf-client are needed: no ``kopf`` command. Run it with::

    python examples/12-embedded/embedded.py NAMESPACE
"""
import logging
import sys
import threading
from typing import Any

import kopf

# Written by the handlers (in the operator's thread), read by the application.
OBJECTS: dict[str, Any] = {}


@kopf.on.create('kopfexamples')
@kopf.on.update('kopfexamples', field='spec.field')
def remember(name: str, spec: kopf.Spec, **_: Any) -> None:
    OBJECTS[name] = spec.get('field')


@kopf.on.delete('kopfexamples')
def forget(name: str, **_: Any) -> None:
    OBJECTS.pop(name, None)


def run_operator(namespace: str, stop: threading.Event, ready: threading.Event) -> None:
    kopf.run(namespaces=[namespace], standalone=True, stop_flag=stop, ready_flag=ready)


def main(namespace: str) -> None:
    kopf.configure(verbose=True)  # the log format of `kopf run`
    logger = logging.getLogger('application')
    stop, ready = threading.Event(), threading.Event()
    thread = threading.Thread(target=run_operator, args=(namespace, stop, ready), name='operator')
    thread.start()
    ready.wait()
    logger.info(f"The application is running; the operator serves {namespace!r}.")
    seen: dict[str, Any] = {}
    try:
        while not stop.wait(0.2):  # the application's own work
            if OBJECTS != seen:
                seen = dict(OBJECTS)
                logger.info(f"The application sees: {seen}")
    except KeyboardInterrupt:
        logger.info("Stopping the operator.")
    finally:
        stop.set()
        thread.join()
    logger.info("The operator has stopped.")


if __name__ == '__main__':
    main(sys.argv[1] if len(sys.argv) > 1 else 'default')
