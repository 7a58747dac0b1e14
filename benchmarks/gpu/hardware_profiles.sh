#!/usr/bin/env bash
# GPU run of `profile hardware` (python -m profiler.hardware: torch and transformers only,
# as on the lent GPU machines, which have no pydantic or NumPy).  Usage:
#   OUT=dir benchmarks/gpu/hardware_profiles.sh ARCH [ARCH ...]
# Writes OUT/ARCH.graph.json (CUDA-graph path, the full grid) per architecture, and for
# ARCH in $EAGER_ARCHS the transformers-eager contrast OUT/ARCH.transformers.json.
set -u
: "${OUT:?set OUT}"
{ nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv; python -V
  python -c "import torch, transformers; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'transformers', transformers.__version__)"; } > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
for arch in "$@"; do
  python -m profiler.hardware "$arch" --device cuda --dtype bfloat16 --path graph \
    --out "$OUT/$arch.graph.json" > "$OUT/$arch.graph.log" 2>&1
  echo "$arch graph rc=$? $(tail -1 "$OUT/$arch.graph.log")"
  case " ${EAGER_ARCHS:-} " in *" $arch "*)
    python -m profiler.hardware "$arch" --device cuda --dtype bfloat16 --path transformers \
      --contexts 1024 --batches 1,4,16,64 --verify-tokens 4 --verify-batches 1 --prefill 512 \
      --shared-batches "" --repeats 10 --out "$OUT/$arch.transformers.json" \
      > "$OUT/$arch.transformers.log" 2>&1
    echo "$arch transformers rc=$? $(tail -1 "$OUT/$arch.transformers.log")";;
  esac
done
