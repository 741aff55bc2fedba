"""Actions: executing handlers, tracking their progress, applying patches."""
