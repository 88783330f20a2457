#!/usr/bin/env python3
"""The benchmark suite's one entry point: every workload of bench/TARGETS.md, measured in one run for ours, numpy and (with
--compare-tinygrad) public tinygrad 0.14, printed as a table beside each target (met or not) and written as JSON.

  python bench/run.py [--device D] [--compare-tinygrad PYTHON | --make-tinygrad-venv DIR] [--json PATH] [--quick] [--runs N]

Each side runs in its own process (numpy with OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset). Every figure is the median of
at least --runs (>= 5) timed runs and 0.25 s of them, after at least two warm-up runs and 0.1 s of them. The machine's
copy bandwidth and fp32 peak are measured here too, by a small C helper (memcpy and independent FMA chains) run on every
core. `--quick` shrinks the sizes (a smoke run; the targets are for the full sizes).

`--check` (make bench-check) is the same run as a regression check: exit status 1 when a target is missed in the run and
in two reruns of the missed rows, 0 when every target is met, and 0 with a line starting `bench-check SKIPPED` when the
machine is too busy for ratios to mean anything (a 1-minute load average above the core count before or after, or FMA
calibration runs that differ by more than CHECK_NOISE): a loaded machine skips, it never fails."""
from __future__ import annotations
import argparse, ctypes, json, os, re, shutil, subprocess, sys, tempfile, time
from concurrent.futures import ThreadPoolExecutor
from typing import Any
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run_json, user_env, ensure_tinygrad_venv, ROOT

TARGETS_MD = os.path.join(ROOT, "bench", "TARGETS.md")

def read_targets(path: str = TARGETS_MD) -> list[dict[str, str]]:
  """The rows of the targets table (the one headed `| key | workload | unit | target |`): key, workload, unit, target.
  Other tables in the file (the measurements' write-ups) are not read."""
  rows: list[dict[str, str]] = []
  inside = False
  with open(path) as f:
    for line in f:
      cells = [c.strip() for c in line.strip().strip("|").split("|")]
      if not inside:
        inside = cells == ["key", "workload", "unit", "target"]
        continue
      if not line.lstrip().startswith("|"): break   # the table's end
      if len(cells) == 4 and not cells[0].startswith("-"): rows.append(dict(zip(("key", "workload", "unit", "target"), cells)))
  return rows

_CLAUSE = re.compile(r"^(>=|<=)\s*([0-9.]+)\s+(\S+)$")
def check_target(target: str, key: str, figs: dict[str, dict[str, float | None]]) -> tuple[bool | None, str]:
  """(met, detail) for a target like `>= 1.4 numpy and >= 0.85 copy_bw`; met is None when a figure is missing."""
  joiner = " or " if " or " in target else " and "
  results, details = [], []
  for clause in target.split(joiner):
    m = _CLAUSE.match(clause.strip())
    if m is None: raise ValueError(f"bench/TARGETS.md: cannot read target clause {clause!r} (want e.g. '>= 0.5 numpy')")
    cmp, want, ref = m.group(1), float(m.group(2)), m.group(3)
    ours = figs["ours"].get(key)
    base = figs["machine"].get(ref) if ref == "copy_bw" else figs["ours"].get(ref[5:]) if ref.startswith("ours:") else figs.get(ref, {}).get(key)
    if ours is None or base is None:
      results.append(None)
      details.append(f"{ref}: -")
      continue
    r = ours / base
    results.append(r >= want if cmp == ">=" else r <= want)
    details.append(f"{r:.2f}x {ref}")
  decisive = True if joiner == " or " else False   # one clause with this value settles the target
  met = decisive if decisive in results else None if None in results else not decisive
  return met, ", ".join(details)

# one workload script for every side: BACKEND is "numpy" or "tinygrad" (ours or public, by which interpreter runs it)
WORKLOAD = """
import json, time, statistics, sys
import numpy as np
CFG = {cfg!r}
out, used = {{}}, {{}}
def med(f, n=CFG["runs"], warm=2, key=None):
  # at least `warm` calls and WARM_S seconds of them, then at least n timed and MIN_S seconds of them: a 1 ms call's first
  # ~10 in a process run ~10% slower (threads and caches warming, on both sides), and 7 of them were one noisy sample
  st, w = time.perf_counter(), 0
  while w < warm or time.perf_counter() - st < CFG["warm_s"]:
    f(); w += 1
  ts, cpu0, wall0 = [], time.process_time(), time.perf_counter()
  while len(ts) < n or time.perf_counter() - wall0 < CFG["min_s"]:
    st = time.perf_counter(); f(); ts.append(time.perf_counter() - st)
  # the cores this process kept busy while timed (CPU seconds of all its threads over wall seconds): a row at half its
  # usual speed with 1.0 here ran on one core (a thread not running), with 2.0 it was slow on both (memory, placement)
  if key is not None: used[key] = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
  return statistics.median(ts)
rng = np.random.default_rng(0)
only = CFG.get("only")
want = lambda k: only is None or k in only
if BACKEND == "numpy":
  for s in CFG["mm"]:
    if want(f"matmul{{s}}"):
      a, b = rng.random((s, s), dtype=np.float32), rng.random((s, s), dtype=np.float32)
      out[f"matmul{{s}}"] = 2*s**3 / med(lambda: a @ b, key=f"matmul{{s}}") / 1e9
  N = CFG["n"]
  a, b, c = (rng.random(N, dtype=np.float32) for _ in range(3))
  if want("ew"): out["ew"] = 16*N / med(lambda: a*b+c, key="ew") / 1e9
  if want("sum"): out["sum"] = 4*N / med(lambda: a.sum(), key="sum") / 1e9
  if want("softmax"):
    x = rng.random((CFG["sm"], CFG["sm"]), dtype=np.float32)
    def sm():
      e = np.exp(x - x.max(1, keepdims=True)); return e / e.sum(1, keepdims=True)
    out["softmax"] = med(sm, key="softmax") * 1e3
  # shapes off the vector grid: a matmul whose columns (197) no vector width divides, a running sum along rows
  if want("matmul_odd"):
    a, b = rng.random((512, 512), dtype=np.float32), rng.random((512, 197), dtype=np.float32)
    out["matmul_odd"] = 2*512*512*197 / med(lambda: a @ b, key="matmul_odd") / 1e9
  if want("cumsum"):
    x = rng.random((1000, 1000), dtype=np.float32)
    out["cumsum"] = med(lambda: np.cumsum(x, 1), key="cumsum") * 1e3
else:
  from tinygrad import Tensor
  def T(*shape): return Tensor(rng.random(shape, dtype=np.float32)).realize()
  # every result is checked against numpy after all the timing: numpy's matmul starts OpenBLAS threads that busy-wait
  # for a while after it returns, and a check between two rows halved the next row's matmul (1024: ~300 -> ~150 GFLOPS)
  checks, check = [], CFG["check"]
  for s in CFG["mm"]:
    if want(f"matmul{{s}}"):
      a, b = T(s, s), T(s, s)
      out[f"matmul{{s}}"] = 2*s**3 / med(lambda: (a @ b).realize(), key=f"matmul{{s}}") / 1e9
      if check: checks.append((f"matmul {{s}}", (a @ b).numpy(), lambda a=a.numpy(), b=b.numpy(): a @ b, 1e-3, 1e-3))
  N = CFG["n"]
  if want("ew") or want("sum"): a, b, c = T(N), T(N), T(N)
  if want("ew"):
    out["ew"] = 16*N / med(lambda: (a*b+c).realize(), key="ew") / 1e9
    if check: checks.append(("a*b+c", (a*b+c).numpy(), lambda a=a.numpy(), b=b.numpy(), c=c.numpy(): a*b+c, 1e-6, 1e-6))
  if want("sum"):
    out["sum"] = 4*N / med(lambda: a.sum().realize(), key="sum") / 1e9
    if check: checks.append(("sum", a.sum().numpy(), lambda a=a.numpy(): a.astype(np.float64).sum(), 1e-4, 0))
  if want("softmax"):
    x = T(CFG["sm"], CFG["sm"])
    out["softmax"] = med(lambda: x.softmax(-1).realize(), key="softmax") * 1e3
    if check:
      def sm(x=x.numpy()):
        e = np.exp(x - x.max(1, keepdims=True)); return e / e.sum(1, keepdims=True)
      checks.append(("softmax", x.softmax(-1).numpy(), sm, 1e-5, 1e-7))
  if want("matmul_odd"):
    a, b = T(512, 512), T(512, 197)
    out["matmul_odd"] = 2*512*512*197 / med(lambda: (a @ b).realize(), key="matmul_odd") / 1e9
    if check: checks.append(("matmul 512x512 @ 512x197", (a @ b).numpy(), lambda a=a.numpy(), b=b.numpy(): a @ b, 1e-3, 1e-3))
  if want("cumsum"):
    x = T(1000, 1000)
    out["cumsum"] = med(lambda: x.cumsum(1).realize(), key="cumsum") * 1e3
    if check: checks.append(("cumsum", x.cumsum(1).numpy(), lambda x=x.numpy(): np.cumsum(x.astype(np.float64), 1), 1e-5, 1e-4))
  for what, got, ref, rtol, atol in checks:
    assert np.allclose(got, ref(), rtol=rtol, atol=atol), f"{{what}} is wrong"
out["cores_used"] = used
print(json.dumps(out))
"""

# the machine's copy bandwidth (memcpy, bytes read + written) and fp32 peak (independent vector FMA chains), on every core.
# The chains start from different values: twelve chains from {0} were one expression to the compiler, which kept one chain
# (one FMA per iteration, its latency apart) and the figure was 12x that: "347 GFLOPS" on a Zen 4 pair whose peak is ~230
_MACHINE_C = r"""
#include <string.h>
typedef float v8 __attribute__((vector_size(32)));
void copy(char *d, const char *s, long n, int reps) { for (int r = 0; r < reps; r++) { memcpy(d, s, n); __asm__ volatile("" ::: "memory"); } }
float fma_chains(long iters) {
  v8 a0 = {0}, a1 = {1}, a2 = {2}, a3 = {3}, a4 = {4}, a5 = {5}, a6 = {6}, a7 = {7}, a8 = {8}, a9 = {9}, a10 = {10}, a11 = {11};
  v8 m = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f, 1.0f}, c = {1e-7f, 1e-7f, 1e-7f, 1e-7f, 1e-7f, 1e-7f, 1e-7f, 1e-7f};
  for (long i = 0; i < iters; i++) {
    __asm__("" : "+x"(m));
    a0 = a0*m+c; a1 = a1*m+c; a2 = a2*m+c; a3 = a3*m+c; a4 = a4*m+c; a5 = a5*m+c;
    a6 = a6*m+c; a7 = a7*m+c; a8 = a8*m+c; a9 = a9*m+c; a10 = a10*m+c; a11 = a11*m+c;
  }
  v8 s = a0+a1+a2+a3+a4+a5+a6+a7+a8+a9+a10+a11;
  return s[0]+s[7];
}
"""

def measure_machine(cores: int, quick: bool) -> dict[str, float | None]:
  cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
  if cc is None: return {"copy_bw": None, "peak_gflops": None, "fma_spread": None}
  with tempfile.TemporaryDirectory() as d:
    so = os.path.join(d, "machine.so")
    subprocess.run([cc, "-x", "c", "-", "-O2", "-march=native", "-ffp-contract=fast", "-shared", "-fPIC", "-o", so],
                   input=_MACHINE_C.encode(), check=True)
    lib = ctypes.CDLL(so)
  lib.copy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_long, ctypes.c_int]
  lib.fma_chains.argtypes, lib.fma_chains.restype = [ctypes.c_long], ctypes.c_float
  pool = ThreadPoolExecutor(cores)
  spread: list[float] = []
  def on_all(fxn, args_per_core) -> float:
    ts = []
    for _ in range(5):
      st = time.perf_counter()
      list(pool.map(lambda a: fxn(*a), args_per_core))
      ts.append(time.perf_counter() - st)
    spread.append(max(ts) / min(ts))
    return sorted(ts)[len(ts)//2]
  n = (16 if quick else 64) << 20   # bytes per core per copy: far past the caches
  bufs = [(ctypes.create_string_buffer(n), ctypes.create_string_buffer(n)) for _ in range(cores)]
  for d_, s_ in bufs: ctypes.memset(d_, 1, n); ctypes.memset(s_, 2, n)
  reps = 4
  t_copy = on_all(lib.copy, [(ctypes.addressof(d_), ctypes.addressof(s_), n, reps) for d_, s_ in bufs])
  iters = 20_000_000 if quick else 100_000_000
  t_fma = on_all(lib.fma_chains, [(iters,)] * cores)
  return {"copy_bw": 2 * n * reps * cores / t_copy / 1e9, "peak_gflops": iters * 12 * 8 * 2 * cores / t_fma / 1e9,
          "fma_spread": spread[-1]}   # slowest / fastest of the FMA runs: another process on a core shows here

# --check skips when the slowest of the calibration's FMA runs takes CHECK_NOISE x the fastest, when other processes used
# more than CHECK_OTHERS of the cores while it measured, or when the load average stays above the cores for CHECK_WAIT s
CHECK_NOISE, CHECK_OTHERS, CHECK_WAIT = 1.2, 0.2, 45

def measure(args: argparse.Namespace, keys: list[str], ref: str | None, cores: int) -> dict[str, dict[str, float | None]]:
  """Every figure of `keys` for every side (numpy, ours, public tinygrad with `ref`) and the machine's, in one run."""
  cfg = {"mm": [512] if args.quick else [512, 1024, 2048], "n": 1 << 20 if args.quick else 1 << 24,
         "sm": 1024 if args.quick else 4096, "runs": max(5, args.runs), "warm_s": 0.1, "min_s": 0.25, "check": True,
         "only": sorted({k for k in keys if not k.startswith("beam_")} | ({"matmul1024"} if "beam_matmul1024" in keys else set()))}
  figs: dict[str, dict[str, float | None]] = {}
  figs["machine"] = measure_machine(cores, args.quick)
  print(f"machine: {cores} cores, copy bandwidth {figs['machine']['copy_bw'] or 0:.1f} GB/s, fp32 peak {figs['machine']['peak_gflops'] or 0:.0f} GFLOPS",
        file=sys.stderr)
  code = lambda backend, c=cfg: f"BACKEND = {backend!r}\n" + WORKLOAD.format(cfg=c)
  sides = [("numpy", sys.executable, user_env(numpy_side=True), code("numpy")),
           ("ours", sys.executable, user_env(DEV=args.device), code("tinygrad"))]
  if ref: sides.append(("tinygrad", ref, user_env(DEV="CPU"), code("tinygrad", {**cfg, "check": False})))
  for name, py, env, src in sides:
    figs[name] = run_json(py, src, env, timeout=3600) or {}
    print(f"measured {name}", file=sys.stderr)
  if "beam_matmul1024" in keys:
    with tempfile.TemporaryDirectory() as d:   # an empty cache: BEAM searches here (the second run of the suite would not)
      bcfg = {**cfg, "mm": [512 if args.quick else 1024], "only": ["matmul512" if args.quick else "matmul1024"]}
      got = run_json(sys.executable, code("tinygrad", bcfg), user_env(DEV=args.device, BEAM="2", CACHEDB=os.path.join(d, "c.db")), timeout=3600) or {}
    figs["ours"]["beam_matmul1024"] = got.get(bcfg["only"][0])
    if "beam_matmul1024" not in figs["numpy"]: figs["numpy"]["beam_matmul1024"] = figs["numpy"].get("matmul512" if args.quick else "matmul1024")
    if ref: figs["tinygrad"]["beam_matmul1024"] = None
  return figs

def table(targets: list[dict[str, str]], keys: list[str], figs: dict[str, dict[str, float | None]], ref: str | None) -> list[dict[str, Any]]:
  """Print the figures beside their targets; the rows, each with `met` (None: a figure is missing)."""
  rows: list[dict[str, Any]] = []
  cols = ["ours", "numpy"] + (["tinygrad"] if ref else [])
  hdr = f"{'workload':32s} {'unit':>6s}" + "".join(f"{c:>10s}" for c in cols) + f"{'ours/np':>9s}" + (f"{'ours/tg':>9s}" if ref else "") + f"  {'target':38s} met"
  print(hdr)
  print("-" * len(hdr))
  for t in targets:
    k = t["key"]
    if k not in keys: continue
    met, detail = check_target(t["target"], k, figs)
    vals = [figs[c].get(k) for c in cols]
    o, n_ = figs["ours"].get(k), figs["numpy"].get(k)
    tg = figs.get("tinygrad", {}).get(k)
    line = f"{t['workload']:32s} {t['unit']:>6s}" + "".join(f"{v:10.1f}" if v is not None else f"{'-':>10s}" for v in vals)
    line += f"{o/n_:8.2f}x" if o and n_ else f"{'-':>9s}"
    if ref: line += f"{o/tg:8.2f}x" if o and tg else f"{'-':>9s}"
    line += f"  {t['target']:38s} {'yes' if met else 'NO' if met is False else '?'} ({detail})"
    if (u := (figs["ours"].get("cores_used") or {}).get(k)) is not None: line += f" [ours kept {u:.1f} cores busy]"
    print(line, flush=True)
    rows.append({**t, "ours": o, "numpy": n_, "tinygrad": tg, "met": met, "detail": detail})
  return rows

def _cpu_seconds() -> tuple[float, float] | None:
  """(CPU seconds every process of the machine has used, including the hypervisor's steal; this process's and its waited
  children's), from Linux's /proc/stat; None elsewhere."""
  try:
    with open("/proc/stat") as f: v = [int(x) for x in f.readline().split()[1:9]]
  except (OSError, ValueError): return None
  t = os.times()
  return (v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / os.sysconf("SC_CLK_TCK"), t.user + t.system + t.children_user + t.children_system

def busy(cores: int, figs: dict[str, dict[str, float | None]] | None = None, since: tuple[float, tuple[float, float] | None] | None = None) -> str | None:
  """Why the machine is too busy for a ratio check (None: quiet enough): a load average above the cores, noisy FMA
  calibration runs, or (given `since`, a time.perf_counter() and _cpu_seconds() pair) other processes taking more than
  CHECK_OTHERS of the cores while we measured."""
  if since is not None and since[1] is not None and (now := _cpu_seconds()) is not None:
    wall = time.perf_counter() - since[0]
    others = ((now[0] - since[1][0]) - (now[1] - since[1][1])) / (wall * cores)
    if others > CHECK_OTHERS: return f"other processes took {others:.0%} of the {cores} cores while it measured (> {CHECK_OTHERS:.0%})"
  elif (load := os.getloadavg()[0]) > cores: return f"load average {load:.1f} is above the {cores} cores"
  if figs is not None and (sp := figs["machine"].get("fma_spread")) is not None and sp > CHECK_NOISE:
    return f"the calibration's FMA runs differ by {sp:.2f}x (> {CHECK_NOISE}): another process shares the cores"
  return None

def check(args: argparse.Namespace, targets: list[dict[str, str]], keys: list[str], cores: int) -> int:
  """--check: 0 when every target is met (or the machine is busy: skipped), 1 when one is missed in 3 tries."""
  skip = lambda why: (print(f"bench-check SKIPPED: {why}; ratios on a busy machine are noise, not a regression (rerun on a "
                            "quiet machine: make bench-check)", flush=True), 0)[1]
  for waited in range(0, CHECK_WAIT + 1, 5):   # a test run just before (CI) leaves the load average up for a minute
    if (why := busy(cores)) is None: break
    if waited < CHECK_WAIT: time.sleep(5)
  else: return skip(why)
  todo, missed = keys, []
  for attempt in range(3):
    since = (time.perf_counter(), _cpu_seconds())
    figs = measure(args, todo, None, cores)
    rows = table(targets, todo, figs, None)
    if (why := busy(cores, figs, since)) is not None: return skip(why)
    missed = [r for r in rows if r["met"] is not True]
    if not missed: break
    todo = [r["key"] for r in missed]
    if attempt < 2: print(f"missed {', '.join(todo)}: measuring them again", flush=True)
  if not missed:
    print(f"bench-check passed: every target of bench/TARGETS.md met (load average {os.getloadavg()[0]:.1f}, {cores} cores)")
    return 0
  for r in missed:
    print(f"bench-check FAILED: {r['key']} ({r['workload']}) missed its target {r['target']} three times: {r['detail']}")
  return 1

def main() -> None:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--device", default="CPU", help="our device (DEV=...), e.g. CPU, CPU:CLANG")
  ap.add_argument("--compare-tinygrad", metavar="PYTHON", help="the interpreter of a venv with public tinygrad 0.14")
  ap.add_argument("--make-tinygrad-venv", metavar="DIR", help="create (once) a venv with tinygrad==0.14.0 at DIR and compare against it")
  ap.add_argument("--json", default=os.path.join(tempfile.gettempdir(), "tinygrad_bench_run.json"), help="where the JSON goes")
  ap.add_argument("--runs", type=int, default=7, help="timed runs per figure (the median is reported; at least 5)")
  ap.add_argument("--quick", action="store_true", help="small sizes: a smoke run, targets not meaningful")
  ap.add_argument("--only", help="comma-separated keys of TARGETS.md to run (default: all)")
  ap.add_argument("--no-beam", action="store_true", help="skip the BEAM=2 row")
  ap.add_argument("--check", action="store_true", help="exit 1 when a target is missed; skip (exit 0) on a busy machine (make bench-check)")
  args = ap.parse_args()
  targets = read_targets()
  only = set(args.only.split(",")) if args.only else None
  keys = [t["key"] for t in targets if (only is None or t["key"] in only) and not (args.no_beam and t["key"].startswith("beam_"))]
  if (unknown := (only or set()) - {t["key"] for t in targets}):
    raise SystemExit(f"--only: unknown key(s) {sorted(unknown)}; bench/TARGETS.md has {[t['key'] for t in targets]}")
  cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
  if args.check:
    if args.quick: raise SystemExit("--check measures the full sizes (the targets are for them): drop --quick")
    raise SystemExit(check(args, targets, keys, cores))
  ref = args.compare_tinygrad or (ensure_tinygrad_venv(args.make_tinygrad_venv) if args.make_tinygrad_venv else None)
  figs = measure(args, keys, ref, cores)
  rows = table(targets, keys, figs, ref)
  m = figs["machine"]
  print(f"machine: {cores} cores, copy bandwidth {m['copy_bw'] or 0:.1f} GB/s (read+write), fp32 peak {m['peak_gflops'] or 0:.0f} GFLOPS"
        + ("" if ref else "; public tinygrad not compared (--compare-tinygrad PYTHON or --make-tinygrad-venv DIR)"))
  with open(args.json, "w") as f:
    json.dump({"device": args.device, "quick": args.quick, "machine": m, "cores": cores, "rows": rows, "figures": figs,
               "when": time.strftime("%Y-%m-%d %H:%M:%S"), "load_avg": os.getloadavg()}, f, indent=1)
  print(f"wrote {args.json}")

if __name__ == "__main__": main()
