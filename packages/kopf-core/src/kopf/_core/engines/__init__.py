"""Engines: long-running side activities (authentication, peering, posting)."""
