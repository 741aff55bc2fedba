"""Daemons and timers: spawned per object, stopped in stages."""
