#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: the conformance suite on NV with each compiler pair, the plugin's tests, and the NV
# benchmark, in one go (under 5 minutes), then a summary. Usage: scripts/gpu_check_nv.sh [python]
set -u
PY=${1:-python3}
cd "$(dirname "$0")/.."
declare -A RES
$PY -m tinygrad --no-check 2>&1 | sed -n '/NV/,+6p'
for cc in NVRTC NVCC PTX; do
  st=$(date +%s)
  NV_CC=$cc TEST_DEVICES=NV REQUIRE_DEVICES=NV timeout 120 $PY -m pytest tests/conformance -q -x -p no:cacheprovider > /tmp/gpu_check_nv_$cc.log 2>&1
  RES[$cc]="rc=$? $(tail -1 /tmp/gpu_check_nv_$cc.log) ($(( $(date +%s) - st ))s)"
done
timeout 60 $PY bench/nv.py > /tmp/gpu_check_nv_bench.log 2>&1; RES[bench]="rc=$?"
echo "==== NV GPU check summary ===="
for k in NVRTC NVCC PTX bench; do echo "$k: ${RES[$k]}"; done
cat /tmp/gpu_check_nv_bench.log
