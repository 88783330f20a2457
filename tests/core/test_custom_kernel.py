"""Tensor.custom_kernel: a kernel written in UOps (public tinygrad's alpha API) runs on its tensors' buffers in place.
Values against numpy on PYTHON and CPU: elementwise, loops nested and in sequence, reductions into a global or a register,
several outputs, grad_fxn under backward, sharded tensors; the in-place order against other readers; misuse errors."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, UOp, dtypes
from tinygrad.dtype import AddrSpace
from tinygrad.uop import Ops
from tinygrad.uop.ops import KernelInfo, AxisType

DEVS = ["CPU", "PYTHON"]

def add(C: UOp, A: UOp, B: UOp) -> UOp:
  C, A, B = C.flatten(), A.flatten(), B.flatten()
  i = UOp.range(C.numel(), 0)
  return C[i].store(A[i] + B[i]).end(i).sink(arg=KernelInfo(name="add")).simplify()

def add_one(B: UOp, A: UOp) -> UOp:
  A, B = A.flatten(), B.flatten()
  i = UOp.range(A.numel(), 0)
  return B[i].store(A[i] + 1).end(i).sink(arg=KernelInfo(name="add_one"))

def outer_sum(C: UOp, A: UOp, B: UOp) -> UOp:   # C[i, j] = A[i] + B[j]: B[j] is loaded inside the i loop too
  i, j = UOp.range(C.shape[0], 0), UOp.range(C.shape[1], 1)
  return C[i, j].store(A[i] + B[j]).end(i, j).sink(arg=KernelInfo(name="outer_sum"))

def gemm(C: UOp, A: UOp, B: UOp) -> UOp:   # accumulates in C itself: C.after(k) orders the reads after the writes
  i, j, k = UOp.range(C.shape[0], 0), UOp.range(C.shape[1], 1), UOp.range(A.shape[1], 2, axis_type=AxisType.REDUCE)
  C = C[i, j].set(0.0)
  C = C[i, j].set(C.after(k)[i, j] + A[i, k] * B[k, j], end=k)
  return C.end(i, j).sink(arg=KernelInfo(name="gemm", opts_to_apply=()))

def row_sum(dest: UOp, src: UOp) -> UOp:   # a register accumulator per row, a slice of src per row
  G = UOp.range(src.shape[0], 0)
  row = src[G, :]
  acc = UOp.placeholder((1,), dest.dtype, 0, addrspace=AddrSpace.REG)
  acc = acc.after(G)[0].set(0)
  R = UOp.range(src.shape[1], 1, AxisType.REDUCE)
  acc = acc[0].set(acc.after(R)[0] + row[R], end=R)
  return dest[G].set(acc[0], end=G).sink(arg=KernelInfo(name="row_sum"))

def addmul(C: UOp, D: UOp, A: UOp, B: UOp) -> UOp:
  C, D, A, B = C.flatten(), D.flatten(), A.flatten(), B.flatten()
  i = UOp.range(C.numel(), 0)
  return UOp.group(C[i].store(A[i] + B[i]), D[i].store(A[i] * B[i])).end(i).sink(arg=KernelInfo(name="addmul"))

def double_then_reverse(M: UOp, O: UOp, X: UOp) -> UOp:   # two loops one after the other: the second reads the first's output
  n = X.shape[0]
  i, j = UOp.range(n, 0), UOp.range(n, 1)
  M = M[i].set(X[i] * 2, end=i)
  return O[j].store(M.after(M)[n - 1 - j] + 1).end(j).sink(arg=KernelInfo(name="double_then_reverse"))

def _rand(*shape: int, seed: int = 0) -> np.ndarray: return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)

@pytest.mark.parametrize("dev", DEVS)
@settings(max_examples=8, deadline=None)
@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3))
def test_elementwise(dev, shape):
  na, nb = _rand(*shape, seed=1), _rand(*shape, seed=2)
  c = Tensor.custom_kernel(Tensor.empty(*shape, device=dev), Tensor(na, device=dev), Tensor(nb, device=dev) * 2, fxn=add)[0]
  assert c.shape == tuple(shape) and c.dtype == dtypes.float32
  np.testing.assert_allclose(c.numpy(), na + 2 * nb, rtol=1e-6)

@pytest.mark.parametrize("dev", DEVS)
def test_loops_nest_and_follow(dev):
  na, nb = _rand(3), _rand(5, seed=1)
  c = Tensor.custom_kernel(Tensor.empty(3, 5, device=dev), Tensor(na, device=dev), Tensor(nb, device=dev), fxn=outer_sum)[0]
  np.testing.assert_allclose(c.numpy(), na[:, None] + nb[None, :], rtol=1e-6)
  m, o, _ = Tensor.custom_kernel(Tensor.empty(6, device=dev), Tensor.empty(6, device=dev), Tensor(nb.tolist() + [4.0], device=dev), fxn=double_then_reverse)
  x = np.array(nb.tolist() + [4.0], np.float32)
  np.testing.assert_allclose(o.numpy(), (x * 2)[::-1] + 1, rtol=1e-6)
  np.testing.assert_allclose(m.numpy(), x * 2, rtol=1e-6)

@pytest.mark.parametrize("dev", DEVS)
def test_reductions(dev):
  na, nb = _rand(4, 7), _rand(7, 3, seed=1)
  g = Tensor.custom_kernel(Tensor.empty(4, 3, device=dev), Tensor(na, device=dev), Tensor(nb, device=dev), fxn=gemm)[0]
  np.testing.assert_allclose(g.numpy(), na @ nb, rtol=1e-5, atol=1e-5)
  r = Tensor.custom_kernel(Tensor.empty(4, device=dev), Tensor(na, device=dev), fxn=row_sum)[0]
  np.testing.assert_allclose(r.numpy(), na.sum(1), rtol=1e-5, atol=1e-5)
  ni = np.arange(12, dtype=np.int32).reshape(3, 4)
  ri = Tensor.custom_kernel(Tensor.empty(3, dtype=dtypes.int32, device=dev), Tensor(ni, device=dev), fxn=row_sum)[0]
  assert ri.dtype == dtypes.int32 and ri.tolist() == ni.sum(1).tolist()

def reduce_matmul(C: UOp, A: UOp, B: UOp, op: Ops = Ops.ADD, k_axis: int = 2, dtype=None) -> UOp:   # UOp.reduce: no accumulator by hand
  i, j, k = UOp.range(C.shape[0], 0 if k_axis else 1), UOp.range(C.shape[1], 1 if k_axis else 2), UOp.range(A.shape[1], k_axis, AxisType.REDUCE)
  return C[i, j].store((A[i, k] * B[k, j]).reduce(k, arg=op, dtype=dtype)).end(i, j).sink(arg=KernelInfo(name="reduce_matmul"))

@pytest.mark.parametrize("dev", DEVS)
def test_uop_reduce(dev):
  # public tinygrad's kernels (extra/fp8, llama_kernels' fused_ce) write a reduction as x.reduce(range, arg=Ops.ADD); its range
  # may be numbered below the loops around it (fp8_linear numbers it 0): the loops still nest by use, not by number
  na, nb = _rand(4, 7), _rand(7, 3, seed=1)
  prods = na[:, :, None] * nb[None, :, :]
  for op, ref in ((Ops.ADD, prods.sum(1)), (Ops.MAX, prods.max(1)), (Ops.MUL, prods.prod(1))):
    for k_axis in (2, 0):
      out = Tensor.custom_kernel(Tensor.empty(4, 3, device=dev), Tensor(na, device=dev), Tensor(nb, device=dev),
                                 fxn=lambda C, A, B: reduce_matmul(C, A, B, op, k_axis))[0]
      np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6, err_msg=f"{op} k_axis={k_axis}")
  ni = (np.arange(16) % 5 + 6).astype(np.int8).reshape(2, 8)   # int8 products (each fits) summed in int32 (dtype=): no wrap past 127
  big = Tensor.custom_kernel(Tensor.empty(2, 2, dtype=dtypes.int32, device=dev), Tensor(ni, device=dev), Tensor(ni.T.copy(), device=dev),
                             fxn=lambda C, A, B: reduce_matmul(C, A, B, dtype=dtypes.int32))[0]
  assert big.tolist() == (ni.astype(np.int32) @ ni.T.astype(np.int32)).tolist() and big.numpy().max() > 127
  with pytest.raises(ValueError, match="Ops.ADD, Ops.MUL or Ops.MAX"): UOp.range(3, 0).reduce(UOp.range(3, 1), arg=Ops.SUB)
  with pytest.raises(ValueError, match="loops it runs over"): UOp.range(3, 0).reduce(arg=Ops.ADD)

@pytest.mark.parametrize("dev", DEVS)
def test_multiple_outputs(dev):
  na, nb = _rand(3, 4), _rand(3, 4, seed=1)
  c, d, a, b = Tensor.custom_kernel(Tensor.empty(3, 4, device=dev), Tensor.empty(3, 4, device=dev), Tensor(na, device=dev), Tensor(nb, device=dev), fxn=addmul)
  Tensor.realize(c, d)
  np.testing.assert_allclose(c.numpy(), na + nb, rtol=1e-6)
  np.testing.assert_allclose(d.numpy(), na * nb, rtol=1e-6)
  np.testing.assert_allclose(a.numpy(), na)   # a tensor the kernel only reads is returned as it was

def _gemm_grad(g: UOp, kernel: UOp):
  _, a, b = kernel.src[1:]
  return (None, (Tensor(g) @ Tensor(b).T).uop, (Tensor(a).T @ Tensor(g)).uop)

@pytest.mark.parametrize("dev", DEVS)
def test_grad_fxn_drives_backward(dev):
  na, nb, nw = _rand(3, 5), _rand(5, 2, seed=1), _rand(3, 2, seed=2)
  a, b = Tensor(na, device=dev, requires_grad=True), Tensor(nb, device=dev, requires_grad=True)
  y = Tensor.custom_kernel(Tensor.empty(3, 2, device=dev), a, b, fxn=gemm, grad_fxn=_gemm_grad)[0]
  (y * Tensor(nw, device=dev)).sum().backward()
  np.testing.assert_allclose(y.numpy(), na @ nb, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(a.grad.numpy(), nw @ nb.T, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(b.grad.numpy(), na.T @ nw, rtol=1e-5, atol=1e-5)

def test_grad_fxn_of_several_outputs():
  na, nb = _rand(4), _rand(4, seed=1)
  a, b = Tensor(na, requires_grad=True), Tensor(nb, requires_grad=True)
  seen = {}
  def grad(gc, gd, call):   # d(a+b) = gc, gc; d(a*b) = gd*b, gd*a
    seen["n"] = len(call.src) - 1
    _, _, a_, b_ = (Tensor(u) for u in call.src[1:])
    return (None, None, (Tensor(gc) + Tensor(gd) * b_).uop, (Tensor(gc) + Tensor(gd) * a_).uop)
  c, d, _, _ = Tensor.custom_kernel(Tensor.empty(4), Tensor.empty(4), a, b, fxn=addmul, grad_fxn=grad)
  (c * 3 + d).sum().backward()
  assert seen["n"] == 4
  np.testing.assert_allclose(a.grad.numpy(), 3 + nb, rtol=1e-6)
  np.testing.assert_allclose(b.grad.numpy(), 3 + na, rtol=1e-6)

@pytest.mark.parametrize("dev", DEVS)
def test_in_place_order_and_runs_once(dev):
  x = Tensor([1.0, 2.0, 3.0], device=dev).realize()
  before = x * 10                                        # reads x as it was
  y = Tensor.custom_kernel(x, x, fxn=add_one)[0]         # writes x's buffer
  z = y * 2
  Tensor.realize(before, z)
  assert before.tolist() == [10.0, 20.0, 30.0] and z.tolist() == [4.0, 6.0, 8.0]
  assert y.tolist() == [2.0, 3.0, 4.0] and x.tolist() == [2.0, 3.0, 4.0]   # ran once: y is x's buffer now, not a second +1
  # a kernel reading another's output runs after it, even when that one waits for a reader of what it overwrites
  x = Tensor([1.0, 2.0, 3.0], device=dev).realize()
  y = Tensor.custom_kernel(x, x, fxn=add_one)[0]
  z = Tensor.custom_kernel(Tensor.empty(3, device=dev), y, fxn=add_one)[0]
  before = x * 10
  Tensor.realize(z, before)
  assert z.tolist() == [3.0, 4.0, 5.0] and before.tolist() == [10.0, 20.0, 30.0]

@pytest.mark.parametrize("devs", [("CPU:0", "CPU:1"), ("PYTHON:0", "PYTHON:1")])
def test_sharded(devs):
  na, nb = _rand(4, 3), _rand(4, 3, seed=1)
  a, b = Tensor(na).shard(devs, axis=0), Tensor(nb).shard(devs, axis=0)
  c = Tensor(Tensor.empty(2, 3, device=devs).uop.unshard(0))   # the replicated empty, read as the shards of a (4, 3)
  out = Tensor.custom_kernel(c, a, b, fxn=add)[0]
  assert out.shape == (4, 3) and out.uop.axis == 0
  np.testing.assert_allclose(out.numpy(), na + nb, rtol=1e-6)

def test_misuse_errors():
  a = Tensor.ones(4).contiguous()
  with pytest.raises(TypeError, match="must return a kernel SINK"): Tensor.custom_kernel(a, fxn=lambda A: A[0].store(1))
  with pytest.raises(IndexError, match="2 indices for a view of shape"): Tensor.custom_kernel(a, fxn=lambda A: A[0, 0].store(1).sink())
  with pytest.raises(ValueError, match="one device"): Tensor.custom_kernel(a, Tensor.ones(4, device="PYTHON"), fxn=add_one)
  def leaky(A: UOp) -> UOp:
    i = UOp.range(4, 0)
    return A[i].store(1.0).sink()
  with pytest.raises(ValueError, match="leaves loops open"): Tensor.custom_kernel(Tensor.empty(4), fxn=leaky)[0].realize()
  b = Tensor.ones(4, requires_grad=True)
  y = Tensor.custom_kernel(Tensor.empty(4), b, fxn=add_one)[0]
  with pytest.raises(RuntimeError, match="without grad_fxn"): y.sum().backward()
  y = Tensor.custom_kernel(Tensor.empty(4), b, fxn=add_one, grad_fxn=lambda g, k: (None, Tensor.ones(2).uop))[0]
  with pytest.raises(ValueError, match="one gradient"): y.sum().backward()
  x = Tensor.empty(4)
  with pytest.raises(NotImplementedError, match="custom_kernel's outputs"): Tensor(x.uop.after(x.uop)).realize()

def test_schedule_cache_and_name():
  from tinygrad.engine.schedule import create_schedule
  outs = [Tensor.custom_kernel(Tensor.empty(4), Tensor.full((4,), float(v)).contiguous(), fxn=add_one)[0] for v in (1, 2)]
  sched, _ = create_schedule([outs[0].uop])
  assert sched[-1].ast.arg.name == "add_one" and len(sched) == 2
  assert [o.tolist() for o in outs] == [[2.0] * 4, [3.0] * 4]

@pytest.mark.parametrize("dev", DEVS)
def test_views_of_placeholders(dev):
  def transpose_flip(O: UOp, A: UOp) -> UOp:   # O[i, j] = A[j, n-1-i]: A seen permuted and flipped
    V = A.permute((1, 0)).flip((True, False))
    i, j = UOp.range(O.shape[0], 0), UOp.range(O.shape[1], 1)
    return O[i, j].store(V[i, j]).end(i, j).sink()
  na = _rand(3, 5)
  o = Tensor.custom_kernel(Tensor.empty(5, 3, device=dev), Tensor(na, device=dev), fxn=transpose_flip)[0]
  np.testing.assert_allclose(o.numpy(), na.T[::-1])

def test_inputs_that_are_their_buffers_are_not_copied():
  from tinygrad.engine.schedule import create_schedule
  x = Tensor.arange(32).reshape(8, 4).clone().realize()
  y = Tensor.custom_kernel(Tensor.empty(8, 4, dtype=x.dtype), x.T.T, fxn=add_one)[0]   # x.T.T is x's buffer as it is
  z = Tensor.custom_kernel(Tensor.empty(2, 16, dtype=x.dtype), y.reshape(2, 16), fxn=add_one)[0]
  w = Tensor.custom_kernel(Tensor.empty(4, 8, dtype=x.dtype), x.T, fxn=add_one)[0]   # a transpose is copied first
  assert len(create_schedule([z.uop])[0]) == 2 and len(create_schedule([w.uop])[0]) == 2
  assert z.flatten().tolist() == list(range(2, 34)) and w.tolist() == (x.T + 1).tolist()

def test_uop_reductions_are_the_tensors():
  a = Tensor([[1.0, 5.0, 3.0], [4.0, 2.0, 6.0]])
  assert Tensor(a.uop.sum(axis=1)).tolist() == [9.0, 12.0] and Tensor(a.uop.max(axis=0)).tolist() == [4.0, 5.0, 6.0]
  assert Tensor(a.uop.prod()).item() == 720.0 and abs(Tensor(a.uop.std()).item() - a.numpy().std(ddof=1)) < 1e-5
