"""BEAM search: pick a kernel's optimization actions by timing candidates on the device.

`beam_search(ast, device, width)` starts from the heuristics' choice, extends each of the `width`
best lists by every action that applies, compiles the candidates (in parallel threads: the C compilers are processes,
llvmlite releases the GIL), times each on freshly allocated buffers, and keeps the `width` fastest; it stops when a
step finds nothing faster, after BEAM_TIMEOUT seconds, or when no action applies. BEAM_MAX_CANDIDATES caps the
candidates timed per step. Where the heuristics map the kernel onto a tensor core (USE_TC), every candidate keeps it.
The result is cached on disk per (kernel, device, compiler, width, tensor core, code version), so a second run does not
search again; a cached result that no longer applies to the kernel is a miss.
"""
from __future__ import annotations
import time, itertools
from concurrent.futures import ThreadPoolExecutor
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.uop import upat as _upat
from tinygrad.viz import profile as _prof
from tinygrad.dtype import PtrDType
from tinygrad.helpers import DEBUG, BEAM_TIMEOUT, BEAM_MAX_CANDIDATES, BEAM_THREADS, IGNORE_BEAM_CACHE
from tinygrad.codegen.opt import Opt, OptOps, KernelOptError, apply_opts, heuristic_opts, kernel_ranges
from tinygrad.codegen.tc import heuristic_tc
from tinygrad.renderer import Renderer

# the moves tried at every step: (action, amount) on every axis of the right kind
ACTIONS: list[tuple[OptOps, int]] = [(OptOps.UPCAST, a) for a in (2, 3, 4, 8, 16)] + [(OptOps.UNROLL, a) for a in (2, 4, 8, 16, 32)] + \
  [(OptOps.SWAP, 0)] + [(OptOps.PADTO, a) for a in (8, 16)]
# on renderers with threads in a block: threads over a global axis, and a reduce shared by threads (validated per renderer)
GPU_ACTIONS: list[tuple[OptOps, int]] = [(OptOps.LOCAL, a) for a in (2, 4, 8, 16, 32, 64, 128)] + \
  [(OptOps.GROUP, a) for a in (4, 8, 16, 32, 64, 128, 256)] + [(OptOps.GROUPTOP, a) for a in (16, 32, 256)]

def candidate_moves(sink: UOp, opts: list[Opt], ren: Renderer | None = None) -> list[list[Opt]]:
  """Every one-action extension of `opts` that applies to the kernel (invalid ones raise KernelOptError and are dropped);
  LOCAL/GROUP/GROUPTOP only where `ren` has threads in a block."""
  cur = apply_opts(sink, opts, ren)
  glob, red = kernel_ranges(cur)
  out = []
  gpu = ren is not None and ren.has_local and bool(ren.local_max)
  for op, amt in ACTIONS + (GPU_ACTIONS if gpu else []):
    axes = range(len(red)) if op in (OptOps.UNROLL, OptOps.GROUP, OptOps.GROUPTOP) else range(len(glob)) if op is not OptOps.SWAP else range(1, len(glob))
    for ax in axes:
      o = Opt(op, ax, amt)
      try: apply_opts(cur, [o], ren)
      except KernelOptError: continue
      out.append(opts + [o])
  return out

def _time_prog(runner, bufs, runs: int = 3, cutoff: float = float("inf")) -> float:
  ts: list[float] = []
  for _ in range(runs):
    t = runner(bufs, {}, wait=True)
    ts.append(t if t is not None else float("inf"))
    if ts[-1] > 3 * cutoff: break   # far slower than the best so far: no need for more runs
  return min(ts)

def beam_search(ast: UOp, device: str, width: int) -> list[Opt] | None:
  """The fastest actions found for `ast` on `device` (see the module docstring); None: the heuristics decide (a kernel
  with symbolic sizes)."""
  # a VIZ record keeps the kernel's own passes, not those of every candidate timed here
  if (rec := _upat.TRACER) is not None:
    with rec.lock: rec.suspended += 1
  try: return _beam_search(ast, device, width)
  finally:
    if rec is not None:
      with rec.lock: rec.suspended -= 1

def _beam_search(ast: UOp, device: str, width: int) -> list[Opt] | None:
  from tinygrad.device import Device, Buffer
  from tinygrad.diskcache import diskcache_get, diskcache_put
  from tinygrad.codegen import PASSES, progcache
  dev = Device[device]
  ren = dev.renderer
  # the kernel as the optimizer sees it (after the passes before "optimize"): heuristics and moves read its indices. With
  # the heuristics' tensor core (USE_TC): every candidate leads with its TC action, so what is compiled, timed and cached is
  # that kernel (without it, a tensor-core matmul under BEAM ran without tensor cores, its moves checked on another kernel)
  sink, tc = ast, list[Opt]()
  for name, fxn in PASSES[:[n for n, _ in PASSES].index("optimize")]:
    if name == "tensor_cores": sink, tc = heuristic_tc(sink, ren)
    else: sink = fxn(sink, ren, None)
  # keyed by the code version too: another version's optimizer may number axes or validate actions differently
  try: version = progcache.code_version(ren)
  except progcache.Uncacheable: version = None
  ckey = (ast_key(ast), dev.device, dev.compiler_name, getattr(dev.compiler, "cachekey", None), width, repr(ren.ability_key()), repr(tc))
  row = {"version": version or "", "device": f"{dev.device}:{dev.compiler_name}"}
  if version is not None and IGNORE_BEAM_CACHE.value == 0 and (hit := _opts_from_json(diskcache_get("beam_search", ckey, **row))) is not None:
    try:
      # a row that no longer applies (edited by hand, or a stale one) is a miss: search again
      if hit[:len(tc)] != tc or any(o.op is OptOps.TC for o in hit[len(tc):]): raise KernelOptError(f"not led by {tc}")
      apply_opts(sink, hit[len(tc):], ren)
      return hit
    except Exception as e:
      if DEBUG >= 2: print(f"beam: the cached actions {hit} do not apply ({type(e).__name__}: {e}); searching again")
  if any(u.op is Ops.DEFINE_VAR for u in ast.toposort()): return None   # symbolic sizes: no values to time with
  args = sorted([u for u in ast.toposort() if u.op is Ops.DEFINE_GLOBAL], key=lambda u: u.arg)
  bufs = [Buffer(dev.device, max(d.size, 1), d.base).allocate() for d in (u.dtype for u in args) if isinstance(d, PtrDType)]
  # zeros, not what the memory held (the allocator reuses freed memory): every search times its candidates on the same
  # data, whatever ran before it (a CPU without flush-to-zero slows on denormal leftovers; a NaN can take another branch)
  for b in bufs: b.copyin(memoryview(bytearray(b.nbytes)))
  st = time.perf_counter()
  seen: set[tuple[Opt, ...]] = set()
  with ThreadPoolExecutor(max(1, BEAM_THREADS.value)) as pool:
    def step(cands: list[list[Opt]]) -> list[tuple[float, list[Opt]]]:
      todo = [c for c in dict.fromkeys(tuple(c) for c in cands) if c not in seen][:BEAM_MAX_CANDIDATES.value]
      seen.update(todo)
      # compile in parallel, time one after another (timings must not overlap); past the deadline the rest are skipped
      late = lambda: time.perf_counter() - st > BEAM_TIMEOUT.value
      progs = list(pool.map(lambda o: None if late() else _compile(ast, ren, tc + list(o), dev.device), todo))
      out: list[tuple[float, list[Opt]]] = []
      for r, o in zip(progs, todo):
        best_t = min([t for t, _ in out] + [t for t, _ in beam], default=float("inf"))
        t0 = time.perf_counter()
        out.append((_time_prog(r, bufs, cutoff=best_t) if r is not None and not late() else float("inf"), list(o)))
        if (prof := _prof.PROFILER) is not None: prof.span("beam candidate", "beam", t0, time.perf_counter(), opts=str(list(o)), us=out[-1][0]*1e6)
      return out
    # the heuristics' choice is the start (no actions at all costs seconds on a big kernel and never wins on a CPU)
    beam: list[tuple[float, list[Opt]]] = []
    beam = sorted(step([heuristic_opts(sink, ren)]), key=lambda x: x[0])[:width]
    best = beam[0]
    if DEBUG >= 2: print(f"beam: start {', '.join(f'{t*1e6:.1f} us {o}' for t, o in beam)}")
    while time.perf_counter() - st < BEAM_TIMEOUT.value:
      cands = list(itertools.chain.from_iterable(candidate_moves(sink, o, ren) for _, o in beam))
      if not cands: break
      timed = sorted(step(cands) + beam, key=lambda x: x[0])
      beam = timed[:width]
      if DEBUG >= 2: print(f"beam: {time.perf_counter()-st:6.2f}s {len(cands):4d} candidates, best {beam[0][0]*1e6:9.1f} us {beam[0][1]}")
      if beam[0][0] >= best[0]: break
      best = beam[0]
    # timings on a shared machine are noisy: the winner must beat the heuristics again, head to head, by 5%
    start = heuristic_opts(sink, ren)
    if best[1] != start:
      r0, r1 = _compile(ast, ren, tc + start, dev.device), _compile(ast, ren, tc + best[1], dev.device)
      if r0 is not None and r1 is not None:
        t0, t1 = float("inf"), float("inf")
        for _ in range(5):
          t0, t1 = min(t0, _time_prog(r0, bufs, 1)), min(t1, _time_prog(r1, bufs, 1))
        if DEBUG >= 2: print(f"beam: heuristics {t0*1e6:.1f} us, search {t1*1e6:.1f} us")
        if t1 > 0.95 * t0: best = (t0, start)
  if version is not None: diskcache_put("beam_search", ckey, [[o.op.name, o.axis, o.arg] for o in tc + best[1]], **row)
  return tc + best[1]

def ast_key(ast: UOp) -> str:
  """A stable text key for a kernel: the sha256 of its nodes in toposort order (op, dtype, arg, tag, source positions),
  so the cache stores no pickled objects."""
  import hashlib
  pos: dict[UOp, int] = {}
  h = hashlib.sha256()
  for u in ast.toposort():
    pos[u] = len(pos)
    h.update(f"{u.op.name}|{u.dtype!r}|{u.arg!r}|{u.tag!r}|{[pos[s] for s in u.src]}\n".encode())
  return h.hexdigest()

def _opts_from_json(data) -> list[Opt] | None:
  # a cached result is [[action name, axis, amount], ...]; anything else (another version's row) is a miss
  if not isinstance(data, list): return None
  out = []
  for o in data:
    if not (isinstance(o, list) and len(o) == 3 and o[0] in OptOps.__members__ and all(type(v) is int for v in o[1:])): return None
    out.append(Opt(OptOps[o[0]], o[1], o[2]))
  return out

def _compile(ast: UOp, ren, opts: list[Opt], device: str):
  from tinygrad.engine.realize import CompiledRunner
  from tinygrad.codegen import get_program
  try: return CompiledRunner(get_program(ast, ren, opts), device)
  except Exception as e:   # a candidate that fails to compile is skipped, never fatal
    if DEBUG >= 3: print(f"beam: {opts} failed: {type(e).__name__}: {e}")
    return None
