"""One workload row under one framework, in this process: bench/models.py runs this file with each framework's interpreter.

  python bench/workloads/run_one.py MODULE KEY FRAMEWORK CONFIG_JSON OUT_DIR [--prepare | --first-only]

Writes OUT_DIR/result.json: build_ms (model built and weights loaded), first_ms (the first call: with an empty cache
this is the cold start, with a filled one the warm start), ms (median of the timed calls after warm-up), runs, kernels
(per call, for the tinygrads: GlobalCounters.kernel_count over one steady call), and OUT_DIR/outs.npz (the first
check_calls calls' outputs, read back without pickle). --prepare only runs the module's prepare(config); --first-only
stops after the check calls (the warm-start process)."""
from __future__ import annotations
import json, os, statistics, sys, time
HERE = os.path.dirname(os.path.abspath(__file__))
if sys.path and os.path.abspath(sys.path[0]) == HERE: sys.path.pop(0)   # the folder's modules are imported as workloads.*
sys.path.insert(0, os.path.dirname(HERE))
import numpy as np
import importlib

def main() -> None:
  modname, key, framework, cfg_json, out_dir = sys.argv[1:6]
  flags = set(sys.argv[6:])
  mod = importlib.import_module(f"workloads.{modname}")
  config = json.loads(cfg_json)
  if "--prepare" in flags:
    mod.prepare(config)
    return
  st = time.perf_counter()
  fn = mod.build(framework, config)
  res: dict = {"build_ms": (time.perf_counter() - st) * 1e3}
  outs, times = [], []
  for _ in range(config.get("check_calls", 3)):
    st = time.perf_counter()
    outs.append(fn())
    times.append(time.perf_counter() - st)
  res["first_ms"], res["check_ms"] = times[0] * 1e3, [t * 1e3 for t in times]
  np.savez(os.path.join(out_dir, "outs.npz"), **{f"{i}/{k}": np.asarray(v) for i, o in enumerate(outs) for k, v in o.items()})
  if "--first-only" not in flags:
    runs, budget = config.get("runs", 5), config.get("max_s", 120.0)
    ts: list[float] = []
    t0 = time.perf_counter()
    while len(ts) < runs and (len(ts) < 1 or time.perf_counter() - t0 < budget):
      st = time.perf_counter()
      fn()
      ts.append(time.perf_counter() - st)
    res["ms"], res["runs"], res["all_ms"] = statistics.median(ts) * 1e3, len(ts), [t * 1e3 for t in ts]
    if framework != "torch":
      from tinygrad.helpers import GlobalCounters
      GlobalCounters.reset()
      fn()
      res["kernels"] = GlobalCounters.kernel_count
  with open(os.path.join(out_dir, "result.json"), "w") as f: json.dump(res, f)

if __name__ == "__main__": main()
