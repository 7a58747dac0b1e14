#!/usr/bin/env bash
# GPU: (1) the packed multi-query layout against the gqa profiles; (2) synthetic-acceptance
# sweeps of the real decoder, DeepSeek-R1-Distill 1.5B drafting for the 32B, held against
# the decoder model's predictions registered without a GPU (bench_synthetic --predict-on
# h100-sxm: benchmarks/results/gpu/synthetic_gpu.registered.json).
# The GPU machines have torch, transformers and NumPy but not pydantic/typer: the wheels
# in .gpu-wheels (cp312, carried with the call) are installed into a scratch folder.
# Make the wheels once on the development machine (ignored by git: name .gpu-wheels in
# the run call's carry):
#   pip download --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
#     --no-deps -d .gpu-wheels pydantic pydantic-core annotated-types typing-extensions \
#     typing-inspection
# (pydantic pins its pydantic-core: check the pair matches).
# OUT=dir benchmarks/gpu/synthetic_and_layout.sh
set -u
: "${OUT:?set OUT}"
pip install -q --no-index --no-deps --target /tmp/pydeps .gpu-wheels/*.whl
export PYTHONPATH=/tmp/pydeps:$PWD
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python -V
  python -c "import torch, transformers, numpy; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__, 'numpy', numpy.__version__)"; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
mkdir -p "$OUT/packed"
for arch in qwen2.5-0.5b qwen2.5-7b qwen2.5-32b; do
  timeout 100 python -m profiler.hardware $arch --device cuda --path graph --layout packed \
    --contexts 1024,4096,16384 --batches 1 --verify-tokens 2,4,8 --verify-batches 1,8 \
    --prefill '' --shared-batches 8,32 --out "$OUT/packed/$arch.graph-packed.json" \
    > "$OUT/packed/$arch.log" 2>&1
  echo "$arch packed rc=$?"; grep -E "^\[" "$OUT/packed/$arch.log" | cut -c1-100
done
timeout ${SYNTH_TIMEOUT:-380} python -m benchmarks.bench_synthetic --device cuda --dtype bfloat16 \
  --target qwen2.5-32b --draft deepseek-r1-distill-qwen-1.5b \
  --registered benchmarks/results/gpu/synthetic_gpu.registered.json \
  --out "$OUT/synthetic_gpu.json" > "$OUT/synthetic.log" 2>&1
echo "synthetic rc=$?"; tail -40 "$OUT/synthetic.log"
ls "$OUT"
