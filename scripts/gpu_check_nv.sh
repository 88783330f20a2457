#!/usr/bin/env bash
# On a machine with an NVIDIA GPU, in one go (under 5 minutes): the device listing, a smoke test of each compiler pair
# against numpy, the conformance suite on NV with each compiler pair (in parallel), and the NV benchmark; then a summary.
# Usage: scripts/gpu_check_nv.sh [python]. Logs go to $LOG_DIR (default /tmp/gpu_check_nv); JOBS workers per suite run;
# SUITES picks the conformance runs (default: NVRTC NVCC PTX PTX_JIT; PTX_JIT is PTX through the driver's JIT, quick mode).
set -u
PY=${1:-python3}
LOG=${LOG_DIR:-/tmp/gpu_check_nv}
JOBS=${JOBS:-4}
mkdir -p "$LOG"
cd "$(dirname "$0")/.."
declare -A RES
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
timeout 120 $PY -m tinygrad > "$LOG/devices.txt" 2>&1
sed -n '/^devices/,/^$/p' "$LOG/devices.txt" | head -12

# smoke: each pair computes against numpy (elementwise, half, a long reduce, matmul), and an impossible allocation is a
# clear MemoryError, before the long suite runs
timeout 150 $PY - > "$LOG/smoke.log" 2>&1 <<'EOF'
import sys; sys.path.insert(0, "scripts")
import numpy as np
from tinygrad import Tensor, dtypes
from tinygrad.device import Device
from gpu_smoke import smoke, rng, a
dev = Device["NV"]
print("NV:", dev.arch, "block_max", dev.block_max, "grid_max", dev.grid_max, "pairs", [p.name for p in dev.compiler_pairs])
h1, h2 = rng.standard_normal((128, 256), dtype=np.float32), rng.standard_normal((256, 64), dtype=np.float32)
def tc(d, dt):   # a matmul the heuristics put on the tensor cores (mma.m16n8k16), against numpy on the same rounded inputs
  x, y = Tensor(h1, device=d).cast(dt).realize(), Tensor(h2, device=d).cast(dt).realize()
  return (x @ y).float().numpy(), x.float().numpy() @ y.float().numpy()
smoke("NV", ["NVRTC", "NVCC", "PTX"], lambda d: {
  "exp_log": (lambda: Tensor(np.abs(a) + 1, device=d).log().exp().numpy(), np.abs(a) + 1, 1e-4),
  "tc_f16": (lambda: tc(d, dtypes.half), None, 1e-2),
  "tc_bf16": (lambda: tc(d, dtypes.bfloat16), None, 3e-2)})
EOF
RES[smoke]="rc=$? $(tail -1 "$LOG/smoke.log")"

# nvcc is a process per kernel (~0.2 s): it gets most of the workers; the driver's own PTX JIT runs the quick suite
SUITES=${SUITES:-NVRTC NVCC PTX PTX_JIT}
for cc in $SUITES; do
  case $cc in NVCC) n=$(( JOBS * 2 ));; PTX_JIT) n=2;; *) n=$JOBS;; esac
  (st=$(date +%s)
   NV_CC=${cc%_JIT} NV_PTX_JIT=$([ $cc = PTX_JIT ] && echo 1 || echo 0) TINYGRAD_CONFORMANCE_QUICK=$([ $cc = PTX_JIT ] && echo 1 || echo 0) \
     TEST_DEVICES=NV REQUIRE_DEVICES=NV timeout 240 $PY -m pytest tests/conformance -n $n -p no:cacheprovider -p no:benchmark \
     > "$LOG/conformance_$cc.log" 2>&1
   echo "rc=$? ($(( $(date +%s) - st ))s)" >> "$LOG/conformance_$cc.log") &
done
wait
for cc in $SUITES; do RES[$cc]="$(tail -1 "$LOG/conformance_$cc.log") $(grep -E '(passed|failed|error)' "$LOG/conformance_$cc.log" | tail -1)"; done

timeout 90 $PY bench/nv.py > "$LOG/bench.log" 2>&1
RES[bench]="rc=$?"
echo "==== NV GPU check summary ===="
for k in smoke $SUITES bench; do echo "$k: ${RES[$k]}"; done
cat "$LOG/smoke.log"
cat "$LOG/bench.log"
for cc in $SUITES; do grep -E '^(FAILED|ERROR)' "$LOG/conformance_$cc.log" | head -15; done
