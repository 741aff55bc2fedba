"""The built-in resources example: ConfigMaps and Pods handled like custom resources."""
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from examples.conftest import ExampleRun

LABELS = {'kopf.dev/example': 'builtins'}


def keys_are(expected: str) -> Any:
    return lambda obj: obj['metadata'].get('annotations', {}).get('kopf.dev/keys') == expected


def test_configmaps_and_pods_are_handled(example: 'ExampleRun') -> None:
    example.run()
    kube = example.kube
    kube.create({'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'settings', 'labels': LABELS},
                 'data': {'b': '2', 'a': '1'}})
    kube.create({'apiVersion': 'v1', 'kind': 'ConfigMap', 'metadata': {'name': 'not-ours'}, 'data': {'x': '0'}})
    kube.wait_for('configmaps', 'settings', keys_are('a,b'))

    kube.patch('configmaps', 'settings', {'data': {'c': '3'}})
    kube.wait_for('configmaps', 'settings', keys_are('a,b,c'))

    kube.create({'apiVersion': 'v1', 'kind': 'Pod', 'metadata': {'name': 'worker', 'labels': LABELS},
                 'spec': {'containers': [{'name': 'main', 'image': 'busybox'}]}})
    example.wait_for(r"A pod with the images \['busybox'\]\.")

    kube.delete('configmaps', 'settings', wait=True)
    kube.delete('pods', 'worker', wait=True)
    example.assert_handled_once('configmap_created', 'configmap_changed/data', 'configmap_deleted', 'pod_created')
    assert 'kopf.dev/keys' not in kube.get('configmaps', 'not-ours')['metadata'].get('annotations', {})
