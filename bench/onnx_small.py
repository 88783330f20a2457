#!/usr/bin/env python3
"""Small ONNX models through `python -m tinygrad.nn.onnx --benchmark` against onnxruntime (issue 35: within 3x its time per
inference): the test suite's exported models (tests/onnx/test_onnx_models.py's MODELS, a few convs each by default),
exported once with torch, then each run through the CLI in its own process, which checks its outputs against
onnxruntime's and the jitted replays' against the plain run, and prints both times, the ratio and the load.

  nice python bench/onnx_small.py [--models cnn_batchnorm,depthwise_separable] [--runs 300] [--device CPU]
Exits 1 when a model's outputs differ or a run fails."""
from __future__ import annotations
import argparse, os, subprocess, sys, tempfile, warnings
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import ROOT, user_env

def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--models", default="cnn_batchnorm,depthwise_separable", help="comma-separated keys of the tests' MODELS")
  ap.add_argument("--runs", type=int, default=300, help="jitted inferences timed per model (the min and median are printed)")
  ap.add_argument("--device", default="CPU")
  args = ap.parse_args()
  sys.path.insert(0, os.path.join(ROOT, "tests", "onnx"))
  import torch
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    from test_onnx_models import MODELS, export   # (the tests' exporter: TorchScript, opset 17)
  bad = [m for m in args.models.split(",") if m not in MODELS]
  if bad: ap.error(f"unknown model(s) {bad}; valid: {', '.join(MODELS)}")
  failed = False
  print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} cores, niceness {os.nice(0)}")
  with tempfile.TemporaryDirectory(prefix="tg_onnx_small_") as d:
    for name in args.models.split(","):
      torch.manual_seed(0)
      make, shape = MODELS[name]
      path = os.path.join(d, f"{name}.onnx")
      with open(path, "wb") as f: f.write(export(make(), torch.randn(*shape)))
      r = subprocess.run([sys.executable, "-m", "tinygrad.nn.onnx", path, "--device", args.device, "--benchmark", str(args.runs),
                          "--compare-onnxruntime"], capture_output=True, text=True, env=user_env(), cwd=d)
      print(f"{name} (input {shape}):")
      print("  " + "\n  ".join((r.stdout + r.stderr).strip().splitlines()))
      failed |= r.returncode != 0
  print("outputs: " + ("FAILED (see above)" if failed else "all match onnxruntime, replays match the plain runs"))
  return 1 if failed else 0

if __name__ == "__main__": sys.exit(main())
