"""K8s-events: posted explicitly or from the per-object logs, in batches."""
