"""Helper for the SIGKILL test: run 40 deterministic records (concurrency 4) into the path given in argv.

Usage: ``python _killable_run.py OUT_PATH`` -- results depend only on the record id, so a run that was killed
and resumed must produce exactly the lines of a clean run.
"""

from __future__ import annotations

import asyncio
import sys
import zlib
from pathlib import Path

from pydantic import BaseModel

from evigraph.evaluation.runner import run_records

N = 40


class Result(BaseModel):
    id: str
    value: int
    error: str | None = None


def expected(record_id: str) -> Result:
    """The result of ``record_id`` (a failed run for every 7th, to exercise ``error`` too)."""
    number = int(record_id[1:])
    return Result(id=record_id, value=number * number, error="boom" if number % 7 == 3 else None)


async def run_one(record_id: str) -> Result:
    # 0.05-0.1 s, deterministic per id, so completion order varies but content does not.
    await asyncio.sleep(0.05 + (zlib.crc32(record_id.encode()) % 50) / 1000)
    return expected(record_id)


def main() -> None:
    items = [f"r{i:03d}" for i in range(N)]
    summary = asyncio.run(
        run_records(items, run_one, id_of=lambda x: x, out_path=Path(sys.argv[1]), concurrency=4, progress=False)
    )
    print(summary.model_dump_json())


if __name__ == "__main__":
    main()
