"""Small operators for the integration tests, each configured via environment variables."""
