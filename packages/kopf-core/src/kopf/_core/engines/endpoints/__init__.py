"""The operator's own HTTP endpoints: the health probes and the metrics."""
