"""
Benchmarks: this repository's packages side by side with upstream Kopf, on a real API server.

Both sides run the same operator source file (``bench_operator.py``) as a
separate ``kopf run`` process against the local control plane; a third side,
``bare``, is a framework-free controller that makes the fewest requests that
produce the same visible results: it measures what the API server alone allows.
See ``benchmarks/README.md`` for the method and ``python -m benchmarks --help``.
"""
