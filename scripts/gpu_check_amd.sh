#!/usr/bin/env bash
# On a machine with an AMD GPU (ROCm installed), in one go (under 5 minutes): the device listing, what the HIP runtime
# reports (name, gfx target, limits: checks the attribute numbering), a smoke test of each compiler pair against numpy
# (tensor-core matmuls included, with the WMMA uops counted: RDNA3 WMMA / CDNA MFMA must really be used),
# the conformance suite on AMD with each pair (in parallel), the plugin's own tests, and the AMD benchmark; then a summary.
# Usage: scripts/gpu_check_amd.sh [python]. Logs go to $LOG_DIR (default /tmp/gpu_check_amd); JOBS workers per suite run.
set -u
PY=${1:-python3}
LOG=${LOG_DIR:-/tmp/gpu_check_amd}
JOBS=${JOBS:-4}
mkdir -p "$LOG"
cd "$(dirname "$0")/.."
declare -A RES
command -v rocm-smi >/dev/null && rocm-smi --showproductname 2>/dev/null | grep -E "GPU|Card" | head -4
timeout 120 $PY -m tinygrad > "$LOG/devices.txt" 2>&1
sed -n '/^devices/,/^$/p' "$LOG/devices.txt" | head -12

# smoke: what the runtime reports, then each pair computes against numpy (elementwise, half, a long reduce, matmul,
# transcendentals), and an impossible allocation is a clear MemoryError, before the long suite runs
timeout 180 $PY - > "$LOG/smoke.log" 2>&1 <<'PYEOF'
import sys; sys.path.insert(0, "scripts")
import numpy as np
from tinygrad import Tensor, dtypes
from tinygrad.device import Device
from gpu_smoke import smoke, rng, a
dev = Device["AMD"]
print("AMD:", dev.description, "block_max", dev.block_max, "threads_max", dev.threads_max, "grid_max", dev.grid_max,
      "shared", dev.renderer.shared_max, "pairs", [p.name for p in dev.compiler_pairs])
from tinygrad_amd.runtime import ATTR
warp = dev._attr(ATTR["warp_size"])
print("warp size attribute:", warp, "(expected", dev.renderer.wave, ")", "OK" if warp == dev.renderer.wave else "MISMATCH: check ATTR numbering")
hx, hy = rng.standard_normal((4, 128, 96)).astype(np.float16), rng.standard_normal((4, 96, 64)).astype(np.float16)
smoke("AMD", ["HIP", "LLVM"], lambda d: {
  "bf16": (lambda: (Tensor(a, device=d).cast(dtypes.bfloat16) + 1).float().numpy(), a + 1, 2e-2),
  "exp_log_sin": (lambda: (Tensor(np.abs(a) + 1, device=d).log().exp() + Tensor(a, device=d).sin()).numpy(), np.abs(a) + 1 + np.sin(a), 1e-4),
  "int_div": (lambda: (Tensor(np.arange(-50, 50, dtype=np.int32), device=d) // 7).numpy(), np.arange(-50, 50, dtype=np.int32) // 7, 0),   # Tensor // floors, as Python does
  # tensor cores (WMMA on RDNA3, MFMA on CDNA): half and bfloat16 matmuls, batched, with bias+relu; error relative to |x@y|
  "tc_half": (lambda: ((Tensor(hx, device=d) @ Tensor(hy, device=d)).float() + 1).relu().numpy(), np.maximum(hx.astype(np.float32) @ hy.astype(np.float32) + 1, 0), 2e-3),
  "tc_bf16": (lambda: (Tensor(hx, device=d).cast(dtypes.bfloat16) @ Tensor(hy, device=d).cast(dtypes.bfloat16)).float().numpy(), hx.astype(np.float32) @ hy.astype(np.float32), 1e-2),
}, about=lambda d: f"compiler {type(Device[d].compiler).__name__} {Device[d].compiler.version()}; {len(Device[d].renderer.tensor_cores)} tensor cores for {Device[d].arch}",
   expect_wmma=lambda d: bool(Device[d].renderer.tensor_cores))
PYEOF
RES[smoke]="rc=$? $(tail -1 "$LOG/smoke.log")"

for cc in HIP LLVM; do
  (st=$(date +%s)
   AMD_CC=$cc TEST_DEVICES=AMD REQUIRE_DEVICES=AMD timeout 240 $PY -m pytest tests/conformance -n $JOBS -p no:cacheprovider -p no:benchmark \
     > "$LOG/conformance_$cc.log" 2>&1
   echo "rc=$? ($(( $(date +%s) - st ))s)" >> "$LOG/conformance_$cc.log") &
done
(timeout 240 $PY -m pytest plugins/tinygrad_amd/tests -n 2 -q -p no:cacheprovider > "$LOG/plugin_tests.log" 2>&1; echo "rc=$?" >> "$LOG/plugin_tests.log") &
wait
for cc in HIP LLVM; do RES[$cc]="$(tail -1 "$LOG/conformance_$cc.log") $(grep -E '(passed|failed|error)' "$LOG/conformance_$cc.log" | tail -1)"; done
RES[plugin_tests]="$(tail -1 "$LOG/plugin_tests.log") $(grep -E '(passed|failed|error)' "$LOG/plugin_tests.log" | tail -1)"

timeout 90 $PY bench/amd.py > "$LOG/bench.log" 2>&1
RES[bench]="rc=$?"
echo "==== AMD GPU check summary ===="
for k in smoke HIP LLVM plugin_tests bench; do echo "$k: ${RES[$k]}"; done
cat "$LOG/smoke.log"
cat "$LOG/bench.log"
for cc in HIP LLVM; do grep -E '^(FAILED|ERROR)' "$LOG/conformance_$cc.log" | head -15; done
grep -E '^(FAILED|ERROR)' "$LOG/plugin_tests.log" | head -15
