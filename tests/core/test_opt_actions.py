"""Optimization actions (codegen/opt.py) forced onto real kernels, odd sizes included (1, primes, sizes the amount does not
divide), checked against numpy on every device given; and the validation that rejects an action before it changes code."""
import numpy as np, pytest
from tinygrad import Tensor, Device
import tinygrad.codegen.opt as optmod
from tinygrad.codegen.opt import Opt, OptOps, KernelOptError, apply_opts, kernel_ranges
from tinygrad.engine.realize import method_cache
from tinygrad.helpers import CACHELEVEL

DEVICES = ["CPU", "CPU:CLANG", "PYTHON"]

def _dev(name):
  try: Device[name]
  except Exception as e: pytest.skip(f"{name} unavailable: {e}")
  return name

ELEMENTWISE = [[Opt(OptOps.UPCAST, 0, 4)], [Opt(OptOps.UPCAST, 0, 8)], [Opt(OptOps.PADTO, 0, 8), Opt(OptOps.UPCAST, 0, 8)],
               [Opt(OptOps.THREAD, 0, 2)], [Opt(OptOps.THREAD, 0, 2), Opt(OptOps.UPCAST, 1, 2)], [Opt(OptOps.PADTO, 0, 16)]]
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("opts", ELEMENTWISE, ids=str)
@pytest.mark.parametrize("n", [1, 7, 16, 97, 1000])
def test_elementwise(forced, device, opts, n):
  rng = np.random.default_rng(n)
  a, b, c = (rng.standard_normal(n).astype(np.float32) for _ in range(3))
  applied = forced(opts)
  got = (Tensor(a, device=_dev(device)) * Tensor(b, device=device) + Tensor(c, device=device)).numpy()
  np.testing.assert_allclose(got, a*b+c, rtol=1e-6, atol=1e-6)
  # the sizes each action list applies to: a divisible size for UPCAST/THREAD, a non-divisible one for PADTO
  should = {0: {16, 1000}, 1: {16, 1000}, 2: {7, 97}, 3: {16, 1000}, 4: {16, 1000}, 5: {7, 97, 1000}}
  assert bool(applied) == (n in should[ELEMENTWISE.index(opts)])

MATMUL = [[Opt(OptOps.UPCAST, 1, 8), Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.UNROLL, 0, 4)], [Opt(OptOps.SWAP, 0, 1)],
          [Opt(OptOps.PADTO, 1, 8), Opt(OptOps.UPCAST, 1, 8), Opt(OptOps.UNROLL, 0, 2)], [Opt(OptOps.THREAD, 1, 2), Opt(OptOps.UPCAST, 0, 2)],
          [Opt(OptOps.PADTO, 0, 4), Opt(OptOps.UPCAST, 0, 4), Opt(OptOps.SWAP, 0, 1)], [Opt(OptOps.UNROLL, 0, 16)],
          [Opt(OptOps.PEEL, 0, 4), Opt(OptOps.UNROLL, 0, 4), Opt(OptOps.UPCAST, 0, 7)]]
@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("opts", MATMUL, ids=str)
@pytest.mark.parametrize("mkn", [(1, 1, 1), (7, 13, 5), (16, 32, 16), (31, 16, 17)])
def test_matmul(forced, device, opts, mkn):
  m, k, n = mkn
  rng = np.random.default_rng(m*k*n)
  a, b = rng.standard_normal((m, k)).astype(np.float32), rng.standard_normal((k, n)).astype(np.float32)
  applied = forced(opts)
  got = (Tensor(a, device=_dev(device)) @ Tensor(b, device=device)).numpy()
  np.testing.assert_allclose(got, a @ b, rtol=1e-4, atol=1e-4)
  if mkn == (16, 32, 16) and MATMUL.index(opts) in (0, 1, 5): assert applied, "the action should apply to this kernel"

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("opts", [[Opt(OptOps.UNROLL, 0, 8)], [Opt(OptOps.UNROLL, 0, 16), Opt(OptOps.UPCAST, 0, 2)],
                                  [Opt(OptOps.PADTO, 0, 4)], [Opt(OptOps.THREAD, 0, 3)], [Opt(OptOps.PEEL, 0, 5), Opt(OptOps.UNROLL, 0, 5)]], ids=str)
@pytest.mark.parametrize("shape", [(1, 1), (3, 16), (6, 64), (13, 48)])
def test_row_reduces(forced, device, opts, shape):
  x = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
  forced(opts)
  t = Tensor(x, device=_dev(device))
  np.testing.assert_allclose(t.sum(1).numpy(), x.sum(1), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(t.max(1).numpy(), x.max(1))

@pytest.mark.parametrize("device", DEVICES)
@pytest.mark.parametrize("opts", [[Opt(OptOps.PEEL, 0, 4)], [Opt(OptOps.PEEL, 1, 3), Opt(OptOps.UNROLL, 1, 3)],
                                  [Opt(OptOps.PEEL, 1, 4), Opt(OptOps.UNROLL, 0, 13)]], ids=str)
def test_peel_a_reduce_over_two_axes(forced, device, opts):
  # the tail steps of the inner axis are still reduced over the outer one (inside its loop); the outer axis is not cut
  x = np.random.default_rng(2).standard_normal((3, 13, 7)).astype(np.float32)
  applied = forced(opts)
  t = Tensor(x, device=_dev(device))
  np.testing.assert_allclose(t.sum((1, 2)).numpy(), x.sum((1, 2)), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(t.max((1, 2)).numpy(), x.max((1, 2)))
  assert len(applied) == (0 if opts[0].axis == 0 else 2), "the kernels (sum, max) take the actions where they fit"

def _mm_ast(m, k, n):
  return (Tensor.empty(m, k, device="NULL") @ Tensor.empty(k, n, device="NULL")).schedule()[-1].ast

@pytest.mark.parametrize("opt, msg", [
  (Opt(OptOps.UPCAST, 0, 4), "must be >1 and divide"), (Opt(OptOps.UPCAST, 5, 2), "out of range"),
  (Opt(OptOps.UNROLL, 0, 3), "must be >1 and divide"), (Opt(OptOps.UNROLL, 1, 2), "out of range"),
  (Opt(OptOps.PADTO, 0, 1), "must be >1"), (Opt(OptOps.PADTO, 2, 8), "out of range"),
  (Opt(OptOps.SWAP, 1, 1), "two different"), (Opt(OptOps.SWAP, 0, 3), "out of range"),
  (Opt(OptOps.THREAD, 0, 2), "proper divisor"), (Opt(OptOps.THREAD, 1, 6), "proper divisor"),
  (Opt(OptOps.PEEL, 0, 13), "not divide"), (Opt(OptOps.PEEL, 0, 14), "at most the size"), (Opt(OptOps.PEEL, 1, 2), "out of range")])
def test_invalid_actions_raise(opt, msg):
  ast = _mm_ast(7, 13, 6)   # globals (7, 6), reduce 13: primes where the amounts do not divide
  from tinygrad.uop.upat import graph_rewrite
  from tinygrad.uop.symbolic import sym
  with pytest.raises(KernelOptError, match=msg): apply_opts(graph_rewrite(ast, sym), [opt])

def test_padto_divisible_is_rejected_and_swap_reorders():
  from tinygrad.uop.upat import graph_rewrite
  from tinygrad.uop.symbolic import sym
  ast = graph_rewrite(_mm_ast(8, 16, 6), sym)
  with pytest.raises(KernelOptError, match="not divide"): apply_opts(ast, [Opt(OptOps.PADTO, 0, 4)])
  glob, _ = kernel_ranges(apply_opts(ast, [Opt(OptOps.SWAP, 0, 1)]))
  assert [r.src[0].arg for r in glob] == [6, 8]   # the 6-wide axis now runs outermost
  glob, _ = kernel_ranges(apply_opts(ast, [Opt(OptOps.THREAD, 1, 3)]))
  assert [r.src[0].arg for r in glob] == [3, 8, 2]
  glob, _ = kernel_ranges(apply_opts(ast, [Opt(OptOps.PADTO, 1, 4)]))
  assert [r.src[0].arg for r in glob] == [8, 8]

def test_padto_gates_stores_and_clamps_loads():
  # the padded rows (7 -> 8) store nothing; their loads read the last real row instead, ungated (a gate per load in the
  # reduce loop cost a padded matmul tile more than its extra accumulators gained)
  from tinygrad.uop import Ops
  from tinygrad.uop.upat import graph_rewrite
  from tinygrad.uop.symbolic import sym
  k = apply_opts(graph_rewrite(_mm_ast(7, 13, 6), sym), [Opt(OptOps.PADTO, 0, 4)])
  stores = {u.src[0] for u in k.toposort() if u.op is Ops.STORE}
  idx = [u for u in k.toposort() if u.op is Ops.INDEX and u.src[0].op is Ops.DEFINE_GLOBAL]
  assert stores and all(len(u.src) == 3 for u in stores), "every store is gated"
  loads = [u for u in idx if u not in stores]
  assert len(loads) == 2 and all(len(u.src) == 2 for u in loads), "no load is"
  assert any(u.op is Ops.WHERE for x in loads for u in x.src[1].toposort()), "the load of the padded axis' operand is clamped"

def test_padto_in_place_update(forced):
  # a kernel that loads and stores one buffer's element (x += 1 under PADTO): that access stays gated, load and store
  forced([Opt(OptOps.PADTO, 0, 8)])
  x = Tensor(np.arange(13, dtype=np.float32)).realize()
  x += 1
  np.testing.assert_array_equal(x.numpy(), np.arange(13, dtype=np.float32) + 1)

def test_optimize_reuses_the_actions_the_heuristics_applied():
  # hand_coded_opts applies each action to choose the next; optimize then applies the chosen list to the same kernel:
  # those repeats are cache hits of the pure (kernel, action) -> kernel map, and the kernel is the one a fresh apply builds.
  # Only what the heuristics never applied (the last action, a SWAP that nothing after it needed) is new work
  from tinygrad.uop.upat import graph_rewrite
  from tinygrad.uop.symbolic import sym
  from tinygrad.codegen import opt as optmod
  ren = Device[_dev("CPU")].renderer
  ast = graph_rewrite(_mm_ast(16, 32, 16), sym)
  optmod._apply_cpu_opt.cache_clear()
  chosen = optmod.heuristic_opts(ast, ren)
  assert chosen and all(o.op not in optmod.GPU_OPS for o in chosen)
  misses = optmod._apply_cpu_opt.cache_info().misses
  got = optmod.optimize(ast, ren)
  unapplied = 1 + sum(o.op is OptOps.SWAP for o in chosen)
  assert misses > 0 and optmod._apply_cpu_opt.cache_info().misses - misses <= unapplied
  optmod._apply_cpu_opt.cache_clear()
  assert got is apply_opts(ast, chosen)

def _count_whole_kernel_rewrites(monkeypatch) -> list:
  """The kernels (SINKs of STOREs) graph_rewrite is called on from now on; index-expression rewrites are not counted."""
  import tinygrad.uop.upat as upat
  from tinygrad.uop import Ops
  whole, orig = [], upat.graph_rewrite
  def counting(sink, *a, **k):
    if any(s.op is Ops.STORE for s in sink.src): whole.append(sink)
    return orig(sink, *a, **k)
  monkeypatch.setattr(upat, "graph_rewrite", counting)
  return whole

def test_heuristics_simplify_the_split_they_pick_once(monkeypatch):
  # a packed matmul's merged lane axis: split_lanes tries splits on the index expressions only, and the whole kernel is
  # simplified once, for the split it picks (Python codegen time: each whole-kernel rewrite of the upcast kernel costs
  # 0.2-1 s, and trying three amounts on the whole kernel was most of a ViT's cold start)
  from tinygrad import Device
  from tinygrad.uop import Ops
  from tinygrad.codegen.opt import hand_coded_opts
  from tinygrad.helpers import Context
  with Context(MATMUL_PACK=1):
    asts = [ei.ast for ei in (Tensor.empty(64, 512) @ Tensor.empty(512, 1024)).schedule() if ei.ast.op is Ops.SINK]
  mm = next(a for a in asts if any(u.op is Ops.REDUCE for u in a.toposort()))
  whole = _count_whole_kernel_rewrites(monkeypatch)
  opts = hand_coded_opts(mm, Device[Device.DEFAULT].renderer)
  assert opts and opts[0].op.name == "UPCAST", opts
  assert len(whole) == 1, f"{len(whole)} whole-kernel rewrites for {opts}"

def test_a_merged_axis_that_never_splits_costs_no_whole_kernel_rewrite(monkeypatch):
  # j -> (j%3)*64 + j//3 (a transposed reshape): no lane count makes it affine, and finding that out touches only the
  # index expressions, one lane at a time (it used to simplify the whole upcast kernel once per amount tried)
  from tinygrad import Device
  from tinygrad.uop import Ops
  from tinygrad.codegen.opt import hand_coded_opts
  t = Tensor.empty(4, 3, 64).permute(0, 2, 1).reshape(4, 192) + Tensor.empty(4, 192)
  ast = next(ei.ast for ei in t.schedule() if ei.ast.op is Ops.SINK)
  whole = _count_whole_kernel_rewrites(monkeypatch)
  opts = hand_coded_opts(ast, Device[Device.DEFAULT].renderer)
  assert not any(o.op.name == "UPCAST" and o.axis == 1 for o in opts), opts
  assert whole == [], f"{len(whole)} whole-kernel rewrites for {opts}"

@pytest.mark.parametrize("shape,perm", [((64, 48), (1, 0)), ((4, 16, 8, 12), (0, 2, 3, 1)), ((37, 20), (1, 0)), ((20, 37), (1, 0)),
                                        ((6, 8, 5), (2, 1, 0)), ((1, 16), (1, 0))])
def test_transposing_copy_reads_rows_as_vectors(shape, perm, monkeypatch):
  # an elementwise transpose upcasts the stores' axis and, where the loads run along another axis, that one too (a tile:
  # the values each line read brings are used at once, not one per pass over the rows); the values are numpy's for any size
  import tinygrad.codegen.opt as opt_mod
  from tinygrad.codegen.opt import hand_coded_opts, TRANSPOSE_ROWS
  from tinygrad.plugin_api import kernels
  a = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
  t = (Tensor(a, device="CPU").realize().permute(perm) * 2).contiguous()
  ren = Device["CPU"].renderer
  (k,) = kernels(t)
  assert len([o for o in hand_coded_opts(k, ren) if o.op is OptOps.UPCAST]) <= 1, "a small transpose is tiled (compile time)"
  monkeypatch.setattr(opt_mod, "TRANSPOSE_BYTES", 0)   # (as a large one is)
  opts = hand_coded_opts(k, ren)
  # (the stores' axis splits into vectors, the loads' axis is another one and splits into tile rows)
  tiled = ren.vector_bytes > 0 and perm[-1] != len(shape) - 1 and shape[perm[-1]] % 2 == 0 and shape[-1] % TRANSPOSE_ROWS[-1] == 0
  assert (len([o for o in opts if o.op is OptOps.UPCAST]) == 2) == tiled, opts
  np.testing.assert_array_equal(t.numpy(), a.transpose(perm) * 2)

# BEAM keeps the fastest candidate it times and checks no output: a move that computes less (a dropped tail, a reduce cut
# short) would win. Random walks of the moves it explores (candidate_moves, from nothing or from the heuristics' choice)
# must give the heuristics' result on kernels of every kind, odd sizes included
_R = np.random.default_rng(5)
_A, _B, _C, _I = (_R.standard_normal(s).astype(np.float32) for s in ((7, 13), (13, 9), (5, 3, 11), (2, 3, 7, 7)))
_N = _R.integers(-50, 50, (6, 10)).astype(np.int32)
WALK_PROGRAMS = {
  "matmul": lambda T: (T(_A) @ T(_B) + T(_B)[0]).relu(), "sum_axes": lambda T: T(_C).sum((0, 2)), "softmax": lambda T: T(_C).softmax(-1),
  "int_max_floordiv": lambda T: (T(_N) * 3 - 7) // 2 + T(_N).max(0), "argmax": lambda T: T(_C).argmax(-1), "cumsum": lambda T: T(_A).cumsum(1),
  "conv": lambda T: T(_I).conv2d(T(_I)[:2, :, :3, :3], padding=1), "half": lambda T: T(_C).half().sum(1).float(),
  "pad_flip": lambda T: T(_A).pad(((1, 2), (3, 0))).flip(1).sum(0), "permute": lambda T: T(_C).permute(2, 0, 1).contiguous() * 2,
}
@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
@pytest.mark.parametrize("name", WALK_PROGRAMS)
def test_random_walks_of_beam_moves_keep_the_result(monkeypatch, device, name):
  import random
  from tinygrad.codegen.search import candidate_moves
  T = lambda a: Tensor(a, device=_dev(device))
  method_cache.clear()
  want = WALK_PROGRAMS[name](T).numpy()
  orig, walks = optmod._heuristic, []
  def walk(sink, ren):
    opts = list(orig(sink, ren)[0]) if rng.random() < 0.5 else []
    for _ in range(rng.randint(1, 5)):
      if not (c := candidate_moves(sink, opts, ren)): break
      opts = rng.choice(c)
    walks.append(opts)
    return opts, apply_opts(sink, opts, ren), len(opts)
  monkeypatch.setattr(optmod, "_heuristic", walk)
  monkeypatch.setattr(CACHELEVEL, "value", 0)
  for seed in range(3):
    rng = random.Random(seed)
    method_cache.clear()
    got = WALK_PROGRAMS[name](T).numpy()
    if got.dtype.kind in "iub": np.testing.assert_array_equal(got, want, err_msg=str(walks))
    else: np.testing.assert_allclose(got, want, rtol=1e-3 if name == "half" else 1e-5, atol=1e-3 if name == "half" else 1e-5, err_msg=str(walks))
  assert any(walks), "the walks applied moves"
  method_cache.clear()

def _matmul_opts(ashape, bshape, values=None):
  # the heuristics' actions for the matmul kernel of a @ b, as the pipeline asks them (after the passes before "optimize")
  from tinygrad.codegen import PASSES
  from tinygrad.codegen.opt import hand_coded_opts
  from tinygrad.uop import Ops
  ren = Device["CPU"].renderer
  a, b = (Tensor(v, device="CPU") if v is not None else Tensor.empty(*sh, device="CPU") for v, sh in zip(values or (None, None), (ashape, bshape)))
  sink = next(ei.ast for ei in (a @ b).schedule() if ei.ast.op is Ops.SINK and any(u.op is Ops.REDUCE for u in ei.ast.toposort()))
  for name, fn in PASSES[:[n for n, _ in PASSES].index("optimize")]: sink = fn(sink, ren, None)
  return hand_coded_opts(sink, ren), a @ b

@pytest.mark.parametrize("ashape,bshape", [((512, 512), (512, 197)), ((1024, 1024), (1024, 197)), ((2048, 256), (256, 99)), ((8, 197, 64), (8, 64, 197)), ((2, 1, 128, 300), (3, 300, 75))])
def test_a_matmul_of_odd_columns_gets_a_vector_axis(ashape, bshape):
  # a column count with no half-vector divisor left the kernel no axis to vectorize in place (scalar: 512x512 @ 512x197
  # at 12 GFLOPS where 192 columns ran 254): its right operand is packed into panels, the columns padded
  ren = Device["CPU"].renderer
  if ren.vector_bytes < 16: pytest.skip("the CPU renderer has no vectors of 4 floats here")
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal(ashape).astype(np.float32), rng.standard_normal(bshape).astype(np.float32)
  opts, t = _matmul_opts(ashape, bshape, (a, b))
  lanes = ren.vector_bytes // 4
  assert opts[0].op is OptOps.UPCAST and opts[0].arg >= lanes // 2, opts
  np.testing.assert_allclose(t.numpy(), a @ b, rtol=1e-4, atol=1e-3)

@pytest.mark.parametrize("m", [11, 13, 17, 25, 197])
def test_a_matmul_of_prime_rows_is_register_blocked(m):
  # rows with no small divisor are padded to a tile (of 8 where that wastes at most 1/8, else of 4): unpadded, 13 or 17
  # rows ran one at a time, each vector of the other operand used once (13x512 @ 512x512: 302-327 us, padded 82-85)
  ren = Device["CPU"].renderer
  if ren.vector_bytes < 16: pytest.skip("the CPU renderer has no vectors of 4 floats here")
  rng = np.random.default_rng(m)
  a, b = rng.standard_normal((m, 256)).astype(np.float32), rng.standard_normal((256, 256)).astype(np.float32)
  opts, t = _matmul_opts(a.shape, b.shape, (a, b))
  # (axis 0 of the kernel (m, n): the rows)
  assert any(o.op is OptOps.PADTO and o.axis == 0 for o in opts) and any(o.op is OptOps.UPCAST and o.axis == 0 and o.arg >= 4 for o in opts), opts
  np.testing.assert_allclose(t.numpy(), a @ b, rtol=1e-4, atol=1e-3)

def test_a_matmul_of_few_rows_reads_a_row_major_operand_in_place():
  # under PACK_ROWS rows the copy into panels costs more than it saves (17x1000 @ 1000x1000: 730-800 us packed, 470-550 in
  # place); more rows, a transposed operand (no vector axis in place) or odd columns (none either) are packed
  from tinygrad.mixin.nn import _matmul_panel, PACK_ROWS
  if not Device["CPU"].renderer.matmul_pack or Device["CPU"].renderer.vector_bytes < 16: pytest.skip("the CPU renderer packs no matmul operand here")
  assert _matmul_panel("CPU", 4, PACK_ROWS - 1, 1000, 1000) == 0 and _matmul_panel("CPU", 4, 64, 1024, 1024) > 0
  assert _matmul_panel("CPU", 4, 17, 1000, 1000, True) > 0 and _matmul_panel("CPU", 4, 17, 1000, 999) > 0
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((17, 300)).astype(np.float32), rng.standard_normal((300, 1000)).astype(np.float32)
  np.testing.assert_allclose((Tensor(a) @ Tensor(b)).numpy(), a @ b, rtol=1e-4, atol=1e-3)
