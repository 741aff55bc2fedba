"""
Cogs: the framework's building blocks with no I/O and no long-running tasks.

Not the engine and not a Kubernetes client: these are the data structures,
configuration, and the protocol that the engine talks through.
"""
