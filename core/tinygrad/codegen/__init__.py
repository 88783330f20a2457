"""Codegen: a kernel AST becomes a ProgramSpec through a PROGRAM UOp that grows one source at a time."""
from __future__ import annotations
import functools, threading
from typing import Callable
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, AxisType, smax, KernelInfo, kernel_name
from tinygrad.uop.upat import graph_rewrite, PatternMatcher
from tinygrad.uop import upat as _upat
from tinygrad.dtype import DType, dtypes
from tinygrad.helpers import prod, DEBUG, SPEC, EMULATED_DTYPES, TRANSCENDENTAL, gc_paused
from tinygrad.renderer import Renderer, ProgramSpec, thread_work
from tinygrad.codegen.linearize import linearize
from tinygrad.codegen.opt import Opt, OptOps, optimize
from tinygrad.codegen.tc import tensor_cores
from tinygrad.codegen.gpuopt import lower_groups
from tinygrad.codegen.vectorize import vectorize
from tinygrad.codegen.rowcache import cache_rows
from tinygrad.codegen.stream import stream_stores

def _rsize(r: UOp) -> int | UOp: return r.src[0].arg if r.src[0].op is Ops.CONST else r.src[0]   # a range's size (symbolic: a UOp)

def global_to_special(sink: UOp, ren: Renderer) -> UOp:
  """GPU-style launch: the global loops become SPECIAL launch indices (at most 3; leading ones are merged)."""
  granges = sorted([u for u in sink.toposort() if u.op is Ops.RANGE and u.arg[1] is AxisType.GLOBAL], key=lambda r: r.arg[0])
  # LOCAL ranges (a tensor core's lanes) are the thread index inside a block, in the order of their axes
  lranges = sorted([u for u in sink.toposort() if u.op is Ops.RANGE and u.arg[1] is AxisType.LOCAL], key=lambda r: r.arg[0])
  if len(lranges) > 3: raise RuntimeError(f"kernel has {len(lranges)} local axes; at most 3 launch dimensions exist")
  lsub = {r: UOp(Ops.SPECIAL, dtypes.index, (UOp.const(dtypes.index, r.src[0].arg),), f"lidx{i}").cast(r.dtype) for i, r in enumerate(lranges)}
  if lsub: sink = sink.substitute(lsub)
  if not granges: return sink
  groups: list[list[UOp]] = [granges[:len(granges)-2], granges[-2:-1], granges[-1:]] if len(granges) > 3 else [[r] for r in granges]
  groups = [g for g in groups if g]
  gmax = ren.global_max or ()
  def fits(grps: list[list[UOp]]) -> bool:   # a symbolic size must fit at its largest value
    return all(dim >= len(gmax) or smax(prod(_rsize(r) for r in g)) <= gmax[dim] for dim, g in enumerate(reversed(grps)))
  # a launch axis past the device's limit (y, z are often 65535): merge everything into x, which is the largest
  if not fits(groups): groups = [granges]
  if not fits(groups): raise RuntimeError(f"kernel needs {smax(prod(_rsize(r) for r in granges))} launch indices; {ren.device} allows {gmax[0]} on x")
  sub: dict[UOp, UOp] = {}
  for dim, grp in enumerate(reversed(groups)):
    sizes = [_rsize(r) for r in grp]
    total = prod(sizes)
    # a symbolic launch size is an expression of the kernel's variables, evaluated at launch (ProgramSpec.launch_dims)
    special = UOp(Ops.SPECIAL, dtypes.index, (UOp.const(dtypes.index, total) if isinstance(total, int) else total.cast(dtypes.index),), f"gidx{dim}")
    acc: int | UOp = 1
    for r, sz in zip(reversed(grp), reversed(sizes)):
      # launch indices are int32 on every GPU; an int64 range (codegen/index64.py) gets its value cast up
      sp = special.cast(r.dtype)
      sub[r] = ((sp // acc if not isinstance(acc, int) or acc != 1 else sp) % sz if len(grp) > 1 else sp)
      acc = acc * sz
  return sink.substitute(sub)

def narrow_masked_store(sink: UOp) -> UOp:
  """A write into part of a buffer (setitem, an assign into a slice) is a kernel over the whole buffer that stores
  where(in_box, value, the element already there): its loops shrink to the box the mask's range bounds give, so it reads
  and writes only the part it changes (`t[2] = v` on a 1000x1000 t: 1000 elements, not 1e6). Elements outside the box
  kept their value anyway; bounds other than `range < k` and `!(range < k)` stay in the mask."""
  if len(sink.src) != 1 or (st := sink.src[0]).op is not Ops.STORE or (val := st.src[1]).op is not Ops.WHERE: return sink
  if isinstance(sink.arg, KernelInfo) and sink.arg.opts_to_apply: return sink   # actions given for its loops as they are
  if val.src[2].op is not Ops.LOAD or val.src[2].src != (st.src[0],): return sink   # the else is this very element, unchanged
  box: dict[UOp, list[int]] = {}
  conds, todo = [], [val.src[0]]
  while todo:
    if (c := todo.pop()).op is Ops.AND: todo.extend(c.src)
    else: conds.append(c)
  for c in conds:
    neg = c.op is Ops.CMPNE and c.src[1].op is Ops.CONST and c.src[1].arg is True
    lt = c.src[0] if neg else c
    if lt.op is not Ops.CMPLT or (r := lt.src[0]).op is not Ops.RANGE or lt.src[1].op is not Ops.CONST or r.src[0].op is not Ops.CONST: continue
    if r.arg[1] is AxisType.REDUCE: continue
    lo, hi = box.setdefault(r, [0, r.src[0].arg])
    box[r] = [max(lo, lt.src[1].arg), hi] if neg else [lo, min(hi, lt.src[1].arg)]
  sub = {r: UOp(Ops.RANGE, r.dtype, (UOp.const(r.src[0].dtype, hi - lo),), r.arg) + lo for r, (lo, hi) in box.items() if 0 < hi - lo < r.src[0].arg}
  return graph_rewrite(sink.substitute(sub), _symbolic(), name="narrow_masked_store") if sub else sink

def _symbolic() -> PatternMatcher:
  from tinygrad.uop.symbolic import sym
  return sym

def _decompositions(ren: Renderer) -> PatternMatcher:
  # TRANSCENDENTAL>=2: exp2/log2/sin from our decompositions even where the renderer has them (the device's math library out of the answer)
  ops = frozenset(ren.code_for_op) - (_TRANSCENDENTAL_OPS if TRANSCENDENTAL >= 2 else frozenset())
  return _lowerings(ops, bool(_deferred(ren)))
_TRANSCENDENTAL_OPS = frozenset({Ops.EXP2, Ops.LOG2, Ops.SIN})
@functools.cache
def _lowerings(ops: frozenset[Ops], defer_exp2: bool = False, vector_exp2: bool = False) -> PatternMatcher:
  # one table per set of ops, built once: a new PatternMatcher per kernel compiled its rules again (~1 ms a kernel)
  from tinygrad.codegen.decompositions import get_late_rewrite_patterns, exp2_later, exp2_vector
  if defer_exp2: return exp2_later(Ops.LDEXP in ops) + get_late_rewrite_patterns(ops | {Ops.EXP2})
  return (exp2_vector(Ops.LDEXP in ops) if vector_exp2 else PatternMatcher([])) + get_late_rewrite_patterns(ops)

def _deferred(ren: Renderer) -> frozenset[Ops]:
  # a float32 exp2 the renderer lacks but packs into vectors is decomposed after the vectorize pass, once per vector: per
  # lane, ViT-Ti's GELU matmul built 256 copies of it (~30 ops each) that the vectorize pass packed again (the program is
  # the same either way: the lanes' ops, packed, are the vector's)
  return frozenset({Ops.EXP2}) if Ops.EXP2 in ren.vector_ops and Ops.EXP2 not in ren.code_for_op else frozenset()
def _late_decompositions(sink: UOp, ren: Renderer) -> UOp:
  if not _deferred(ren) or not any(u.op is Ops.EXP2 for u in _nodes(sink)): return sink
  return graph_rewrite(sink, _lowerings(frozenset(ren.code_for_op), False, True))

def _native_fp8(ren: Renderer) -> frozenset[DType]:
  # EMULATED_DTYPES lists dtypes to compute in the core's software form even where the renderer has them natively
  return ren.native_fp8 - frozenset(EMULATED_DTYPES.tolist(dtypes))
def _lower_fp8(sink: UOp, ren: Renderer) -> UOp:
  from tinygrad.codegen.decompositions import lower_fp8
  return lower_fp8(sink, _native_fp8(ren), _nodes(sink))
def _fp8_retyped(u: UOp, ren: Renderer) -> UOp:
  from tinygrad.codegen.decompositions import _fp8_dt
  return u.replace(dtype=_fp8_dt(u.dtype, frozenset(dtypes.fp8s) - _native_fp8(ren)))
def _numerics() -> PatternMatcher:
  from tinygrad.codegen.decompositions import pm_numerics
  return pm_numerics

def _keep_bits() -> PatternMatcher:
  from tinygrad.codegen.decompositions import pm_keep_bits
  return pm_keep_bits

# The late passes (fp8, numerics, decompositions, keep_bits, a renderer's matchers) each walked the whole upcast kernel and,
# in most kernels, rewrote nothing: ~10% of ViT-Ti's codegen. One toposort of the kernel, kept while the passes return it
# unchanged, tells each whether any node can match its rules at all (PatternMatcher.may_fire); kept per thread (BEAM's
# threads render kernels side by side) and dropped when the kernel is done
_topo = threading.local()
def _nodes(sink: UOp) -> dict[UOp, None]:
  if (m := getattr(_topo, "last", None)) is None or m[0] is not sink: m = _topo.last = (sink, sink.toposort())
  return m[1]
def _rewrite(sink: UOp, pm: PatternMatcher | None) -> UOp:
  # graph_rewrite(sink, pm), which returns sink itself where no rule rewrites a node of it (VIZ: always run, to record it)
  if pm is None or (_upat.TRACER is None and not pm.may_fire(_nodes(sink))): return sink
  return graph_rewrite(sink, pm)

def _verify(sink: UOp) -> UOp:
  if SPEC:
    from tinygrad.uop.spec import type_verify, spec_kernel
    type_verify(sink, spec_kernel)
  return sink

# the pipeline: (name, pass), in order; each pass maps (kernel SINK, renderer, opts) to a new SINK
Pass = tuple[str, Callable[[UOp, Renderer, "list[Opt] | None"], UOp]]
PASSES: list[Pass] = [
  ("verify_ast", lambda s, r, o: _verify(s)),                                                  # catch malformed kernels before work
  ("pre_matcher", lambda s, r, o: _rewrite(s, r.pre_matcher)),                                 # device rewrites on the raw kernel
  ("simplify", lambda s, r, o: graph_rewrite(s, _symbolic(), name="simplify")),                # fold index arithmetic
  ("narrow_masked_store", lambda s, r, o: narrow_masked_store(s)),                              # a write into part of a buffer loops over that part
  ("tensor_cores", lambda s, r, o: tensor_cores(s, r, o)),                                      # matmuls onto WMMA (TC action)
  ("optimize", lambda s, r, o: optimize(s, r, o if o is None else [x for x in o if x.op is not OptOps.TC])),   # upcast/unroll: heuristics or given
  ("lower_groups", lambda s, r, o: lower_groups(s, r)),                                        # grouped reduces: shared memory + barrier
  ("global_to_special", lambda s, r, o: global_to_special(s, r) if r.has_local else s),        # GPU launch indices replace loops
  ("simplify_opt", lambda s, r, o: graph_rewrite(s, _symbolic())),                             # fold what the splits added
  ("fp8", lambda s, r, o: _lower_fp8(s, r)),                                                  # fp8 values as bytes, casts as uint32/float32 ops; float64 narrowed once
  ("numerics", lambda s, r, o: _rewrite(s, _numerics())),                                     # shifts past the width, bool +,*,max: numpy's answer; float->int casts saturate
  ("decompositions", lambda s, r, o: _rewrite(s, _decompositions(r))),                         # lower ops the renderer lacks
  ("extra_matcher", lambda s, r, o: _rewrite(s, r.extra_matcher)),                             # device quirks
  ("vectorize", lambda s, r, o: vectorize(s, r)),                                              # lanes -> SIMD ops the renderer has
  ("late_decompositions", lambda s, r, o: _late_decompositions(s, r)),                         # exp2 on the vectors it packed
  ("cache_rows", lambda s, r, o: cache_rows(s, r)),                                            # a row's summand stored by its reduce, not computed again
  ("stream_stores", lambda s, r, o: stream_stores(s, r)),                                      # a large output written once: past the caches
  ("keep_bits", lambda s, r, o: _rewrite(s, _keep_bits()) if r.f16_bit_moves else s),         # half/bfloat16 copies and selects move bits (NaN payloads)
]

def full_rewrite(ast: UOp, ren: Renderer, opts: list[Opt] | None = None) -> list[UOp]:
  """The kernel after every pass, linearized."""
  sink = ast
  try:
    for name, fxn in PASSES:
      if (rec := _upat.TRACER) is None: sink = fxn(sink, ren, opts)
      else:   # VIZ: each pass is a step of the kernel, with the rewrites it ran inside it
        i = rec.open(name, "pass", sink)
        try: sink = fxn(sink, ren, opts)
        finally: rec.close(i, sink)
    # a buffer whose every use folded away (a load under an always-false gate) stays a parameter: the runtime passes it
    # (matched by index: a pass may retype a kept one, as fp8's become uint8's)
    kept = {u.arg for u in _nodes(sink) if u.op is Ops.DEFINE_GLOBAL}
  finally: _topo.last = None
  lost = tuple(_fp8_retyped(u, ren) for u in ast.toposort() if u.op is Ops.DEFINE_GLOBAL and u.arg not in kept)
  if lost: sink = sink.replace(src=sink.src + lost)
  uops = linearize(sink, mulacc=Ops.MULACC in ren.code_for_op)
  if DEBUG >= 5:
    for i, u in enumerate(uops): print(f"{i:4d} {u.op!s:20s} {u.dtype!r:30s} {u.arg!r}")
  return uops

def _per_call(ren: Renderer) -> Renderer:
  """A shallow copy of `ren` for one render: `render` keeps its working state (names, lines, counters) on the instance,
  and one renderer serves every thread (BEAM's compile threads, several threads using Tensors), whose state interleaved
  into corrupt source. Shared containers (a mock driver's record) stay shared; copy.copy would rebuild it from abilities."""
  r = object.__new__(type(ren))
  r.__dict__.update(ren.__dict__)
  return r

def get_program(ast: UOp, ren: Renderer, opts: list[Opt] | None = None, compile: bool = True) -> ProgramSpec:
  """Render (and, when `compile` and the renderer has a compiler, compile) a kernel AST for `ren`; uncompiled, `lib` is None."""
  if ast.op is not Ops.SINK: raise ValueError(f"get_program needs a kernel SINK, got {ast.op}")
  name = kernel_name(ast)
  if opts is None and isinstance(ast.arg, KernelInfo) and ast.arg.opts_to_apply is not None: opts = list(ast.arg.opts_to_apply)
  prg = UOp(Ops.PROGRAM, src=(ast, UOp(Ops.DEVICE, arg=ren.device)))
  k = rec.begin_kernel(name, ren.device, type(ren).__name__, ast) if (rec := _upat.TRACER) is not None else None
  uops: list[UOp] = []
  src = ""
  try:
    with gc_paused():
      uops = full_rewrite(ast, ren, opts)
      # a kernel takes its variables by name: two Variables of one name (other ranges) would be one argument twice
      if len(dv := [u for u in uops if u.op is Ops.DEFINE_VAR]) > 1 and len({u.arg[0] for u in dv}) != len(dv):
        a, b = next((a, b) for a in dv for b in dv if a is not b and a.arg[0] == b.arg[0])
        raise ValueError(f"two Variables named {a.arg[0]!r} in one kernel, ranges [{a.arg[1]}, {a.arg[2]}] and [{b.arg[1]}, {b.arg[2]}]: "
                         "make a Variable once and bind that one, or give each its own name")
      src = _per_call(ren).render(uops, name)
  finally:
    if rec is not None: rec.end_kernel(k, uops, src)
  prg = prg.replace(src=prg.src + (UOp(Ops.LINEAR, src=tuple(uops)),))
  prg = prg.replace(src=prg.src + (UOp(Ops.SOURCE, arg=src),))
  if compile and ren.compiler is not None: prg = prg.replace(src=prg.src + (UOp(Ops.BINARY, arg=ren.compiler.compile_cached(src)),))
  if DEBUG >= 4: print(src)
  spec = ProgramSpec.from_uop(prg)
  if ren.has_threads: spec.thread_work = thread_work(uops, ren.split_range(uops))   # for the runtime's thread count
  if rec is not None: rec.name_kernel(k, spec.name)
  return spec
