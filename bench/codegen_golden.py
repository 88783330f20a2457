#!/usr/bin/env python3
"""A hash of every kernel's rendered source for whole models: a codegen speedup must leave every program as it was.

  python bench/codegen_golden.py --write PATH        # record (before the change)
  python bench/codegen_golden.py --check PATH        # compare (after it): exit status 1 and the differing kernels if any
  [--rows KEYS] [--quick-only] [--renderers CPU,CPU:CLANG,PYTHON,CL,WEBGPU]

Per row of bench/workloads (the full ROWS, and the QUICK configs, which are the tiny models tests/core/test_models.py
runs), one process on an empty cache (CACHELEVEL=0, no forked codegen) builds the model and runs one call on CPU with
get_program wrapped: the kernel ASTs it renders, in order. Each AST is then rendered again for every renderer in
--renderers (no compile), and sha256 of (name, source) is kept per (row, renderer, kernel)."""
from __future__ import annotations
import argparse, hashlib, json, os, subprocess, sys, tempfile
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from common import user_env

CHILD = r"""
import hashlib, json, sys
sys.path.insert(0, sys.argv[1])
import workloads
from tinygrad import Device, codegen
mod, key, cfg, rens = sys.argv[2], sys.argv[3], json.loads(sys.argv[4]), sys.argv[5].split(",")
asts, orig = [], codegen.get_program
def rec(ast, ren, opts=None, compile=True):
  if ast not in asts: asts.append(ast)
  return orig(ast, ren, opts, compile)
codegen.get_program = rec
m = workloads.modules()[mod]
m.prepare(cfg)
m.build("ours", cfg)()
codegen.get_program = orig
out = {}
for r in rens:
  try: ren = Device[r].renderer
  except Exception as e:
    out[r] = f"unavailable: {type(e).__name__}"
    continue
  out[r] = [hashlib.sha256((p.name + "\0" + p.src).encode()).hexdigest()[:16] + " " + p.name
            for p in (orig(a, ren, None, compile=False) for a in asts)]
print(json.dumps(out))
"""

def run_row(modname: str, key: str, cfg: dict, renderers: str) -> dict:
  with tempfile.TemporaryDirectory(prefix="tg_golden_") as d:
    cfg = dict(cfg, data=d)
    env = user_env(DEV="CPU", CACHELEVEL="0", PARALLEL_CODEGEN="0", XDG_CACHE_HOME=d, CACHEDB=os.path.join(d, "c.db"))
    r = subprocess.run([sys.executable, "-c", CHILD, HERE, modname, key, json.dumps(cfg), renderers], capture_output=True, text=True,
                       env=env, cwd=tempfile.gettempdir())
    if r.returncode != 0: return {"error": r.stderr.strip().splitlines()[-1] if r.stderr.strip() else f"exit {r.returncode}"}
    return json.loads(r.stdout.strip().splitlines()[-1])

def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  g = ap.add_mutually_exclusive_group(required=True)
  g.add_argument("--write", metavar="PATH")
  g.add_argument("--check", metavar="PATH")
  ap.add_argument("--rows", help="comma-separated row keys (default: every row; the slow gpt2_decode_small is included)")
  ap.add_argument("--quick-only", action="store_true", help="only the QUICK (tiny) configs")
  ap.add_argument("--renderers", default="CPU,CPU:CLANG,PYTHON,CL,WEBGPU", help="devices whose renderers render every AST again")
  args = ap.parse_args()
  import workloads
  only = set(args.rows.split(",")) if args.rows else None
  jobs = [(f"{k}{sfx}", m, k, cfg) for m, mod in workloads.modules().items() for sfx, table in (("", mod.ROWS), (":quick", mod.QUICK))
          if not (args.quick_only and sfx == "") for k, cfg in table.items() if only is None or k in only]
  res = {}
  for name, m, k, cfg in jobs:
    res[name] = run_row(m, k, cfg, args.renderers)
    n = {r: len(v) for r, v in res[name].items() if isinstance(v, list)}
    print(f"{name}: {res[name].get('error') or ', '.join(f'{r} {c} kernels' for r, c in n.items())}", file=sys.stderr, flush=True)
  if args.write:
    with open(args.write, "w") as f: json.dump(res, f, indent=0, sort_keys=True)
    print(f"wrote {args.write}: {sum(len(v) for row in res.values() for v in row.values() if isinstance(v, list))} kernel sources")
    return 0
  with open(args.check) as f: ref = json.load(f)
  bad = 0
  for name, row in res.items():
    if name not in ref:
      print(f"{name}: not in {args.check}")
      continue
    for r, hs in row.items():
      want = ref[name].get(r)
      if hs == want: continue
      bad += 1
      if not isinstance(hs, list) or not isinstance(want, list): print(f"{name} {r}: {hs!r:.80} against {want!r:.80}")
      else:
        diff = [f"#{i} {a} (was {b})" for i, (a, b) in enumerate(zip(hs, want)) if a != b]
        print(f"{name} {r}: {len(hs)} kernels (were {len(want)}); differ: {'; '.join(diff[:5])}{' ...' if len(diff) > 5 else ''}")
  total = sum(len(v) for row in res.values() for v in row.values() if isinstance(v, list))
  print(f"{'IDENTICAL' if not bad else 'DIFFERENT'}: {total} kernel sources over {len(res)} rows, {bad} (row, renderer) lists differ")
  return 1 if bad else 0

if __name__ == "__main__": sys.exit(main())
