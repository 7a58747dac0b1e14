#!/usr/bin/env bash
# Does the GPU path run from what a lent GPU machine has?  Those machines have torch,
# transformers and NumPy and no network; the GPU scripts add only the wheels of
# benchmarks/gpu/wheels.txt, installed into a scratch folder on PYTHONPATH.  This check
# rebuilds that on the development machine's CPU: a fresh virtual environment with
# torch (pinned), transformers and NumPy alone, the same wheels for this Python, and then
# every command the GPU scripts run, on tiny random-weight architectures on the CPU:
# profile hardware (the packed layout; transformers' static cache), a registration
# (--predict-on) on the laws and on the sweep's draws (--drawn), a synthetic sweep held
# against both and registered from its first pass, with continuous batching, the
# forward audit, and the transformers engine's decode paths.  A missing import fails it.
#   bash benchmarks/gpu/bare_check.sh            # about 3 minutes after the install
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PY=${PY:-python3}
WORK=${WORK:-$(mktemp -d)}
TORCH=${TORCH:-torch==2.13.0}
cd "$ROOT"
if [ ! -x "$WORK/venv/bin/python" ]; then
  "$PY" -m venv "$WORK/venv"
  "$WORK/venv/bin/pip" install -q "$TORCH" numpy transformers
fi
PYV=$("$WORK/venv/bin/python" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
rm -rf "$WORK/wheels" "$WORK/pydeps" "$WORK"/sweep*.json  # a registration is never overwritten
bash benchmarks/gpu/wheels.sh "$PYV" "$WORK/wheels" > /dev/null
"$WORK/venv/bin/pip" install -q --no-index --no-deps --target "$WORK/pydeps" "$WORK"/wheels/*.whl
export PYTHONPATH="$WORK/pydeps:$ROOT"
py="$WORK/venv/bin/python"
"$py" -c "import torch, transformers, numpy; print('bare:', 'torch', torch.__version__, 'transformers', transformers.__version__, 'numpy', numpy.__version__)"
cat > "$WORK/tiny.json" <<'JSON'
{"model_type": "qwen2", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
 "num_attention_heads": 4, "num_key_value_heads": 2, "vocab_size": 512}
JSON
sed 's/"num_hidden_layers": 2/"num_hidden_layers": 1/' "$WORK/tiny.json" > "$WORK/tiny1.json"
run() { echo "+ $*"; "$@" > "$WORK/last.log" 2>&1 || { cat "$WORK/last.log"; exit 1; }; tail -3 "$WORK/last.log"; }
run "$py" -m profiler.hardware "$WORK/tiny.json" --device cpu --path eager --layout packed \
  --contexts 64,128 --batches 1 --verify-tokens 2,4 --verify-batches 1,2 --prefill '' \
  --shared-batches 2 --repeats 2 --out "$WORK/tiny.packed.json"
# transformers' own model on its StaticCache (on the GPU: --path transformers-graph)
run "$py" -m profiler.hardware "$WORK/tiny.json" --device cpu --path transformers-static \
  --contexts 64 --batches 1,2 --verify-tokens 4 --verify-batches 1 --prefill 16 \
  --shared-batches '' --repeats 2 --out "$WORK/tiny.transformers-static.json"
# the transformers engine's decode paths on a random-weight folder (PARTS=hfpaths)
run "$py" -m benchmarks.bench_hf_paths --arch "$WORK/tiny.json" --batches 1 --tokens 8 \
  --repeats 1 --out "$WORK/hf_paths.json"
sweep=(--device cpu --target "$WORK/tiny.json" --draft "$WORK/tiny1.json" --problems 2
       --max-steps 3 --max-step-tokens 16 --profile-repeats 1 --continuous --rounds 1)
# registered for this CPU's preset: a sweep refuses a registration made for another device
cpu=$("$py" -c "from benchmarks.bench_cpu_costmodel import this_cpu; print(this_cpu())") \
  || exit 1
run "$py" -m benchmarks.bench_synthetic "${sweep[@]}" --predict-on "$cpu" \
  --out "$WORK/sweep.json"
# the same registered on the sweep's own draws (--drawn), held beside it as the GPU
# script holds NAME_drawn.registered.json
run "$py" -m benchmarks.bench_synthetic "${sweep[@]}" --predict-on "$cpu" --drawn \
  --out "$WORK/sweep_drawn.json"
run "$py" -m benchmarks.bench_synthetic "${sweep[@]}" \
  --registered "$WORK/sweep.registered.json" "$WORK/sweep_drawn.registered.json" \
  --register-first-pass --out "$WORK/sweep.json"
run "$py" -m benchmarks.bench_schedule_audit --device cpu --target "$WORK/tiny.json" \
  --draft "$WORK/tiny1.json" --problems 2 --max-steps 3 --max-step-tokens 16 \
  --profile-repeats 1 --k2 1 --configs "target,sync k1=3 k2=1,async k1=3 k2=1 continuous" \
  --out "$WORK/audit.json"
echo "bare check passed ($WORK)"
