"""
Put first on an operator's import path, this makes ``import uvloop`` fail as if it were not installed.

``kopf run`` (ours and upstream's) uses uvloop when it can import it; the
benchmarks' rows "without uvloop" hide it this way from both sides alike,
whatever their environments have installed.
"""
raise ImportError('uvloop is hidden from this operator by the benchmarks (their asyncio rows)')
