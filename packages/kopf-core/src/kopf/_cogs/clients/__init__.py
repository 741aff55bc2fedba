"""
The seam between the framework and a Kubernetes API client.

This is NOT a Kubernetes client: it only declares what the framework needs from
one (a typed protocol) and the errors a client raises. The aiohttp-based
implementation lives in the ``kopf-client`` package; any other implementation
plugs in the same way (see ``drivers``).
"""
