#!/usr/bin/env python3
"""Compiler and dispatch speed against public tinygrad (TINYGRAD_REF_PYTHON names its interpreter), with the targets of
the overhead issue: import, cold and warm first result, schedule+codegen of a new kernel (on NULL: nothing compiles or
runs), and the per-call cost of a tiny realize with and without TinyJit; eager (un-jitted) realizes of a tiny matmul,
exp, sum and elementwise chain, and a 512 matmul's host time (the call less its kernel launches) and its time against
numpy's; then dispatch inside a TinyJit replay: the cost per small kernel (two chains of 10 and 200 16-element kernels:
the slope) through the device's graph (JIT=1) and kernel by kernel (JIT=2), the replay's fixed cost per call,
sym_infer's cost per call on launch-size expressions, and an un-jitted MLP training step (Adam, one batch reused: early
and late steps, so a graph that grows step after step shows). Every
figure is measured in fresh processes, each checked against numpy (a wrong result is an error, not a figure): the output
ends with the checks' verdict and the machine's load before and after, and the exit status is 1 when a check failed.
  nice python bench/overhead.py --ref /tmp/tinygrad-0.14-venv/bin/python     (or TINYGRAD_REF_PYTHON=...)
  python bench/overhead.py --phases     (ours only: an eager realize's host time phase by phase, the profile of its rows)"""
from __future__ import annotations
import argparse, os, sys, tempfile, statistics
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import run_json, reference_python, user_env

IMPORT = "import time; st = time.perf_counter(); import tinygrad; import json; print(json.dumps(time.perf_counter() - st))"
FIRST = ("import time; st = time.perf_counter(); from tinygrad import Tensor; r = (Tensor([1,2,3])*2).tolist(); "
         "assert r == [2, 4, 6]; import json; print(json.dumps(time.perf_counter() - st))")
CODEGEN = """
import json, time
from tinygrad import Tensor
def t(make, n=5):
  ts = []
  for i in range(n + 1):
    x = make(i + 1.0)
    st = time.perf_counter(); x.realize(); ts.append(time.perf_counter() - st)
  return sorted(ts[1:])[n // 2]
a, b = Tensor.empty(1024, 1024, device="NULL"), Tensor.empty(1024, 1024, device="NULL")
print(json.dumps({"ew": t(lambda c: a * b + c), "mm": t(lambda c: (a + c) @ b)}))
"""
DISPATCH = """
import json, time
from tinygrad import Tensor, TinyJit
a = Tensor.rand(16).realize()
def per_call(f, n=2000):
  for _ in range(20): f()
  st = time.perf_counter()
  for _ in range(n): f()
  return (time.perf_counter() - st) / n
plain = per_call(lambda: (a + 1).realize())
jf = TinyJit(lambda x: (x + 1).realize())
jitted = per_call(lambda: jf(a))
want = a.numpy() + 1
assert ((a + 1).numpy() == want).all() and (jf(a).numpy() == want).all()
# the same realize, and an in-place update, in a program holding 5000 other tensors (a model's weights and optimizer state)
held = [Tensor.empty(4) for _ in range(5000)]
live = per_call(lambda: (a + 1).realize(), 500)
w = Tensor.zeros(16).contiguous().realize()
live_assign = per_call(lambda: w.assign(w + 1).realize(), 500)
assert (w.numpy() == 520).all()
# and a small backward (autograd looks at every live tensor for the ones the loss reads)
g = Tensor.ones(16).contiguous().realize()
g.requires_grad = True
def backward():
  g.grad = None
  (g * a).sum().backward()
  g.grad.realize()
live_backward = per_call(backward, 100)
assert (g.grad.numpy() == a.numpy()).all()
print(json.dumps({"plain": plain, "jit": jitted, "live": live, "live_assign": live_assign, "live_backward": live_backward}))
"""
EAGER = """
import json, time, statistics
import numpy as np
from tinygrad import Tensor
x, w = Tensor.rand(4, 16).realize(), Tensor.rand(16, 16).realize()
xn, wn = x.numpy(), w.numpy()
def per_call(f, n=300):
  for _ in range(20): f()
  best = 1e9
  for _ in range(5):
    st = time.perf_counter()
    for _ in range(n): f()
    best = min(best, (time.perf_counter() - st) / n)
  return best
cases = {"eager_mm": (lambda: (x @ w).realize(), xn @ wn), "eager_exp": (lambda: x.exp().realize(), np.exp(xn)),
         "eager_sum": (lambda: x.sum(axis=1).realize(), xn.sum(axis=1)), "eager_chain": (lambda: (x * 2 + 1).relu().realize(), np.maximum(xn * 2 + 1, 0))}
out = {}
for k, (f, want) in cases.items():
  np.testing.assert_allclose(f().numpy(), want, rtol=1e-5, atol=1e-6)
  out[k] = per_call(f)
# (public tinygrad 0.14 has no CompiledRunner to time its launches around: these host figures are ours alone, targets in us)
from tinygrad.engine import realize as R
if hasattr(R, "CompiledRunner"):
  # a 512 matmul: the whole call, and its host time (the call less the kernel's launches, timed around each runner call)
  a, b = Tensor.rand(512, 512).realize(), Tensor.rand(512, 512).realize()
  an, bn = a.numpy(), b.numpy()
  np.testing.assert_allclose((a @ b).numpy(), an @ bn, rtol=1e-4, atol=1e-4)
  kern, orig = [], R.CompiledRunner.__call__
  clock = time.perf_counter
  def timed(self, *args, **kw):
    st = clock()
    try: return orig(self, *args, **kw)
    finally: kern.append(clock() - st)
  R.CompiledRunner.__call__ = timed
  calls = []
  for i in range(80):
    kern.clear()
    st = time.perf_counter()
    (a @ b).realize()
    if i >= 10: calls.append((time.perf_counter() - st, sum(kern)))
  clock = time.thread_time
  # an eager call's host work (issue 35: <= 30 us): the calling thread's CPU time per (x + 1).realize() on 1000 floats, graph
  # build included, less its kernel launches' (thread CPU time: other processes' load does not count)
  xe = Tensor.rand(1000).realize()
  np.testing.assert_allclose((xe + 1).numpy(), xe.numpy() + 1, rtol=1e-6)
  hosts = []
  for _ in range(5):
    for _ in range(30): (xe + 1).realize()
    kern.clear()
    st = time.thread_time()
    for _ in range(1000): (xe + 1).realize()
    hosts.append((time.thread_time() - st - sum(kern)) / 1000)
  R.CompiledRunner.__call__ = orig
  out["eager_host"] = min(hosts)
  ts = []
  for _ in range(30):
    st = time.perf_counter()
    an @ bn
    ts.append(time.perf_counter() - st)
  out["mm512_host"] = statistics.median(c - k for c, k in calls)
  out["mm512_np"] = statistics.median(c for c, _ in calls) / statistics.median(ts)
print(json.dumps(out))
"""
REPLAY = """
import json, time
import numpy as np
from tinygrad import Tensor, TinyJit
def chain(n):
  def f(x):
    for i in range(n): x = (x * 1.01 + i).contiguous()
    return x
  return TinyJit(f)
def timed(jf, a, reps):
  for _ in range(4): jf(a)
  wall = cpu = 1e9
  for _ in range(9):
    w, c = time.perf_counter(), time.thread_time()
    for _ in range(reps): out = jf(a)
    wall, cpu = min(wall, (time.perf_counter() - w) / reps), min(cpu, (time.thread_time() - c) / reps)
  return wall, cpu, out.numpy()
a = Tensor.rand(16).realize()
(w10, c10, o10), (w200, c200, o200) = timed(chain(10), a, 200), timed(chain(200), a, 20)
for n, o in ((10, o10), (200, o200)):
  want = a.numpy()
  for i in range(n): want = (want * np.float32(1.01) + np.float32(i)).astype(np.float32)
  np.testing.assert_allclose(o, want, rtol=1e-5)
per = (w200 - w10) / 190
print(json.dumps({"kernel": per, "kernel_cpu": (c200 - c10) / 190, "call": w10 - 10 * per}))
"""
# a plain (un-jitted) training step: a 3-layer MLP with Adam over one batch kept across steps (its implicit gradient must
# not grow), the first loss checked against numpy's forward; the figure is the median step of the last 20 of 60
PLAIN_STEP = """
import os
os.environ.setdefault("TRAINING", "1")   # (public tinygrad's optimizer refuses to step without it)
import json, time
import numpy as np
from tinygrad import Tensor, nn
Tensor.training = True
rng = np.random.default_rng(0)
Ws = [(rng.standard_normal(s) * 0.1).astype(np.float32) for s in ((128, 64), (128,), (128, 128), (128,), (10, 128), (10,))]
ls = [nn.Linear(64, 128), nn.Linear(128, 128), nn.Linear(128, 10)]
for i, l in enumerate(ls): l.weight, l.bias = Tensor(Ws[2 * i]), Tensor(Ws[2 * i + 1])
opt = nn.optim.Adam([p for l in ls for p in (l.weight, l.bias)], lr=1e-3)
xn, yn = rng.standard_normal((32, 64)).astype(np.float32), rng.integers(0, 10, 32)
X, Y = Tensor(xn), Tensor(yn.astype(np.int32))
def step():
  opt.zero_grad()
  loss = ls[2](ls[1](ls[0](X).relu()).relu()).sparse_categorical_crossentropy(Y)
  loss.backward()
  return loss.realize(*opt.schedule_step()).item()   # (public tinygrad's idiom: the loss with the update, one schedule)
h = np.maximum(np.maximum(xn @ Ws[0].T + Ws[1], 0) @ Ws[2].T + Ws[3], 0) @ Ws[4].T + Ws[5]
h = h - h.max(1, keepdims=True)
want = float(-(h - np.log(np.exp(h).sum(1, keepdims=True)))[np.arange(32), yn].mean())
first = step()
assert abs(first - want) < 1e-4 * max(1.0, abs(want)), (first, want)
ts, losses = [], []
for _ in range(60):
  st = time.perf_counter()
  losses.append(step())
  ts.append(time.perf_counter() - st)
assert losses[-1] < first, (first, losses[-1])
print(json.dumps({"plain_step": sorted(ts[40:])[10], "plain_step_early": sorted(ts[:20])[10]}))
"""
SYMINFER = """
import json, time
from tinygrad import Variable
from tinygrad.uop.ops import sym_infer
a, b = Variable("a", 1, 1000), Variable("b", 1, 1000)
exprs = [(a + 1, lambda x, y: x + 1), ((a * 3 + b) // 4, lambda x, y: (x * 3 + y) // 4),
         ((a + 7) // 8 * 8 * b + a % 5, lambda x, y: (x + 7) // 8 * 8 * y + x % 5)]
for i in range(1, 50):
  for e, f in exprs: assert sym_infer(e, {"a": i, "b": 7}) == f(i, 7)
n = 20000
st = time.perf_counter()
for i in range(n):
  for e, _ in exprs: sym_infer(e, {"a": i % 1000 + 1, "b": 7})
print(json.dumps((time.perf_counter() - st) / (n * len(exprs))))
"""
# --phases: where an eager realize's host time goes (ours only): each phase's median over 300 calls, for (x + 1) of 1000
# floats and matmuls of 16 and 512, timed between marks around the realize: building the graph, the realize up to its
# eager plan (the plan's key and lookup), the plan up to the launch (buffers), the launch, after it (counters, the result's
# buffer), the rest of realize (the tensor takes its buffer), and dropping the result (its buffer back to the allocator).
# After a 512 matmul's kernel the same Python runs on caches the kernel filled: compare its phases with the 16 one's
PHASES = """
import json, time, statistics
import numpy as np
from tinygrad import Tensor
from tinygrad.engine import realize as R
marks = []
def wrap(owner, name, tag):
  orig = getattr(owner, name)
  def timed(*args, **kw):
    marks.append((tag + " start", time.perf_counter()))
    try: return orig(*args, **kw)
    finally: marks.append((tag + " end", time.perf_counter()))
  setattr(owner, name, timed)
wrap(R.CompiledRunner, "__call__", "launch")
wrap(R, "run_eager_plan", "plan")
NAMES = {"built": "build the graph", "plan start": "realize up to the plan", "launch start": "plan up to the launch",
         "launch end": "launch (kernel)", "plan end": "plan after the launch", "realized": "rest of realize", "dropped": "drop the result"}
def phases(make, want):
  np.testing.assert_allclose(make().numpy(), want, rtol=1e-4, atol=1e-4)
  got = {}
  for i in range(350):
    marks.clear()
    st = time.perf_counter()
    t = make()
    marks.append(("built", time.perf_counter()))
    t.realize()
    marks.append(("realized", time.perf_counter()))
    del t
    marks.append(("dropped", time.perf_counter()))
    if i < 50: continue
    prev = st
    for k, tm in marks:
      got.setdefault(NAMES[k], []).append(tm - prev)
      prev = tm
  return {k: statistics.median(v) for k, v in got.items()}
x = Tensor.rand(1000).realize()
out = {"(x + 1) of 1000": phases(lambda: x + 1, x.numpy() + 1)}
for n in (16, 512):
  a, b = Tensor.rand(n, n).realize(), Tensor.rand(n, n).realize()
  out[f"matmul {n}"] = phases(lambda: a @ b, a.numpy() @ b.numpy())
print(json.dumps(out))
"""

# a target is a ratio to public tinygrad ("x") or an absolute figure in the row's unit ("abs": issue 35's per-kernel cost)
TARGETS = {"import": ("abs", 60.0), "cold": ("x", 0.4), "warm": ("x", 0.4), "ew": ("x", 0.3), "mm": ("x", 0.3), "plain": ("x", 0.15),
           "live": ("x", 0.15), "live_assign": ("x", 0.3), "live_backward": ("x", 0.5), "eager_mm": ("x", 0.5), "eager_exp": ("x", 0.5), "eager_sum": ("x", 0.5),
           "eager_chain": ("x", 0.5), "eager_host": ("abs", 30.0), "mm512_host": ("abs", 80.0), "mm512_np": ("abs", 1.0),
           "jit": ("x", 0.2), "kernel": ("abs", 3.0), "kernel_cpu": ("abs", 3.0), "kernel_nograph": ("x", 0.5), "call": ("x", 0.5),
           "sym_infer": ("x", 0.5), "plain_step_early": ("x", 0.5), "plain_step": ("x", 0.5)}
LABELS = {"import": "import tinygrad (ms)", "cold": "first result, empty cache (ms)", "warm": "first result, warm cache (ms)",
          "ew": "schedule+codegen elementwise (ms)", "mm": "schedule+codegen matmul 1024 (ms)", "plain": "tiny realize per call (us)",
          "live": "  same, 5000 other live tensors (us)", "live_assign": "  an in-place update, 5000 live (us)",
          "live_backward": "  a small backward, 5000 live (us)",
          "eager_mm": "tiny matmul 4x16 @ 16x16 realize (us)", "eager_exp": "exp of 4x16 realize (us)",
          "eager_sum": "sum(axis=1) of 4x16 realize (us)", "eager_chain": "relu(x*2+1) of 4x16 realize (us)",
          "eager_host": "eager call host us, (x+1) of 1000 (CPU)",
          "mm512_host": "matmul 512 host time, call - kernel (us)", "mm512_np": "matmul 512 call / numpy's (ratio)",
          "jit": "tiny jitted call (us)", "kernel": "replay per small kernel, graph (us)",
          "kernel_cpu": "  same, calling thread's CPU time (us)", "kernel_nograph": "replay per small kernel, JIT=2 (us)",
          "call": "replay fixed cost per call (us)", "sym_infer": "sym_infer per call (us)",
          "plain_step_early": "MLP Adam step, un-jitted, steps 2-21 (ms)", "plain_step": "  same, steps 42-61 (ms)"}

# what each snippet's process asserts before printing its figures (NULL's codegen runs nothing to check)
CHECKED = ("first result == [2, 4, 6]; tiny realize, jitted call and in-place update, eager matmul/exp/sum/chain and 512 matmul, "
           "replay chains (graph and JIT=2) == numpy; sym_infer == Python's; the MLP step's first loss == numpy's, its last one lower")

def measure(python: str, env: dict[str, str], runs: int = 5) -> dict[str, float]:
  """Every figure in its unit; a figure whose process failed (its check or anything else) is absent."""
  out: dict[str, float] = {}
  if None not in (vals := [run_json(python, IMPORT, env) for _ in range(runs)]): out["import"] = statistics.median(vals) * 1e3
  with tempfile.TemporaryDirectory() as d:
    cenv = dict(env, CACHEDB=os.path.join(d, "cache.db"), XDG_CACHE_HOME=d)
    cold = []
    for i in range(3):
      for f in os.listdir(d): os.remove(os.path.join(d, f)) if os.path.isfile(os.path.join(d, f)) else None
      cold.append(run_json(python, FIRST, cenv))
    if None not in cold: out["cold"] = min(cold) * 1e3
    run_json(python, FIRST, cenv)
    if None not in (warm := [run_json(python, FIRST, cenv) for _ in range(runs)]): out["warm"] = statistics.median(warm) * 1e3
  cg = run_json(python, CODEGEN, env) or {}
  out.update({k: v * 1e3 for k, v in cg.items()})
  dp = run_json(python, DISPATCH, env) or {}
  out.update({k: v * 1e6 for k, v in dp.items()})
  ea = run_json(python, EAGER, env) or {}
  out.update({k: v if k == "mm512_np" else v * 1e6 for k, v in ea.items()})
  rp = run_json(python, REPLAY, env) or {}
  out.update({k: v * 1e6 for k, v in rp.items()})
  if (rp2 := run_json(python, REPLAY, dict(env, JIT="2"))) is not None: out["kernel_nograph"] = rp2["kernel"] * 1e6
  if (si := run_json(python, SYMINFER, env)) is not None: out["sym_infer"] = si * 1e6
  out.update({k: v * 1e3 for k, v in (run_json(python, PLAIN_STEP, env) or {}).items()})
  return out

def main() -> int:
  ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
  ap.add_argument("--ref", default=None, help="public tinygrad's python (default: $TINYGRAD_REF_PYTHON; unset: ours only)")
  ap.add_argument("--phases", action="store_true", help="only where an eager realize's host time goes (ours), phase by phase")
  args = ap.parse_args()
  if args.ref: os.environ["TINYGRAD_REF_PYTHON"] = args.ref
  env = user_env(DEV=os.environ.get("DEV", "CPU"))
  if args.phases:
    if (ph := run_json(sys.executable, PHASES, env)) is None: return 1
    print(f"eager realize phases, median us per call (device {env['DEV']}, load average {os.getloadavg()[0]:.2f}):")
    print(f"{'phase':26s}" + "".join(f"{c:>18s}" for c in ph))
    for k in next(iter(ph.values())): print(f"{k:26s}" + "".join(f"{col.get(k, float('nan')) * 1e6:18.1f}" for col in ph.values()))
    print(f"{'host (all but the launch)':26s}" + "".join(f"{sum(v for k, v in col.items() if k != 'launch (kernel)') * 1e6:18.1f}" for col in ph.values()))
    return 0
  load_before = os.getloadavg()
  run_json(sys.executable, IMPORT, env)   # writes our .pyc files once, as pip install does for a user
  ours = measure(sys.executable, env)
  ref_py = reference_python()
  if args.ref and not ref_py: print(f"--ref {args.ref}: cannot import tinygrad there; public tinygrad not measured", file=sys.stderr)
  # public tinygrad imports its own package: not our source tree (PYTHONPATH)
  ref = measure(ref_py, {k: v for k, v in env.items() if k != "PYTHONPATH"}) if ref_py else {}
  load = lambda la: " ".join(f"{x:.2f}" for x in la)
  print(f"device {env['DEV']}, load average {load(load_before)} before, {load(os.getloadavg())} after, on {os.cpu_count()} cores, "
        f"niceness {os.nice(0)}; ours {sys.executable}, tinygrad {ref_py or '(not measured)'}")
  print(f"{'figure':40s} {'ours':>10s} {'tinygrad':>10s} {'ratio':>8s} {'target':>10s}")
  for k, label in LABELS.items():
    o, r = ours.get(k), ref.get(k)
    rat = o / r if o is not None and r is not None and o > 0 and r > 0 else None   # (a slope under noise may come out <= 0)
    kind, want = TARGETS[k]
    got = o if kind == "abs" else rat
    verdict = "" if got is None else ("  met" if got <= want else "  missed")
    print(f"{label:40s} {o if o is not None else float('nan'):10.2f} {r if r is not None else float('nan'):10.2f} "
          f"{(f'{rat:.2f}x' if rat else '-'):>8s} {'<=' + str(want) + ('x' if kind == 'x' else ''):>10s}{verdict}")
  if not ref_py: print("public tinygrad not measured: pass --ref with its venv's python")
  sides = [("ours", ours)] + ([("tinygrad", ref)] if ref_py else [])
  failed = {name: [k for k in LABELS if k not in figs] for name, figs in sides}
  print(f"checks ({CHECKED}): " +
        "; ".join(f"{name} " + (f"FAILED or missing: {', '.join(f)}" if f else "all ok") for name, f in failed.items()))
  return 1 if failed["ours"] else 0

if __name__ == "__main__": sys.exit(main())
