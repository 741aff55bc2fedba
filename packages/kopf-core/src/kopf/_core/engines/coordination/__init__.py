"""Coordination of replicas: peering, leader election, sharding, and the Leases behind them."""
