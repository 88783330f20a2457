"""The row cache (codegen/rowcache.py): a row's summand that its output computes again (a fused softmax's exp(x - max)) is
stored into the output by the reduce's loop and read back by the output's loop: one exp per element instead of two. The
values are torch's, rows of -inf, NaN and huge values included, and the kernels it must not touch keep their form."""
import numpy as np
import pytest
import torch
from tinygrad import Tensor, Device
from tinygrad.plugin_api import kernels, render
from tinygrad.uop import Ops, GroupOp
import tinygrad.codegen as cg

def _rand(*shape: int, seed: int = 0) -> np.ndarray: return np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 4

def _loops(uops: list) -> list[tuple[object, list]]:
  """(RANGE, the uops directly inside its loop) for every loop of a linearized kernel."""
  stack: list[tuple[object, list]] = []
  out = []
  for u in uops:
    if u.op is Ops.RANGE:
      stack.append((u, []))
      out.append(stack[-1])
    elif u.op is Ops.END: stack.pop()
    elif stack: stack[-1][1].append(u)
  return out

def _without_pass(fn):
  saved = cg.PASSES[:]
  cg.PASSES[:] = [p for p in saved if p[0] != "cache_rows"]
  try: return fn()
  finally: cg.PASSES[:] = saved

@pytest.mark.parametrize("rows,n", [(64, 4096), (32, 512), (16, 128)])
def test_softmax_computes_exp_once_per_element(rows, n):
  # the sum's loop stores exp(x - max) into the output; the output's loop loads it and multiplies by 1/sum: no exp there
  t = Tensor.empty(rows, n, device="CPU").softmax(-1)
  (k,) = kernels(t)
  p = render(k, Device["CPU"].renderer)
  loops = _loops(p.uops)
  out_loop = [body for r, body in loops if r.arg[1].name == "GLOBAL" and not any(x.op is Ops.RANGE for x in body)][-1]
  assert not any(u.op in (Ops.MULACC, Ops.SHL) for u in out_loop), "the output loop computes exp again"
  assert any(u.op is Ops.LOAD and u.src[0].src[0].arg == 0 for u in out_loop if u.src and u.src[0].op is Ops.INDEX)
  red_stores = [u for r, body in loops if r.arg[1].name == "REDUCE" for u in body if u.op is Ops.STORE and u.src[0].src[0].op is Ops.DEFINE_GLOBAL]
  assert red_stores, "the sum's loop stores nothing into the output"
  alu = lambda prog: sum(1 for u in prog.uops if u.op in GroupOp.ALU)
  # (without the pass the output loop computes exp again: softmax's exp is 17 ALU ops, ~14 more in the kernel)
  assert alu(p) < alu(_without_pass(lambda: render(k, Device["CPU"].renderer))) - 10

def _check(got: Tensor, want: torch.Tensor) -> None:
  np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=2e-5, atol=2e-6)

@pytest.mark.parametrize("shape", [(16, 64), (16, 128), (48, 1024), (3, 17, 256), (20, 4096), (16, 4160), (17, 192)])
def test_softmax_family_matches_torch(shape):
  a = _rand(*shape, seed=sum(shape))
  a.reshape(-1, shape[-1])[0, :5] = 80.0      # large values: the max shift keeps exp finite
  a.reshape(-1, shape[-1])[1] = -np.inf       # a row of -inf: NaN, as torch
  a.reshape(-1, shape[-1])[2, 7] = np.nan     # a NaN: its row is NaN
  a.reshape(-1, shape[-1])[3] = 1.5           # a constant row
  a.reshape(-1, shape[-1])[4, 3] = -np.inf    # one -inf: its exp is 0
  x, ta = Tensor(a, device="CPU"), torch.tensor(a)
  _check(x.softmax(-1), ta.softmax(-1))
  _check(x.log_softmax(-1), ta.log_softmax(-1))
  _check(x.layernorm(-1), torch.nn.functional.layer_norm(ta, shape[-1:]))
  e = x.exp()
  _check(e * e.sum(-1, keepdim=True).reciprocal(), ta.exp() / ta.exp().sum(-1, keepdim=True))   # the summand is exp(x) itself
  _check(e / e.max(-1, keepdim=True), ta.exp() / ta.exp().amax(-1, keepdim=True))               # a max of it

@pytest.mark.parametrize("shape", [(16, 256), (32, 1024)])
def test_softmax_and_layernorm_backward_match_torch(shape):
  a, g = _rand(*shape, seed=3), _rand(*shape, seed=4)
  for f, tf in ((lambda x: x.softmax(-1), lambda x: x.softmax(-1)), (lambda x: x.log_softmax(-1), lambda x: x.log_softmax(-1)),
                (lambda x: x.layernorm(-1), lambda x: torch.nn.functional.layer_norm(x, shape[-1:]))):
    x, tx = Tensor(a, device="CPU", requires_grad=True), torch.tensor(a, requires_grad=True)
    (f(x) * Tensor(g, device="CPU")).sum().backward()
    (tf(tx) * torch.tensor(g)).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-4, atol=1e-5)

def test_softmax_in_place_and_empty():
  # an assign of softmax into its own input reads the input where it writes: it must not read back what it stored
  a = _rand(32, 512, seed=5)
  x = Tensor(a, device="CPU").contiguous().realize()
  x.assign(x.softmax(-1)).realize()
  _check(x, torch.tensor(a).softmax(-1))
  assert Tensor.empty(0, 512, device="CPU").softmax(-1).numpy().shape == (0, 512)
  _check(Tensor(a[:1], device="CPU").softmax(-1), torch.tensor(a[:1]).softmax(-1))

def test_output_of_another_dtype_is_not_a_cache():
  # a bool mask of a float row (x == x.max(-1), scatter_reduce amax's gradient): the float summand does not fit the output's
  # 1-byte slots, each 4-byte store overwrote its neighbours (rows of ties came back [False, False, True], gradients NaN)
  idx, src = np.zeros((3, 4), np.int32), np.ones((3, 4), np.float32)
  cand = (Tensor(idx, device="CPU").T.unsqueeze(0) == Tensor.arange(4, device="CPU").reshape(4, 1, 1)).where(Tensor(src, device="CPU").T.unsqueeze(0), -np.inf)
  c = np.where(idx.T[None] == np.arange(4).reshape(4, 1, 1), src.T[None], -np.inf)
  np.testing.assert_array_equal((cand == cand.max(-1, keepdim=True)).numpy(), c == c.max(-1, keepdims=True))
  x, s = Tensor.zeros(4, 4, requires_grad=True, device="CPU"), Tensor.ones(3, 4, requires_grad=True, device="CPU")
  x.scatter_reduce(0, Tensor(idx, device="CPU"), s, "amax", include_self=False).sum().backward()
  xt, st = torch.zeros(4, 4, requires_grad=True), torch.ones(3, 4, requires_grad=True)
  xt.scatter_reduce(0, torch.tensor(idx, dtype=torch.int64), st, "amax", include_self=False).sum().backward()
  np.testing.assert_allclose(s.grad.numpy(), st.grad.numpy())

def test_clang_renderer_matches_torch():
  try: Device["CPU:CLANG"]
  except Exception as e: pytest.skip(f"CPU:CLANG does not open here ({type(e).__name__})")
  a = _rand(32, 1024, seed=6)
  a[1] = -np.inf
  _check(Tensor(a, device="CPU:CLANG").softmax(-1), torch.tensor(a).softmax(-1))

@pytest.mark.parametrize("opts,cached", [("UPCAST:1:16,UNROLL:1:64", True), ("UPCAST:1:16,UNROLL:1:16", True),
  ("THREAD:0:4,UPCAST:2:16,UNROLL:1:64", True), ("UPCAST:1:16,UNROLL:0:64,UNROLL:1:64", True),
  ("SWAP:0:1,UPCAST:0:16,UNROLL:1:64", False), ("UPCAST:0:4,UPCAST:1:16,UNROLL:1:64", False), ("UPCAST:1:4,UNROLL:1:8,UNROLL:0:4", False)])
def test_forced_actions_keep_softmax_right(opts, cached):
  # whatever actions BEAM or OPTS pick, the row cache applies only where each row's loops run in order on one thread:
  # rows split into chunks (THREAD) keep it; the output axis outermost (SWAP), several rows per store (UPCAST of the
  # rows) or scalar lanes leave the kernel as it was
  from tinygrad import Context
  from tinygrad.codegen.opt import parse_opts
  a = _rand(32, 1024, seed=7)
  a[3], a[5, 7] = -np.inf, np.nan
  (k,) = kernels(Tensor(a, device="CPU").softmax(-1))
  p = render(k, Device["CPU"].renderer, opts=parse_opts(opts))
  side = any(u.op is Ops.STORE and u.src[0].op is Ops.INDEX and u.src[0].src[0].op is Ops.DEFINE_GLOBAL
             for r, body in _loops(p.uops) if r.arg[1].name == "REDUCE" for u in body)
  assert side == cached
  with Context(OPTS=opts): _check(Tensor(a, device="CPU").softmax(-1), torch.tensor(a).softmax(-1))

@pytest.fixture
def streamed(monkeypatch):
  """Every output streams (as a 32 MB one does), each kernel rendered afresh: no program of another test from a cache."""
  import tinygrad.codegen.stream as stream
  from tinygrad.helpers import CACHELEVEL, PARALLEL_CODEGEN
  from tinygrad.engine.realize import method_cache
  monkeypatch.setattr(stream, "STREAM_BYTES", 0)
  monkeypatch.setattr(CACHELEVEL, "value", min(CACHELEVEL.value, 1))
  monkeypatch.setattr(PARALLEL_CODEGEN, "value", 0)
  saved = dict(method_cache)
  method_cache.clear()
  yield
  method_cache.clear()
  method_cache.update(saved)

def test_large_softmax_streams_its_output(streamed):
  # the sum's loop keeps exp(x - max) in a scratch row of the kernel's own; the output loop writes the output once,
  # non-temporally: the output's memory is never read (a store into it from the sum's loop read every line of it first)
  (k,) = kernels(Tensor.empty(64, 4096, device="CPU").softmax(-1))
  ren = Device["CPU"].renderer
  p = render(k, ren)
  loops = _loops(p.uops)
  red_stores = [u for r, body in loops if r.arg[1].name == "REDUCE" for u in body if u.op is Ops.STORE]
  assert any(u.src[0].src[0].op is Ops.DEFINE_REG and u.src[0].src[0].arg == "row" for u in red_stores)
  assert not any(u.src[0].src[0].op is Ops.DEFINE_GLOBAL for u in red_stores), "the sum's loop still writes the output"
  outs = [u for u in p.uops if u.op is Ops.STORE and u.src[0].src[0].op is Ops.DEFINE_GLOBAL]
  assert [u.arg for u in outs] == ["nontemporal"]
  if ren.nontemporal_stores and type(ren).__name__ == "LLVMRenderer":
    assert "!nontemporal" in p.src and "fence seq_cst" in p.src

def test_streaming_stays_off_for_small_outputs_and_long_rows():
  # a small output stays in the caches for its reader; a row past ROW_SCRATCH_BYTES might not fit a thread's stack
  import tinygrad.codegen.rowcache as rc, tinygrad.codegen.stream as stream
  ren = Device["CPU"].renderer
  for shape, stream_bytes, scratch_bytes in (((64, 4096), stream.STREAM_BYTES, rc.ROW_SCRATCH_BYTES), ((64, 4096), 0, 4096 * 4 - 4)):
    with pytest.MonkeyPatch.context() as mp:
      mp.setattr(stream, "STREAM_BYTES", stream_bytes)
      mp.setattr(rc, "ROW_SCRATCH_BYTES", scratch_bytes)
      for k in kernels(Tensor.empty(*shape, device="CPU").softmax(-1)):
        p = render(k, ren)
        assert not any(u.op is Ops.STORE and u.arg == "nontemporal" for u in p.uops), shape
        assert not any(u.op is Ops.DEFINE_REG and u.arg == "row" for u in p.uops), shape

@pytest.mark.parametrize("shape", [(16, 64), (48, 1024), (3, 17, 256), (20, 4096), (16, 4160), (17, 192), (5, 33)])
def test_streamed_softmax_family_matches_torch(streamed, shape):
  # odd row lengths put rows at addresses no vector store may stream to (the aligned check falls back to a plain store)
  a = _rand(*shape, seed=sum(shape) + 1)
  a.reshape(-1, shape[-1])[0, :5] = 80.0
  a.reshape(-1, shape[-1])[1] = -np.inf
  a.reshape(-1, shape[-1])[2, 7 % shape[-1]] = np.nan
  a.reshape(-1, shape[-1])[3] = 1.5
  x, ta = Tensor(a, device="CPU"), torch.tensor(a)
  _check(x.softmax(-1), ta.softmax(-1))
  _check(x.log_softmax(-1), ta.log_softmax(-1))
  e = x.exp()
  _check(e * e.sum(-1, keepdim=True).reciprocal(), ta.exp() / ta.exp().sum(-1, keepdim=True))
  # into a view of a larger buffer at an odd offset, and in place
  big = Tensor.zeros(int(np.prod(shape)) + 3, device="CPU").contiguous().realize()
  big[3:].assign(x.softmax(-1).flatten()).realize()
  _check(big[3:].reshape(shape), ta.softmax(-1))
  y = Tensor(a, device="CPU").contiguous().realize()
  y.assign(y.softmax(-1)).realize()
  _check(y, ta.softmax(-1))

def test_large_elementwise_output_streams_and_small_or_read_ones_do_not(monkeypatch):
  # a*b+c into a fresh 64 MB output writes whole lines past the caches; an in-place update reads its output (it is in the
  # cache already) and a small output stays for its reader: both store plainly
  import tinygrad.codegen.stream as stream
  ren = Device["CPU"].renderer
  def marks(t: Tensor) -> list:
    return [u.arg for k in kernels(t) for u in render(k, ren).uops if u.op is Ops.STORE and u.src[0].src[0].op is Ops.DEFINE_GLOBAL]
  n = stream.STREAM_BYTES // 4
  a, b, c = (Tensor.empty(n, device="CPU") for _ in range(3))
  assert marks(a * b + c) == ["nontemporal"]
  assert marks(a.assign(a * b + c)) == [None]
  assert marks(Tensor.empty(1 << 20, device="CPU") * 2) == [None]
  monkeypatch.setattr(stream, "STREAM_BYTES", 0)
  assert marks(Tensor.empty(1 << 20, device="CPU") * 2) == ["nontemporal"]
  assert marks(Tensor.empty(1 << 20, device="CPU", dtype="bool") & True) == [None]   # (16-byte vectors: part of a line)

def test_streamed_elementwise_matches_numpy(streamed):
  # every output streams, at aligned and unaligned addresses (a view at an odd offset), in every dtype the CPU vectorizes
  rng = np.random.default_rng(9)
  for dt in ("float32", "float64", "int32", "int64", "float16"):
    a = rng.standard_normal(4099).astype(dt) if "float" in dt else rng.integers(-1000, 1000, 4099).astype(dt)
    x = Tensor(a, device="CPU")
    np.testing.assert_array_equal((x * 3 + 1).numpy(), a * 3 + 1)
    big = Tensor.zeros(4099 + 5, device="CPU", dtype=dt).contiguous().realize()
    big[5:].assign(x * 2).realize()
    np.testing.assert_array_equal(big.numpy(), np.concatenate([np.zeros(5, dt), a * 2]))

def test_streamed_softmax_prefetches_the_next_row(streamed):
  # the sum's loop (compute-bound) prefetches what the next row's max loop (memory-bound) will read, one line per load,
  # the last row its own (an address inside the input)
  (k,) = kernels(Tensor.empty(64, 4096, device="CPU").softmax(-1))
  p = render(k, Device["CPU"].renderer)
  loops = _loops(p.uops)
  sum_loop = [body for r, body in loops if r.arg[1].name == "REDUCE" and any(u.op is Ops.STORE and u.src[0].src[0].op is Ops.DEFINE_REG
              and u.src[0].src[0].arg == "row" for u in body)]
  assert len(sum_loop) == 1
  pfs = [u for u in sum_loop[0] if u.op is Ops.PREFETCH]
  loads = [u for u in sum_loop[0] if u.op is Ops.LOAD and u.src[0].op is Ops.INDEX and u.src[0].src[0].op is Ops.DEFINE_GLOBAL]
  assert pfs and len(pfs) == len(loads)
  assert all(u.src[0].src[0] is loads[0].src[0].src[0] for u in pfs)
  from uop_eval import uop_eval   # the prefetched element, for each row and step of the loop: the next row's
  def at(idx, rv, kv): return int(uop_eval(idx, {row: np.array(rv), kr: np.array(kv)}))
  row = next(r for r, _ in loops if r.arg[1].name == "GLOBAL")
  kr = next(r for r, body in loops if body is sum_loop[0])
  for pf, ld in zip(pfs, loads):
    for rv in (0, 5, 63):
      for kv in (0, kr.src[0].arg - 1):
        assert at(pf.src[0].src[1], rv, kv) == at(ld.src[0].src[1], min(rv + 1, 63), kv)
  if type(Device["CPU"].renderer).__name__ == "LLVMRenderer": assert "@llvm.prefetch.p0" in p.src
