"""Record what an OpenAI-compatible server answers: a proxy on 127.0.0.1 that forwards every POST to the server
and appends ``{"path", "request", "status", "response"}`` (bodies as JSON) to a JSONL file, one line per call.

Used by ``scripts/vllm_smoke.sh`` to capture a real ``vllm serve`` run that ``tests/generators/test_vllm_recording.py``
replays. Stdlib only, so it runs with any Python::

    python scripts/record_openai.py --upstream http://127.0.0.1:8765 --port 8766 --out replies.jsonl
"""

from __future__ import annotations

import argparse
import json
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def serve(upstream: str, port: int, out: Path) -> None:
    lock = threading.Lock()

    class Handler(BaseHTTPRequestHandler):
        def _forward(self, method: str) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else None
            request = urllib.request.Request(
                upstream.rstrip("/") + self.path,
                data=body,
                method=method,
                headers={"Content-Type": self.headers.get("Content-Type", "application/json")},
            )
            try:
                with urllib.request.urlopen(request, timeout=600) as reply:
                    status, data = reply.status, reply.read()
            except urllib.error.HTTPError as error:
                status, data = error.code, error.read()
            if method == "POST":
                record = {
                    "path": self.path,
                    "request": json.loads(body or b"null"),
                    "status": status,
                    "response": json.loads(data),
                }
                with lock, out.open("a", encoding="utf-8") as sink:
                    sink.write(json.dumps(record) + "\n")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_POST(self) -> None:
            self._forward("POST")

        def do_GET(self) -> None:
            self._forward("GET")

        def log_message(self, format: str, *args: object) -> None:
            pass

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--upstream", required=True, help="the server's base URL, e.g. http://127.0.0.1:8765")
    parser.add_argument("--port", type=int, required=True, help="the port this proxy listens on (127.0.0.1)")
    parser.add_argument("--out", type=Path, required=True, help="JSONL file the calls are appended to")
    args = parser.parse_args()
    serve(args.upstream, args.port, args.out)


if __name__ == "__main__":
    main()
