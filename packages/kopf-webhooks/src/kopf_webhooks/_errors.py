"""Errors of the webhook servers & tunnels themselves (not of the admission handlers)."""


class MissingDependencyError(ImportError):
    """
    An optional dependency is needed for the requested mode, but not installed.

    It is raised at the operator's startup rather than at the first admission
    request, and it says which extra to install or which mode to use instead.
    """
