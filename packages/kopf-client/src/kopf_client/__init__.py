"""The aiohttp-based Kubernetes API client for kopf."""
