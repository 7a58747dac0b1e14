#!/usr/bin/env bash
# GPU: (1) the packed multi-query layout against the gqa profiles; (2) synthetic-acceptance
# sweeps of the real decoder, DeepSeek-R1-Distill 1.5B drafting for the 32B, held against
# the decoder model's predictions registered without a GPU (bench_synthetic --predict-on
# h100-sxm: benchmarks/results/gpu/synthetic_gpu.registered.json).
# The GPU machines have torch, transformers and NumPy but not pydantic: the wheels of
# benchmarks/gpu/wheels.txt, for their Python 3.12, are carried with the call in
# .gpu-wheels (ignored by git: name it in the call's carry) and installed into a scratch
# folder. Make them once on the development machine:
#   bash benchmarks/gpu/wheels.sh 3.12 .gpu-wheels
# and check beforehand, on the CPU, that every command below runs from such a bare
# install (tiny architectures): bash benchmarks/gpu/bare_check.sh
# One part per device call (each fits the 600 s a call may run):
#   OUT=dir PARTS=packed benchmarks/gpu/synthetic_and_layout.sh      # ~3-5 min
#   OUT=dir PARTS=synthetic benchmarks/gpu/synthetic_and_layout.sh   # the short sweep
#   OUT=dir PARTS=long benchmarks/gpu/synthetic_and_layout.sh        # prompts of 3000 words,
#                                                                    # one round
#   OUT=dir PARTS=continuous benchmarks/gpu/synthetic_and_layout.sh  # + continuous batching,
#                                                                    # one round (~5 min)
#   OUT=dir PARTS=seed1 benchmarks/gpu/synthetic_and_layout.sh       # the same, another draw:
#            seed 1, 6 problems, registered with the contention the 11-27 runs showed (~7 min;
#            registered for the H100 and, apart, for the H200; registered once more from
#            the run's own first profiling pass before round 1: NAME_first_pass.registered.json)
#   OUT=dir PARTS=seed2 benchmarks/gpu/synthetic_and_layout.sh       # the same, seed 2 (~6.5 min
#            on the H200): registered 2026-12-04 with the contention the seed-1 run's profiles
#            measured on the H200 (target 1.16x, draft 2.61x), for the H100 and the H200, on
#            the laws and on the sweep's draws, before any run of it
#   OUT=dir PARTS=long2 benchmarks/gpu/synthetic_and_layout.sh       # prompts of 3000 words,
#            seed 2, 3 problems, one round, not continuous: registered 2026-12-04 for the
#            H100 and the H200, on the laws and on the draws, the contention priced by the
#            kernels model (costmodel.kernel_wait_contention), before any run of it
#   OUT=dir PARTS=audit benchmarks/gpu/synthetic_and_layout.sh       # the forward audit of
#            the 11-27 runs' draws (seed 0, 3 problems): target, sync, async and continuous
#            async with k2 = 1, every forward timed on the device by CUDA events (~4 min)
#   OUT=dir PARTS=txgraph benchmarks/gpu/synthetic_and_layout.sh     # transformers' own
#            model on its StaticCache captured as CUDA graphs (--path transformers-graph)
#            beside the reference decoder's graphs, 0.5b and 7b at L = 1024, b = 1-32
#            (the shared H100 rows' grid): is the reference decoder a fair proxy (~2 min)
#   OUT=dir PARTS=hfpaths benchmarks/gpu/synthetic_and_layout.sh     # the transformers
#            engine's decode paths (eager, static cache, compiled: CUDA graphs) timed
#            through its own calls, random-weight 0.5b and 7b, b = 1 and 8 (~4-8 min)
#   OUT=dir CALL_S=590 PARTS="seed1 audit" benchmarks/gpu/synthetic_and_layout.sh
#            # both in one call (a session's device time may allow only one): the audit
#            # gets what is left of CALL_S seconds, and with less than AUDIT_MIN_S (150)
#            # left it audits only the target and continuous async, profiled before the
#            # round only (--no-profile-after); under 90 s it is skipped
# Each sweep is held against its registration (made without a GPU, committed before).
# The checkout is more than a device call may send (64 MiB): `bash benchmarks/gpu/travel.sh
# slim` before the calls takes the committed run records and figures out of git's index,
# `bash benchmarks/gpu/travel.sh restore` after them puts them back.
set -u
: "${OUT:?set OUT}"
START=$SECONDS
PARTS=${PARTS:-"packed synthetic"}
ls .gpu-wheels/*.whl > /dev/null 2>&1 || { echo "no .gpu-wheels: run benchmarks/gpu/wheels.sh 3.12 .gpu-wheels and carry it"; exit 2; }
pip install -q --no-index --no-deps --target /tmp/pydeps .gpu-wheels/*.whl
export PYTHONPATH=/tmp/pydeps:$PWD
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python -V
  python -c "import torch, transformers, numpy; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__, 'numpy', numpy.__version__)"; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
# the contention between two graph-replaying streams (measure_contention's CUDA path) on
# tiny shapes first: where it fails, the sweeps measure contention as the runs of
# 2026-11-27 did (eager forwards, --contention-eager) rather than not run at all
CONTENTION=""
timeout 120 python -c "from profiler.engines.synthetic import measure_contention as m
print('graph contention (0.5b beside 0.5b):', m('qwen2.5-0.5b', 'qwen2.5-0.5b', context=256,
      device='cuda', dtype='bfloat16', seconds=0.2, rounds=1))" \
  || { CONTENTION=--contention-eager; echo "graph contention failed: $CONTENTION"; }
# a registration is made for one device preset: NAME on an H100, NAME_h200 on an H200
# (bench_synthetic refuses a registration made for another device)
case $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1) in
  *H200*) SUFFIX=_h200 ;; *) SUFFIX="" ;;
esac
sweep() {  # NAME [bench_synthetic options]: one registered sweep, 1.5B drafting for 32B
  local base=$1 name=$1$SUFFIX; shift
  [ -f "benchmarks/results/gpu/$name.registered.json" ] || {
    echo "$name: no registration benchmarks/results/gpu/$name.registered.json"; return; }
  # the same sweep registered on its own draws (--drawn), held beside it where committed
  local drawn="benchmarks/results/gpu/${base}_drawn$SUFFIX.registered.json"
  [ -f "$drawn" ] || drawn=""
  timeout ${SYNTH_TIMEOUT:-540} python -m benchmarks.bench_synthetic --device cuda $CONTENTION \
    --dtype bfloat16 --target qwen2.5-32b --draft deepseek-r1-distill-qwen-1.5b \
    --registered "benchmarks/results/gpu/$name.registered.json" $drawn \
    --out "$OUT/$name.json" "$@" > "$OUT/$name.log" 2>&1
  echo "$name rc=$?"; tail -40 "$OUT/$name.log"
}
for part in $PARTS; do
  case $part in
    packed)
      mkdir -p "$OUT/packed"
      for arch in qwen2.5-0.5b qwen2.5-7b qwen2.5-32b; do
        timeout 100 python -m profiler.hardware $arch --device cuda --path graph \
          --layout packed --contexts 1024,4096,16384 --batches 1 --verify-tokens 2,4,8 \
          --verify-batches 1,8 --prefill '' --shared-batches 8,32 \
          --out "$OUT/packed/$arch.graph-packed.json" > "$OUT/packed/$arch.log" 2>&1
        echo "$arch packed rc=$?"; grep -E "^\[" "$OUT/packed/$arch.log" | cut -c1-100
      done ;;
    txgraph)
      mkdir -p "$OUT/txgraph"
      for arch in qwen2.5-0.5b qwen2.5-7b; do
        for path in transformers-graph graph; do
          timeout 150 python -m profiler.hardware $arch --device cuda --dtype bfloat16 \
            --path $path --contexts 1024 --batches 1,2,4,8,16,32 --verify-tokens 4 \
            --verify-batches 1 --prefill 256 --shared-batches '' --repeats 10 \
            --out "$OUT/txgraph/$arch.$path.json" > "$OUT/txgraph/$arch.$path.log" 2>&1
          echo "$arch $path rc=$?"; grep -E "^\[" "$OUT/txgraph/$arch.$path.log" | cut -c1-100
        done
      done ;;
    hfpaths)
      # the transformers engine's decode paths (eager, static cache, compiled: CUDA
      # graphs) through its own exact calls, random weights, 0.5b then 7b
      for arch in qwen2.5-0.5b qwen2.5-7b; do
        timeout 240 python -m benchmarks.bench_hf_paths --arch $arch --device cuda \
          --dtype bfloat16 --batches 1,8 --tokens 64 --repeats 5 \
          --out "$OUT/hf_paths_$arch.json" > "$OUT/hf_paths_$arch.log" 2>&1
        echo "hf_paths $arch rc=$?"; tail -12 "$OUT/hf_paths_$arch.log"
      done ;;
    synthetic) sweep synthetic_gpu ;;
    long) sweep synthetic_gpu_long --prompt-words 3000 --rounds 1 ;;  # 2 rounds: > 600 s
    continuous) sweep synthetic_gpu_continuous --continuous --rounds 1 ;;
    seed1) sweep synthetic_gpu_continuous_seed1 --continuous --rounds 1 --seed 1 --problems 6 \
             --register-first-pass ;;  # + priced by its own first pass, before round 1
    seed2) sweep synthetic_gpu_continuous_seed2 --continuous --rounds 1 --seed 2 --problems 6 \
             --register-first-pass ;;  # registered with the H200's graph-on-streams contention
    long2) sweep synthetic_gpu_long_seed2 --prompt-words 3000 --rounds 1 --seed 2 --problems 3 \
             --register-first-pass ;;  # registered with the kernels model's contention
    audit)
      limit=${AUDIT_TIMEOUT:-480}
      configs="target,sync k1=3 k2=1,async k1=3 k2=1,async k1=3 k2=1 continuous"
      after=--profile-after
      if [ -n "${CALL_S:-}" ]; then  # what is left of the call, less a margin to write $OUT
        left=$((CALL_S - (SECONDS - START) - 10))
        [ "$left" -lt "$limit" ] && limit=$left
        [ "$left" -lt "${AUDIT_MIN_S:-150}" ] && {
          configs="target,async k1=3 k2=1 continuous"; after=--no-profile-after; }
        [ "$left" -lt 90 ] && { echo "audit skipped: ${left} s left of CALL_S"; continue; }
      fi
      echo "audit: $configs $after, at most $limit s"
      timeout "$limit" python -m benchmarks.bench_schedule_audit --device cuda \
        $CONTENTION --dtype bfloat16 --target qwen2.5-32b --draft deepseek-r1-distill-qwen-1.5b \
        --problems 3 --seed 0 --k2 1 --configs "$configs" $after \
        --out "$OUT/schedule_audit_gpu.json" > "$OUT/schedule_audit_gpu.log" 2>&1
      echo "audit rc=$?"; tail -40 "$OUT/schedule_audit_gpu.log" ;;
    *) echo "unknown part $part (packed, txgraph, hfpaths, synthetic, long, long2, continuous, seed1, seed2, audit)"
       exit 2 ;;
  esac
done
ls "$OUT"
