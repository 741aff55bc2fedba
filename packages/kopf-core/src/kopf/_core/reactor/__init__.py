"""The reactor: watching, queueing and processing of the resources' events."""
