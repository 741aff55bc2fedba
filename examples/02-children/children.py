"""
Children: a KopfExample owns Pods, and Kubernetes deletes them with it.

``spec.children`` says how many Pods the object wants (1 by default). They are
made from a plain manifest, which ``kopf.adopt()`` completes: an owner reference
to the object (so the garbage collector deletes the Pods with their owner), a
name generated from the owner's, its namespace and its labels. The operator
needs no deletion handler, and therefore puts no finalizer on the object.

The Pods are created with the ``kubernetes`` client (``pip install kubernetes``);
any client will do, the framework only prepares the manifests.
"""
from typing import Any

import kubernetes

import kopf

PARENT_LABEL = 'kopf.dev/parent'


@kopf.on.startup()
def load_credentials(**_: Any) -> None:
    try:
        kubernetes.config.load_incluster_config()  # in a pod of the cluster
    except kubernetes.config.ConfigException:
        kubernetes.config.load_kube_config()  # elsewhere: $KUBECONFIG or ~/.kube/config


def spawn_child(parent: str, namespace: str, logger: kopf.ObjectLogger) -> str:
    pod: dict[str, Any] = {
        'apiVersion': 'v1', 'kind': 'Pod',
        'metadata': {'labels': {PARENT_LABEL: parent}},
        'spec': {'containers': [{'name': 'main', 'image': 'busybox', 'command': ['sleep', '3600']}]},
    }
    kopf.adopt(pod)  # the owner is the object being handled
    created = kubernetes.client.CoreV1Api().create_namespaced_pod(namespace, pod)
    logger.info(f"Created the child pod {created.metadata.name}.")
    return str(created.metadata.name)


@kopf.on.create('kopfexamples')
def create_fn(spec: kopf.Spec, name: str, namespace: str, logger: kopf.ObjectLogger,
              **_: Any) -> dict[str, list[str]]:
    children = [spawn_child(name, namespace, logger) for _ in range(spec.get('children', 1))]
    return {'children': children}  # stored in status.create_fn


@kopf.on.update('kopfexamples', field='spec.children')
def rescale(new: Any, name: str, namespace: str, logger: kopf.ObjectLogger, **_: Any) -> dict[str, list[str]]:
    api = kubernetes.client.CoreV1Api()
    pods = api.list_namespaced_pod(namespace, label_selector=f'{PARENT_LABEL}={name}').items
    wanted = 1 if new is None else int(new)
    children = [str(pod.metadata.name) for pod in pods]
    while len(children) > wanted:
        extra = children.pop()
        api.delete_namespaced_pod(extra, namespace)
        logger.info(f"Deleted the child pod {extra}.")
    while len(children) < wanted:
        children.append(spawn_child(name, namespace, logger))
    return {'children': children}  # stored in status.rescale
