"""Data structures: bodies, patches, diffs, references, credentials."""
