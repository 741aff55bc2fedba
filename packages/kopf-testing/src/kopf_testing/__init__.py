"""Testing tools for kopf-based operators."""
