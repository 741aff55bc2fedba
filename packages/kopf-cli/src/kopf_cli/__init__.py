"""The kopf command line."""
