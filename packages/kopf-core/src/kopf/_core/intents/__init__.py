"""Intents: handlers, causes, filters and the registries that hold them."""
