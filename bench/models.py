#!/usr/bin/env python3
"""Whole models, measured in one run for ours, public tinygrad 0.14 and torch CPU, outputs checked against torch.

  python bench/models.py [--quick] [--only KEYS] [--frameworks ours,tinygrad,torch] [--tinygrad-venv DIR] [--json PATH]

The workloads are the modules of bench/workloads/ (their interface is in its __init__.py; a new module adds rows). Per
row: the module's prepare() writes random weights and inputs once (our venv); then each framework runs in its own process
(ours and torch in this venv, public tinygrad in its own, created from the local package index if missing): a cold
process with an empty cache directory (first call = compile + run, then the steady-state median after warm-up, and
kernels per call; cold_ms is the median first call of --first-runs such processes), then, for the tinygrads, warm
processes on the filled cache (warm_ms: the median of their first calls). Every framework's first
calls' outputs are compared with torch's: a mismatch is reported and makes the exit status 1 (a wrong fast model is a
failure). Figures are printed beside the targets of bench/TARGETS.md's "models" section and written as JSON.
OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE are unset for torch's side (as for numpy's in bench/run.py)."""
from __future__ import annotations
import argparse, json, os, statistics, subprocess, sys, tempfile, time
from typing import Any
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import user_env, ensure_tinygrad_venv, ROOT
from run import check_target
import numpy as np
import workloads

TARGETS_MD = os.path.join(ROOT, "bench", "TARGETS.md")
RUN_ONE = os.path.join(HERE, "workloads", "run_one.py")
FIGURES = ("ms", "cold_ms", "warm_ms", "kernels")

def read_model_targets(path: str = TARGETS_MD) -> list[dict[str, str]]:
  """The rows (key, figure, target) of the table under TARGETS.md's '## models' heading; key '*' means every row."""
  rows, inside = [], False
  with open(path) as f:
    for line in f:
      if line.startswith("## "): inside = line[3:].strip().lower().startswith("models")
      cells = [c.strip() for c in line.strip().strip("|").split("|")]
      if inside and line.startswith("|") and len(cells) == 3 and cells[0] != "key" and not cells[0].startswith("-"):
        rows.append(dict(zip(("key", "figure", "target"), cells)))
  return rows

def run_side(python: str, mod: str, key: str, fw: str, cfg: dict, env: dict[str, str], timeout: float, *flags: str) -> dict[str, Any]:
  """Run one row in a fresh process; its result.json plus 'outs' (list of dicts of arrays) or 'error'."""
  with tempfile.TemporaryDirectory(prefix="tg_models_") as out:
    st = time.perf_counter()
    try:
      r = subprocess.run([python, RUN_ONE, mod, key, fw, json.dumps(cfg), out, *flags], capture_output=True, text=True, env=env,
                         timeout=timeout, cwd=tempfile.gettempdir())
    except subprocess.TimeoutExpired: return {"error": f"timed out after {timeout:.0f} s"}
    wall = time.perf_counter() - st
    if r.returncode != 0:
      tail = [ln for ln in r.stderr.strip().splitlines() if ln.strip()][-3:]
      return {"error": " | ".join(tail) or f"exit {r.returncode}"}
    if "--prepare" in flags: return {"wall_s": wall}
    with open(os.path.join(out, "result.json")) as f: res = json.load(f)
    with np.load(os.path.join(out, "outs.npz"), allow_pickle=False) as z:
      calls: dict[int, dict[str, np.ndarray]] = {}
      for name in z.files:
        i, k = name.split("/", 1)
        calls.setdefault(int(i), {})[k] = z[name]
    res["outs"], res["wall_s"] = [calls[i] for i in sorted(calls)], wall
    return res

def fmt(v: float | None, w: int = 10) -> str:
  return f"{'-':>{w}s}" if v is None else f"{v:{w}.0f}" if v >= 1000 else f"{v:{w}.2f}" if v < 10 else f"{v:{w}.1f}"

def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--quick", action="store_true", help="the tiny configs (a smoke run: targets are for the full sizes)")
  ap.add_argument("--only", help="comma-separated row keys or workload module names (default: all)")
  ap.add_argument("--frameworks", default="ours,tinygrad,torch", help="which of ours,tinygrad,torch (torch, the reference, always runs)")
  ap.add_argument("--tinygrad-venv", default=os.path.join(tempfile.gettempdir(), "tinygrad-0.14-venv"),
                  help="the venv of public tinygrad 0.14 (created with pip if missing)")
  ap.add_argument("--device", default="CPU", help="our device (DEV=...), e.g. CPU, CPU:CLANG")
  ap.add_argument("--runs", type=int, default=5, help="timed calls per steady-state median (a row's config may lower it)")
  ap.add_argument("--max-s", type=float, default=120.0, help="stop timing a side's steady state after this many seconds (>= 1 run)")
  ap.add_argument("--first-runs", type=int, default=3, help="cold first calls per side, each a new process on an empty cache, "
                  "and warm ones, each a new process on the first's cache: cold_ms and warm_ms are their medians (one sample swung "
                  "+-20%% with the machine's load, and one warm sample 40%%)")
  ap.add_argument("--json", default=os.path.join(ROOT, "bench", "results", "models.json"), help="where the JSON goes")
  args = ap.parse_args()
  fws = [f for f in ("torch", "ours", "tinygrad") if f == "torch" or f in args.frameworks.split(",")]
  bad_fw = set(args.frameworks.split(",")) - set(workloads.FRAMEWORKS_ALL)
  if bad_fw: ap.error(f"unknown frameworks {sorted(bad_fw)}; valid: {', '.join(workloads.FRAMEWORKS_ALL)}")
  pythons = {"ours": sys.executable, "torch": sys.executable}
  if "tinygrad" in fws:
    try: pythons["tinygrad"] = ensure_tinygrad_venv(args.tinygrad_venv)
    except (subprocess.CalledProcessError, OSError) as e:
      print(f"public tinygrad 0.14 skipped: its venv {args.tinygrad_venv} could not be made ({e})", file=sys.stderr)
      fws.remove("tinygrad")
  mods = workloads.modules()
  only = set(args.only.split(",")) if args.only else None
  rows = [(m, k, dict(cfg)) for m, mod in mods.items() for k, cfg in (mod.QUICK if args.quick else mod.ROWS).items()
          if only is None or k in only or m in only]
  if only and not rows: ap.error(f"--only {args.only}: no such row or module; rows: {', '.join(k for mod in mods.values() for k in mod.ROWS)}")
  targets = read_model_targets()
  timeout = 600.0 if args.quick else 3600.0
  failed, out_rows = False, []
  load_start = os.getloadavg()
  print(f"load average {load_start[0]:.2f}; frameworks {', '.join(fws)}", file=sys.stderr)
  for modname, key, cfg in rows:
    mod = mods[modname]
    with tempfile.TemporaryDirectory(prefix="tg_models_data_") as data, tempfile.TemporaryDirectory(prefix="tg_models_prep_") as pc:
      cfg.update(data=data, runs=min(cfg.get("runs", args.runs), args.runs), max_s=args.max_s)
      prep = run_side(sys.executable, modname, key, "ours", cfg, user_env(DEV=args.device, XDG_CACHE_HOME=pc, CACHEDB=os.path.join(pc, "c.db")), timeout, "--prepare")
      res: dict[str, dict[str, Any]] = {}
      if "error" in prep:
        print(f"{key}: prepare failed: {prep['error']}", file=sys.stderr)
        failed = True
        out_rows.append({"key": key, "title": cfg["title"], "error": prep["error"]})
        continue
      for fw in fws:
        if fw not in getattr(mod, "FRAMEWORKS", workloads.FRAMEWORKS_ALL): continue
        with tempfile.TemporaryDirectory(prefix=f"tg_models_cache_{fw}_") as cache:
          env = user_env(numpy_side=True) if fw == "torch" else user_env(DEV=args.device if fw == "ours" else "CPU", XDG_CACHE_HOME=cache,
                                                                        CACHEDB=os.path.join(cache, "cache.db"))
          # public tinygrad imports its own package, not a source tree on PYTHONPATH (a checkout's env sets it to ours)
          if fw == "tinygrad": env.pop("PYTHONPATH", None)
          r = run_side(pythons[fw], modname, key, fw, cfg, env, timeout)
          colds = [r.get("first_ms")]
          for _ in range(args.first_runs - 1 if "error" not in r else 0):   # the others: only the first call, each on an empty cache
            with tempfile.TemporaryDirectory(prefix=f"tg_models_cold_{fw}_") as c2:
              c = run_side(pythons[fw], modname, key, fw, cfg, {**env, "XDG_CACHE_HOME": c2, "CACHEDB": os.path.join(c2, "cache.db")},
                           timeout, "--first-only")
            colds.append(c.get("first_ms"))
            if "error" in c or (msg := workloads.check(mod, c["outs"], r["outs"], cfg)) is not None:
              r["error"] = f"cold run {len(colds)}: {c.get('error') or 'differs from the first: ' + str(msg)}"
          if "error" not in r: r.update(first_ms=statistics.median(colds), cold_all_ms=colds)
          warms: list[float] = []
          while "error" not in r and fw != "torch" and "warm_error" not in r and len(warms) < args.first_runs:
            w = run_side(pythons[fw], modname, key, fw, cfg, env, timeout, "--first-only")
            warms.append(w.get("first_ms"))
            if "error" in w: r["warm_error"] = w["error"]
            elif (msg := workloads.check(mod, w["outs"], r["outs"], cfg)) is not None: r["warm_error"] = f"warm process differs from cold: {msg}"
          if warms and "warm_error" not in r: r.update(warm_ms=statistics.median(warms), warm_all_ms=warms)
        if "error" not in r: r["cold_ms"] = r.pop("first_ms")
        res[fw] = r
        print(f"{key} {fw}: " + (r["error"] if "error" in r else f"{r['ms']:.1f} ms, cold {r['cold_ms']:.0f} ms" +
              (f", warm {r['warm_ms']:.0f} ms" if r.get("warm_ms") is not None else "")), file=sys.stderr)
    ref = res.get("torch", {}).get("outs")
    for fw, r in res.items():
      if "error" in r: r["check"] = f"did not run: {r['error']}"
      elif ref is None: r["check"] = "torch did not run: no reference"
      else: r["check"] = "ok" if fw == "torch" else (workloads.check(mod, r["outs"], ref, cfg) or r.get("warm_error") or "ok")
      if r["check"] != "ok" and not (fw == "tinygrad" and "error" in r): failed = True
      r.pop("outs", None)
    figs: dict[str, dict[str, float | None]] = {fw: {f: res.get(fw, {}).get(f) for f in FIGURES} for fw in workloads.FRAMEWORKS_ALL}
    figs["machine"] = {}
    met = []
    for t in targets:
      if t["key"] in ("*", key):
        ok, detail = check_target(t["target"], t["figure"], figs)
        met.append({**t, "met": ok, "detail": detail})
    out_rows.append({"key": key, "module": modname, "title": cfg["title"], "config": {k: v for k, v in cfg.items() if k != "data"},
                     "results": res, "targets": met})
  print_table(out_rows)
  cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
  print(f"device {args.device}; load average (1/5/15 min) {' '.join(f'{x:.2f}' for x in load_start)} at the start, "
        f"{' '.join(f'{x:.2f}' for x in os.getloadavg())} at the end, on {cores} cores; niceness {os.nice(0)}; outputs checked "
        f"against torch's: {'ALL OK' if not failed else 'FAILED (see the check lines)'}")
  os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
  with open(args.json, "w") as f:
    json.dump({"quick": args.quick, "device": args.device, "frameworks": fws, "rows": out_rows, "when": time.strftime("%Y-%m-%d %H:%M:%S"),
               "load_avg": os.getloadavg(), "load_avg_start": load_start, "cores": cores}, f, indent=1)
  print(f"wrote {args.json}" + ("; OUTPUT CHECKS FAILED" if failed else ""))
  return 1 if failed else 0

def print_table(rows: list[dict[str, Any]]) -> None:
  hdr = f"{'workload':58s} {'figure':>8s}{'ours':>10s}{'tinygrad':>10s}{'torch':>10s}{'ours/tg':>9s}{'ours/pt':>9s}  target"
  print(hdr)
  print("-" * (len(hdr) + 40))
  for row in rows:
    if "error" in row:
      print(f"{row['title']:58s} prepare failed: {row['error']}")
      continue
    res = row["results"]
    for i, fig in enumerate(FIGURES):
      vals = [res.get(fw, {}).get(fig) for fw in ("ours", "tinygrad", "torch")]
      if all(v is None for v in vals): continue
      o, tg, pt = vals
      line = f"{row['title'] if i == 0 else '':58.58s} {fig:>8s}" + "".join(fmt(v) for v in vals)
      line += (f"{o/tg:8.2f}x" if o and tg else f"{'-':>9s}") + (f"{o/pt:8.2f}x" if o and pt and fig != "warm_ms" else f"{'-':>9s}")
      for t in row["targets"]:
        if t["figure"] == fig: line += f"  {t['target']}: {'yes' if t['met'] else 'NO' if t['met'] is False else '?'} ({t['detail']})"
      print(line)
    print(f"{'':58s} {'check':>8s}  " + ", ".join(f"{fw} {r['check']}" for fw, r in res.items()))

if __name__ == "__main__": sys.exit(main())
