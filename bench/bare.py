"""The baseline: a bare FastAPI app with one ``GET /api/health``, served by uvicorn with one worker.

Run as ``python -m bench.bare --port P``; the bench starts it in a subprocess.
"""

from __future__ import annotations

import argparse

import uvicorn
from fastapi import FastAPI

app = FastAPI()


@app.get("/api/health")
async def health() -> dict[str, str]:
    """A small JSON dict, about the size of the twin's health body."""
    return {"status": "ok", "service": "bare", "version": "0"}


def main(argv: list[str] | None = None) -> None:
    """Serve :data:`app` on 127.0.0.1 until SIGINT/SIGTERM."""
    parser = argparse.ArgumentParser(prog="bench.bare", description=__doc__)
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument(
        "--loop", default="auto", choices=("auto", "asyncio", "uvloop"), help="uvicorn's loop"
    )
    parser.add_argument(
        "--http", default="auto", choices=("auto", "h11", "httptools"), help="uvicorn's parser"
    )
    args = parser.parse_args(argv)
    uvicorn.run(
        app, host=args.host, port=args.port, workers=1, access_log=False, log_level="warning",
        loop=args.loop, http=args.http,
    )  # fmt: skip


if __name__ == "__main__":
    main()
