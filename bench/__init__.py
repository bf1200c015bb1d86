"""``make bench``: requests/s of the twin's ``GET /api/health`` next to a bare FastAPI endpoint.

Run ``python -m bench --help``. Both servers run in their own subprocess; the load generator
(:mod:`bench.loadgen`) runs in the bench process itself.
"""
