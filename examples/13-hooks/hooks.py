"""
Activities: the operator's own hooks, around the handling of objects.

- ``on.login``: where the credentials come from. Declaring one replaces the
  framework's own ways (kubeconfig, service account, client libraries); here,
  the same ways, in our order. It runs at the start and again when the API
  server rejects the credentials (401).
- ``on.startup``: before any object is handled: the settings, and the memo that
  every handler gets (each object's ``memo`` is a shallow copy of this one, so
  the containers in it are shared).
- ``on.cleanup``: at the operator's exit, after the handling has stopped.
"""
from typing import Any, Optional

import kopf


@kopf.on.login()
def login_fn(logger: kopf.Logger, **kwargs: Any) -> Optional[kopf.ConnectionInfo]:
    logger.info("Looking for the credentials: the pod's service account, then the kubeconfig.")
    return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)


@kopf.on.startup()
def configure(settings: kopf.OperatorSettings, memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    settings.persistence.finalizer = 'example.kopf.dev/finalizer'
    settings.posting.enabled = False  # no Kubernetes events about the objects
    memo.seen = []  # shared by all objects' memos
    logger.info("Configured.")


@kopf.on.create('kopfexamples')
def create_fn(name: str, memo: kopf.Memo, **_: Any) -> None:
    memo.seen.append(name)


@kopf.on.delete('kopfexamples')
def delete_fn(**_: Any) -> None:
    pass  # only so that the objects get the finalizer


@kopf.on.cleanup()
def cleanup_fn(memo: kopf.Memo, logger: kopf.Logger, **_: Any) -> None:
    logger.info(f"Cleaning up; the objects seen: {memo.seen}.")
