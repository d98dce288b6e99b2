"""Replays a recorded OpenAI-compatible server (``scripts/record_openai.py``) on 127.0.0.1.

Each POST whose path and JSON body equal a recorded call gets that call's status and response; anything else
gets a 400 naming the path and the first field that differs from the nearest recorded request, so a client
that changed what it sends fails loudly instead of being answered by a stale reply.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

__all__ = ("load_recording", "replaying")


def load_recording(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _first_difference(sent: dict[str, Any], recorded: list[dict[str, Any]]) -> str:
    fields = [sorted(k for k in set(sent) | set(r) if sent.get(k) != r.get(k)) for r in recorded]
    nearest = min(fields, key=len, default=["(nothing recorded)"])
    return ", ".join(nearest[:3])


@contextmanager
def replaying(recording: list[dict[str, Any]]) -> Iterator[str]:
    """Serve ``recording``; yields the base URL (``http://127.0.0.1:PORT/v1``)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            sent = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"null")
            calls = [r for r in recording if r["path"] == self.path]
            match = next((r for r in calls if r["request"] == sent), None)
            if match is None:
                status = 400
                differs = _first_difference(sent, [r["request"] for r in calls])
                message = f"{self.path}: request not in the recording (differs in {differs})"
                data = json.dumps({"object": "error", "message": message}).encode()
            else:
                status, data = match["status"], json.dumps(match["response"]).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    finally:
        server.shutdown()
        server.server_close()
