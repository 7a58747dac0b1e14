#!/usr/bin/env bash
# GPU: which SDPA backend the reference decoder's numbers depend on, and how much a draft's
# and a target's decode overlap on one GPU.  OUT=dir benchmarks/gpu/attention_overlap.sh
set -u
: "${OUT:?set OUT}"
small="--contexts 1024,4096 --batches 1,8 --verify-tokens 2 --verify-batches 8 --prefill '' --shared-batches 8 --repeats 10"
for arch in qwen2.5-7b qwen2.5-32b; do
  for att in math flash efficient cudnn; do
    eval python -m profiler.hardware $arch --device cuda --path graph --attention $att $small \
      --out "$OUT/$arch.attention-$att.json" > "$OUT/$arch.attention-$att.log" 2>&1
    echo "$arch $att rc=$?"; grep -E "^\[" "$OUT/$arch.attention-$att.log" | cut -c1-110
  done
done
python -m profiler.hardware deepseek-r1-distill-qwen-32b --device cuda --path graph \
  --contexts 1024,4096,16384 --batches 1 --verify-tokens '' --prefill '' --shared-batches '' \
  --overlap-with deepseek-r1-distill-qwen-1.5b --overlap-batches 1,8 \
  --out "$OUT/overlap-r1-32b-1.5b.json" > "$OUT/overlap.log" 2>&1; echo "overlap rc=$?"
grep overlap "$OUT/overlap.log"
python -m profiler.hardware deepseek-r1-distill-qwen-1.5b --device cuda --path graph \
  --out "$OUT/deepseek-r1-distill-qwen-1.5b.graph.json" > "$OUT/r1-1.5b.log" 2>&1
echo "r1-1.5b rc=$? $(tail -1 "$OUT/r1-1.5b.log")"
