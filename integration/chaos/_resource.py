"""The custom resource of the soak, shared by the operator and the harness."""
GROUP, VERSION, PLURAL, KIND = 'chaos.kopf.dev', 'v1', 'soakobjects', 'SoakObject'
