"""
An operator with its tests next to it: greetings for KopfExample objects.

On creation, the object gets a greeting in its status; when its ``spec.name``
changes, the greeting follows; when it is deleted, the operator says goodbye
before the object goes (its finalizer holds the object until then).
Objects labelled ``greet: loudly`` are greeted in capitals.

The tests (``test_greeter.py``) run unchanged on the in-memory API and on a real
Kubernetes API server::

    pytest examples/09-testing --kopf-cluster=memory   # no cluster, under a second
    pytest examples/09-testing --kopf-cluster=local    # the local control plane
"""
from collections.abc import Mapping
from typing import Any

import kopf


def greeting(name: str, *, loudly: bool) -> str:
    text = f'Hello, {name}!'
    return text.upper() if loudly else text


@kopf.on.create('kopf.dev', 'v1', 'kopfexamples')
@kopf.on.field('kopf.dev', 'v1', 'kopfexamples', field='spec.name')
def greet(spec: kopf.Spec, labels: Mapping[str, str], patch: kopf.Patch, logger: kopf.ObjectLogger, **_: Any) -> None:
    text = greeting(spec.get('name', 'world'), loudly=labels.get('greet') == 'loudly')
    patch.status['greeting'] = text
    logger.info(f'Greeted: {text}')


@kopf.on.delete('kopf.dev', 'v1', 'kopfexamples')
def say_goodbye(spec: kopf.Spec, logger: kopf.ObjectLogger, **_: Any) -> None:
    logger.info(f"Goodbye, {spec.get('name', 'world')}!")
