"""Admission and conversion webhooks: the reviews, their servers, and their configurations."""
