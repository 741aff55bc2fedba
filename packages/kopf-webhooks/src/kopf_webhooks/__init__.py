"""Admission webhook servers for kopf."""
