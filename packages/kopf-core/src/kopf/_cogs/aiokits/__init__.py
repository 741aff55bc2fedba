"""Asyncio primitives that the standard library lacks."""
