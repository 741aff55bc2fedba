"""Operator settings and the storages of the on-cluster state."""
