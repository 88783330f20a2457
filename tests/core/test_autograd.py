"""Autograd: every differentiable tensor-level op's gradient against central finite differences of a numpy reference.

The UOp-level tests build graphs directly (they need only the engine and the PYTHON device, float64); the Tensor-level
tests check backward/gradient/no_grad/train through the front end.
"""
import math, importlib.util
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import dtypes, from_numpy
from tinygrad.engine.buffers import new_buffer, buffer_of
from tinygrad.engine.realize import realize_uops
from tinygrad.gradient import compute_gradient, const_like, pm_gradient

DEV = "PYTHON"
HS = settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# ---- UOp-level helpers ----
def ubuf(a: np.ndarray) -> UOp:
  a = np.ascontiguousarray(a)
  u = new_buffer(DEV, max(a.size, 1), from_numpy(a.dtype))
  buffer_of(u).allocate().copyin(memoryview(a.tobytes()))
  return u.reshape(a.shape)

def unp(u: UOp) -> np.ndarray:
  r = realize_uops([u])[0]
  b = r.src[0] if r.op is Ops.RESHAPE else r
  out = np.empty(u.shape, dtype=np.dtype(u.dtype.fmt))
  buffer_of(b).copyout(memoryview(out).cast("B"))
  return out

def numeric_grad(f, arrays: list[np.ndarray], w: np.ndarray, i: int, eps: float = 1e-6) -> np.ndarray:
  x = arrays[i]
  g = np.zeros_like(x)
  for idx in np.ndindex(*x.shape):
    xp, xm = x.copy(), x.copy()
    xp[idx] += eps
    xm[idx] -= eps
    lp = np.sum(f(*[xp if j == i else a for j, a in enumerate(arrays)]) * w)
    lm = np.sum(f(*[xm if j == i else a for j, a in enumerate(arrays)]) * w)
    g[idx] = (lp - lm) / (2*eps)
  return g

def check_grad(f_uop, f_np, arrays: list[np.ndarray], diff: tuple[int, ...] | None = None, atol=1e-6, rtol=1e-5):
  """Forward equals numpy; d sum(f*w)/d input equals finite differences for each differentiable input."""
  arrays = [np.asarray(a) for a in arrays]
  srcs = [ubuf(a) for a in arrays]
  out = f_uop(*srcs)
  ref = f_np(*arrays)
  np.testing.assert_allclose(unp(out), ref, atol=atol, rtol=rtol)
  w = np.asarray(np.random.default_rng(0).standard_normal(ref.shape))
  diff = tuple(range(len(arrays))) if diff is None else diff
  grads = compute_gradient(out, ubuf(w), {srcs[i] for i in diff})
  for i in diff:
    num = numeric_grad(f_np, arrays, w, i)
    got = unp(grads[srcs[i]]) if srcs[i] in grads else np.zeros_like(arrays[i])
    np.testing.assert_allclose(got, num, atol=1e-5, rtol=1e-4, err_msg=f"gradient of input {i}")

shapes = st.lists(st.integers(1, 4), min_size=0, max_size=3).map(tuple)
def rnd(shape, lo=-2.0, hi=2.0, seed=0): return np.asarray(np.random.default_rng(seed).uniform(lo, hi, shape), dtype=np.float64)
def away0(shape, seed=0):  # values in +-[0.5, 2]: safe for 1/x and x/y
  r = np.random.default_rng(seed)
  return np.asarray(r.uniform(0.5, 2.0, shape) * r.choice([-1.0, 1.0], shape), dtype=np.float64)
def distinct(shape, seed=0):  # no ties: max has a unique winner
  n = int(np.prod(shape))
  return np.random.default_rng(seed).permutation(n).reshape(shape).astype(np.float64) * 0.37 - 1.0

# ---- unary ALU ----
UNARY = [
  ("NEG", lambda x: -x, lambda x: -x, rnd),
  ("RECIPROCAL", lambda x: x.reciprocal(), lambda x: 1/x, away0),
  ("EXP2", lambda x: x.exp2(), np.exp2, rnd),
  ("LOG2", lambda x: x.log2(), np.log2, lambda s, seed=0: rnd(s, 0.5, 3.0, seed)),
  ("SIN", lambda x: x.sin(), np.sin, rnd),
  ("SQRT", lambda x: x.sqrt(), np.sqrt, lambda s, seed=0: rnd(s, 0.5, 3.0, seed)),
  ("CONTIGUOUS", lambda x: UOp(Ops.CONTIGUOUS, x.dtype, (x,)), lambda x: x, rnd),
]
@pytest.mark.parametrize("name,fu,fn,gen", UNARY, ids=[u[0] for u in UNARY])
@HS
@given(shape=shapes)
def test_unary(name, fu, fn, gen, shape):
  check_grad(fu, fn, [gen(shape)])

@HS
@given(shape=shapes)
def test_cast_roundtrip(shape):
  # grad of cast is cast back: f64 -> f32 -> f64 loses precision only in the forward
  x = rnd(shape)
  srcs = [ubuf(x)]
  out = srcs[0].cast(dtypes.float32).cast(dtypes.float64) * srcs[0]
  w = np.ones(shape)
  g = unp(compute_gradient(out, ubuf(w), {srcs[0]})[srcs[0]])
  np.testing.assert_allclose(g, 2*x, rtol=1e-6)

# ---- binary / ternary ALU ----
BINARY = [
  ("ADD", lambda x, y: x + y, lambda x, y: x + y, rnd, rnd),
  ("SUB", lambda x, y: x - y, lambda x, y: x - y, rnd, rnd),
  ("MUL", lambda x, y: x * y, lambda x, y: x * y, rnd, rnd),
  ("FDIV", lambda x, y: x / y, lambda x, y: x / y, rnd, away0),
  ("MAX", lambda x, y: x.maximum(y), np.maximum, lambda s: distinct(s, 1), lambda s: distinct(s, 2) + 0.1),
]
@pytest.mark.parametrize("name,fu,fn,g1,g2", BINARY, ids=[b[0] for b in BINARY])
@HS
@given(shape=shapes)
def test_binary(name, fu, fn, g1, g2, shape):
  check_grad(fu, fn, [g1(shape), g2(shape)])

def test_max_ties_split():
  # max(x, x'): equal inputs share the gradient half and half (tinygrad's rule)
  x, y = ubuf(np.array([1.0, 2.0, 3.0])), ubuf(np.array([1.0, 0.0, 5.0]))
  out = x.maximum(y)
  g = compute_gradient(out, ubuf(np.ones(3)), {x, y})
  np.testing.assert_allclose(unp(g[x]), [0.5, 1.0, 0.0])
  np.testing.assert_allclose(unp(g[y]), [0.5, 0.0, 1.0])

@HS
@given(shape=shapes)
def test_where(shape):
  c = np.asarray(np.random.default_rng(3).random(shape) > 0.5)
  cu = ubuf(c)
  check_grad(lambda x, y: cu.where(x, y), lambda x, y: np.where(c, x, y), [rnd(shape, seed=1), rnd(shape, seed=2)])

def test_comparison_has_no_grad():
  x = ubuf(np.array([1.0, 2.0]))
  assert pm_gradient.rewrite(x.alu(Ops.CMPLT, x), ctx=ubuf(np.ones(2))) == (None, None)
  # a graph reaching x only through a comparison gives x no gradient
  out = (x.alu(Ops.CMPLT, const_like(x, 1.5))).where(const_like(x, 1.0), const_like(x, 2.0))
  assert x not in compute_gradient(out, ubuf(np.ones(2)), {x})

# ---- movement ----
@st.composite
def permute_case(draw):
  shape = draw(shapes)
  return shape, tuple(draw(st.permutations(range(len(shape)))))
@HS
@given(case=permute_case())
def test_permute(case):
  shape, order = case
  check_grad(lambda x: x.permute(order), lambda x: np.transpose(x, order), [rnd(shape)])

@HS
@given(shape=shapes)
def test_reshape(shape):
  n = int(np.prod(shape))
  check_grad(lambda x: x.reshape((n,)), lambda x: x.reshape(n), [rnd(shape)])

@st.composite
def expand_case(draw):
  out = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
  src = tuple(1 if draw(st.booleans()) else s for s in out)
  return src, out
@HS
@given(case=expand_case())
def test_expand(case):
  src, out = case
  check_grad(lambda x: x.expand(out), lambda x: np.broadcast_to(x, out), [rnd(src)])

@st.composite
def pad_case(draw):
  shape = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3).map(tuple))
  return shape, tuple((draw(st.integers(0, 2)), draw(st.integers(0, 2))) for _ in shape)
@HS
@given(case=pad_case())
def test_pad(case):
  shape, arg = case
  check_grad(lambda x: x.pad(arg), lambda x: np.pad(x, arg), [rnd(shape)])

@st.composite
def shrink_case(draw):
  shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
  arg = []
  for s in shape:
    b = draw(st.integers(0, s-1))
    arg.append((b, draw(st.integers(b+1, s))))
  return shape, tuple(arg)
@HS
@given(case=shrink_case())
def test_shrink(case):
  shape, arg = case
  check_grad(lambda x: x.shrink(arg), lambda x: x[tuple(slice(b, e) for b, e in arg)], [rnd(shape)])

@st.composite
def flip_case(draw):
  shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
  return shape, tuple(draw(st.booleans()) for _ in shape)
@HS
@given(case=flip_case())
def test_flip(case):
  shape, arg = case
  axes = tuple(i for i, f in enumerate(arg) if f)
  check_grad(lambda x: x.flip(arg), lambda x: np.flip(x, axes) if axes else x, [rnd(shape)])

# ---- reduces ----
@st.composite
def reduce_case(draw):
  shape = draw(st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple))
  axes = tuple(sorted(draw(st.sets(st.integers(0, len(shape)-1), min_size=1))))
  return shape, axes
@HS
@given(case=reduce_case())
def test_reduce_sum(case):
  shape, axes = case
  check_grad(lambda x: x.r(Ops.ADD, axes), lambda x: x.sum(axis=axes, keepdims=True), [rnd(shape)])

@HS
@given(case=reduce_case())
def test_reduce_max(case):
  shape, axes = case
  check_grad(lambda x: x.r(Ops.MAX, axes), lambda x: x.max(axis=axes, keepdims=True), [distinct(shape)])

def test_reduce_max_ties_split():
  x = ubuf(np.array([[1.0, 3.0, 3.0], [2.0, 2.0, 2.0]]))
  out = x.r(Ops.MAX, (1,))
  g = unp(compute_gradient(out, ubuf(np.ones((2, 1))), {x})[x])
  np.testing.assert_allclose(g, [[0, 0.5, 0.5], [1/3, 1/3, 1/3]])

@HS
@given(case=reduce_case())
def test_reduce_prod(case):
  shape, axes = case
  check_grad(lambda x: x.r(Ops.MUL, axes), lambda x: x.prod(axis=axes, keepdims=True), [away0(shape)])

# ---- graph-level behaviour ----
def test_reused_node_accumulates():
  # f = x*x + x: the three uses of x sum to 2x + 1
  check_grad(lambda x: x * x + x, lambda x: x * x + x, [rnd((3, 2))])

def test_detach_stops():
  x = ubuf(np.array([1.0, 2.0, 3.0]))
  out = x * UOp(Ops.DETACH, x.dtype, (x,))
  np.testing.assert_allclose(unp(compute_gradient(out, ubuf(np.ones(3)), {x})[x]), [1.0, 2.0, 3.0])

def test_composite_softmax_like():
  # exp2/sum/div through expand and reduce: a softmax over the last axis
  def fu(x):
    e = (x - x.r(Ops.MAX, (1,)).expand(x.shape)).exp2()
    return e / e.r(Ops.ADD, (1,)).expand(x.shape)
  def fn(x):
    e = np.exp2(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)
  check_grad(fu, fn, [distinct((3, 4))])

def test_deep_graph_no_recursion_limit():
  x = ubuf(np.array([1.0, 2.0]))
  out = x
  for _ in range(5000): out = out + x   # 5001 x
  g = compute_gradient(out, ubuf(np.ones(2)), {x})[x]
  np.testing.assert_allclose(unp(g), [5001.0, 5001.0])

def test_only_targets_returned():
  x, y = ubuf(np.array([1.0])), ubuf(np.array([2.0]))
  g = compute_gradient(x * y, ubuf(np.ones(1)), {x})
  assert set(g) == {x}

def test_grad_shape_mismatch():
  x = ubuf(np.array([1.0, 2.0]))
  with pytest.raises(ValueError, match="shape"): compute_gradient(x * x, ubuf(np.ones(3)), {x})

# ---- Tensor level: backward / gradient / no_grad / train ----
HAVE_TENSOR = importlib.util.find_spec("tinygrad.tensor") is not None
needs_tensor = pytest.mark.skipif(not HAVE_TENSOR, reason="core/tinygrad/tensor.py not written yet")

def _bind():
  from tinygrad.tensor import Tensor
  from tinygrad import gradient as G
  # until tensor.py binds these itself
  if not hasattr(Tensor, "backward"): Tensor.backward = lambda self, gradient=None: G.backward(self, gradient)
  if not hasattr(Tensor, "gradient"): Tensor.gradient = lambda self, *t, gradient=None, materialize_grads=True: G.gradient(self, *t, gradient=gradient, materialize_grads=materialize_grads)
  if not hasattr(Tensor, "train"): Tensor.train = G.train
  if not hasattr(Tensor, "test"): Tensor.test = G.test
  if not hasattr(Tensor, "training"): Tensor.training = False
  if not hasattr(Tensor, "no_grad"): Tensor.no_grad = False
  return Tensor

@needs_tensor
def test_tensor_backward_matmul():
  Tensor = _bind()
  rng = np.random.default_rng(0)
  a, b = rng.standard_normal((3, 4)).astype(np.float32), rng.standard_normal((4, 2)).astype(np.float32)
  ta, tb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
  (ta @ tb).sum().backward()
  np.testing.assert_allclose(ta.grad.numpy(), np.ones((3, 2)) @ b.T, rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(tb.grad.numpy(), a.T @ np.ones((3, 2)), rtol=1e-5, atol=1e-5)

@needs_tensor
@pytest.mark.parametrize("op", ["trunc", "floor", "ceil", "round"])
def test_rounding_has_zero_grad(op):
  # torch's and public tinygrad's: zeros, also where the rounding is x's only path to the loss (x.grad was None) and at
  # +-inf and NaN; beside another path it adds nothing
  Tensor = _bind()
  x = Tensor([1.5, -2.5, 0.5, float("inf"), float("-inf"), float("nan")], requires_grad=True)
  getattr(x, op)().sum().backward()
  assert x.grad is not None
  np.testing.assert_array_equal(x.grad.numpy(), np.zeros(6, np.float32))
  x = Tensor([1.5, -2.25], requires_grad=True)
  (getattr(x, op)() * x).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), getattr(np, "fix" if op == "trunc" else op)(np.array([1.5, -2.25])))

@needs_tensor
@pytest.mark.parametrize("mode", ["floor", "trunc", "//"])
def test_rounding_division_has_zero_grad(mode):
  # torch's: a rounded quotient is piecewise constant, so both operands get 0, also where the quotient is past 2**24 (it was
  # a/b's gradient there: 1e10 // 3 gave x 0.33 and y -1.1e9), the divisor is 0 (inf, NaN) or an operand infinite
  Tensor = _bind()
  xs, ys = [-1e20, 7.0, 1e10, 3.0, 5.0, float("inf"), -2.5], [-501.0, 2.0, 3.0, 0.0, -0.0, 2.0, float("inf")]
  x, y = Tensor(xs, requires_grad=True), Tensor(ys, requires_grad=True)
  out = x // y if mode == "//" else x.div(y, rounding_mode=mode)
  out.sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), np.zeros(7, np.float32))
  np.testing.assert_array_equal(y.grad.numpy(), np.zeros(7, np.float32))
  x = Tensor([7.5, -1e10], requires_grad=True)   # beside another path it adds nothing
  ((x // 2.0 if mode == "//" else x.div(2.0, rounding_mode=mode)) + x).sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), np.ones(2, np.float32))

@needs_tensor
def test_tensor_backward_accumulates():
  Tensor = _bind()
  x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  (x * x).sum().backward()
  (x * 3).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [5.0, 7.0, 9.0])

@needs_tensor
def test_tensor_backward_twice_on_one_loss_accumulates_in_place():
  # backward() twice on the same loss (once raised "truth value of a Tensor is ambiguous"), and the sum lands in the
  # .grad tensor that was there: a reference taken after the first backward sees it (public tinygrad and torch)
  Tensor = _bind()
  x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  loss = (x * x).sum()
  loss.backward()
  first = x.grad
  loss.backward()
  (x * 3).sum().backward()
  assert x.grad is first
  np.testing.assert_allclose(first.numpy(), [7.0, 11.0, 15.0])
  # a .grad that is the buffer of the gradient passed in (x + 0) is not written into: G keeps its values
  G = Tensor([10.0, 20.0, 30.0]).realize()
  y = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  (y + 0).backward(G)
  (y + 0).backward(G)
  assert y.grad.tolist() == [20.0, 40.0, 60.0] and G.tolist() == [10.0, 20.0, 30.0]

@needs_tensor
def test_tensor_clones_get_their_own_gradients():
  # two clones of one tensor are two tensors: each gets its own gradient, not the sum of both (they were one node)
  Tensor = _bind()
  w1, w2 = Tensor(3.5).clone(), Tensor(3.5).clone()
  (w1 + w2 * 2).backward()
  assert (w1.grad.item(), w2.grad.item()) == (1.0, 2.0)
  a = Tensor([1.0, 2.0], requires_grad=True)
  b, c = a.clone(), a.clone()
  (b * c * Tensor([1.0, 3.0])).sum().backward()
  np.testing.assert_allclose(b.grad.numpy(), [1.0, 6.0])
  np.testing.assert_allclose(c.grad.numpy(), [1.0, 6.0])
  np.testing.assert_allclose(a.grad.numpy(), [2.0, 12.0])

@needs_tensor
def test_tensor_clone_copies_grad():
  Tensor = _bind()
  a = Tensor([1.0, 2.0], requires_grad=True)
  (a * 5).sum().backward()
  b = a.clone()
  assert b.grad is not None and b.grad is not a.grad
  np.testing.assert_allclose(b.grad.numpy(), [5.0, 5.0])

@needs_tensor
def test_tensor_gradient_fn():
  Tensor = _bind()
  x = Tensor([1.0, 2.0], requires_grad=True)
  y = Tensor([3.0, 4.0], requires_grad=True)
  gx, gy = (x * y).sum().gradient(x, y)
  np.testing.assert_allclose(gx.numpy(), [3.0, 4.0])
  np.testing.assert_allclose(gy.numpy(), [1.0, 2.0])
  assert x.grad is None   # gradient() does not touch .grad

@needs_tensor
def test_tensor_gradient_of_an_unused_target_is_zeros():
  # public tinygrad's gradient(): zeros for a target the output does not depend on; materialize_grads=False raises
  Tensor = _bind()
  x, w = Tensor([1.0, 2.0, 3.0]), Tensor([4.0, 5.0, 6.0])
  gx, gw = x.sum().gradient(x, w)
  assert gx.tolist() == [1.0, 1.0, 1.0] and gw.tolist() == [0.0, 0.0, 0.0]
  with pytest.raises(RuntimeError, match="does not depend"): x.sum().gradient(w, materialize_grads=False)

@needs_tensor
def test_tensor_gradient_wrt_a_constant():
  # Tensor(2.0) and the 2.0 of `t * 2.0` were one hash-consed node: the gradient took both factors as t and came out 4; a
  # Python number in an expression is now a node of its own (public tinygrad's weak constants), so each is the derivative
  Tensor = _bind()
  for make in (lambda: Tensor(2.0), lambda: Tensor.full((3,), 2.0), lambda: Tensor.full((2, 2), 2.0), lambda: Tensor.ones(3) * 2):
    t = make()
    np.testing.assert_allclose((t * 2.0).sum().gradient(t)[0].numpy(), np.full(t.shape, 2.0))
    np.testing.assert_allclose((t * 3.0 + 2.0 - t / 2.0).sum().gradient(t)[0].numpy(), np.full(t.shape, 2.5))
  for t in (Tensor.ones(3), Tensor.ones(3, requires_grad=True), Tensor.ones(3).realize()):
    np.testing.assert_allclose(((t - 1.0) ** 2 + t * 1.0).sum().gradient(t)[0].numpy(), [1.0, 1.0, 1.0])
  x = Tensor.eye(3)   # public tinygrad's gradient() example: a constant target used once
  assert Tensor([[2.0, 0, -2.0]]).matmul(x).sum().gradient(x)[0].tolist() == [[2.0] * 3, [0.0] * 3, [-2.0] * 3]

@needs_tensor
def test_tensor_gradient_shaped_with_extra_ones():
  # a gradient whose shape differs from the output's only by size-1 dims is taken (shape (1,) for a scalar, as public
  # tinygrad); any other shape raises, also as public tinygrad's AssertionError
  Tensor = _bind()
  x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  assert (x * x).sum().gradient(x, gradient=Tensor([3.0]))[0].tolist() == [6.0, 12.0, 18.0]
  (x * 2).reshape(3, 1).backward(Tensor([1.0, 10.0, 100.0]))
  assert x.grad.tolist() == [2.0, 20.0, 200.0]
  for bad in (Tensor([1.0, 1.0]), Tensor([1.0])):
    with pytest.raises(ValueError, match="gradient shape"): (x * 2).gradient(x, gradient=bad)
  with pytest.raises(AssertionError): (x * 2).gradient(x)

@needs_tensor
def test_tensor_nonscalar_needs_gradient():
  Tensor = _bind()
  x = Tensor([1.0, 2.0], requires_grad=True)
  with pytest.raises(ValueError): (x * 2).backward()
  (x * 2).backward(Tensor([1.0, 10.0]))
  np.testing.assert_allclose(x.grad.numpy(), [2.0, 20.0])

@needs_tensor
def test_tensor_no_requires_grad_untouched():
  Tensor = _bind()
  x = Tensor([1.0, 2.0], requires_grad=True)
  c = Tensor([5.0, 6.0], requires_grad=False)   # only False opts out: the default (None) gets a gradient, like tinygrad
  (x * c).sum().backward()
  assert c.grad is None
  np.testing.assert_allclose(x.grad.numpy(), [5.0, 6.0])

@needs_tensor
def test_tensor_detach():
  Tensor = _bind()
  x = Tensor([1.0, 2.0], requires_grad=True)
  (x * x.detach()).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [1.0, 2.0])

@needs_tensor
def test_train_and_no_grad_contexts():
  Tensor = _bind()
  from tinygrad.gradient import no_grad
  assert not Tensor.training
  with Tensor.train():
    assert Tensor.training
    with Tensor.test(): assert not Tensor.training
    assert Tensor.training
  assert not Tensor.training
  with no_grad(): assert Tensor.no_grad
  assert not Tensor.no_grad

@needs_tensor
def test_tensor_ops_gradients_vs_numpy():
  # relu, log_softmax-style cross entropy through the front end's composite ops
  Tensor = _bind()
  rng = np.random.default_rng(1)
  x = rng.standard_normal((4, 5)).astype(np.float32)
  tx = Tensor(x, requires_grad=True)
  tx.relu().sum().backward()
  np.testing.assert_allclose(tx.grad.numpy(), (x > 0).astype(np.float32))
  tx.grad = None
  labels = np.array([0, 3, 1, 4])
  onehot = np.eye(5, dtype=np.float32)[labels]
  (-(tx.log_softmax() * Tensor(onehot)).sum(1).mean()).backward()
  p = np.exp(x - x.max(1, keepdims=True))
  p /= p.sum(1, keepdims=True)
  p[np.arange(4), labels] -= 1
  np.testing.assert_allclose(tx.grad.numpy(), p / 4, atol=1e-5)

# ---- Tensor level: composite ops of the front end, float64, against finite differences of numpy references ----
def _np_softmax(x, ax=-1):
  e = np.exp(x - x.max(ax, keepdims=True))
  return e / e.sum(ax, keepdims=True)
def _np_maxpool(x):
  n, c, h, w = x.shape
  return x[:, :, :h//2*2, :w//2*2].reshape(n, c, h//2, 2, w//2, 2).max((3, 5))
def _np_conv(x, w):
  out = np.zeros((x.shape[0], w.shape[0], x.shape[2]-w.shape[2]+1, x.shape[3]-w.shape[3]+1))
  for i in range(out.shape[2]):
    for j in range(out.shape[3]):
      out[:, :, i, j] = np.einsum("nchw,ochw->no", x[:, :, i:i+w.shape[2], j:j+w.shape[3]], w)
  return out

TENSOR_OPS = [
  ("relu", lambda x: x.relu(), lambda x: np.maximum(x, 0), [(3, 4)]),
  ("sigmoid", lambda x: x.sigmoid(), lambda x: 1/(1+np.exp(-x)), [(3, 4)]),
  ("tanh", lambda x: x.tanh(), np.tanh, [(3, 4)]),
  ("exp_log", lambda x: (x.exp() + 1).log(), lambda x: np.log(np.exp(x) + 1), [(5,)]),
  ("gelu", lambda x: x.gelu(), lambda x: 0.5*x*(1+np.tanh(0.7978845608*(x+0.044715*x**3))), [(6,)]),
  ("square_mean", lambda x: x.square().mean(1), lambda x: (x*x).mean(1), [(3, 4)]),
  ("var", lambda x: x.var(0), lambda x: x.var(0, ddof=1), [(4, 3)]),
  ("matmul", lambda x, y: x @ y, lambda x, y: x @ y, [(3, 4), (4, 2)]),
  ("softmax", lambda x: x.softmax(), _np_softmax, [(2, 5)]),
  ("log_softmax", lambda x: x.log_softmax(), lambda x: np.log(_np_softmax(x)), [(2, 5)]),
  ("layernorm", lambda x: x.layernorm(), lambda x: (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5), [(2, 4)]),
  ("max_axis", lambda x: x.max(1), lambda x: x.max(1), [(3, 4)]),
  ("min", lambda x: x.min(), lambda x: x.min(), [(3, 4)]),
  ("cumsum", lambda x: x.cumsum(0), lambda x: x.cumsum(0), [(5,)]),
  ("pad_slice", lambda x: x.pad(((1, 2), (0, 1)))[1:3, ::-1], lambda x: np.pad(x, ((1, 2), (0, 1)))[1:3, ::-1], [(2, 3)]),
  ("transpose_reshape", lambda x: x.T.reshape(-1) * 2, lambda x: x.T.reshape(-1) * 2, [(2, 3)]),
  ("broadcast_div", lambda x, y: x / (y.abs() + 1), lambda x, y: x / (np.abs(y) + 1), [(3, 4), (4,)]),
  ("where_cmp", lambda x: (x > 0).where(x * 3, x.exp()), lambda x: np.where(x > 0, x * 3, np.exp(x)), [(6,)]),
  ("max_pool2d", lambda x: x.max_pool2d(), _np_maxpool, [(1, 2, 4, 4)]),
  ("conv2d", lambda x, w: x.conv2d(w), _np_conv, [(1, 2, 4, 4), (3, 2, 2, 2)]),
]
@needs_tensor
@pytest.mark.parametrize("name,ft,fn,shapes", TENSOR_OPS, ids=[o[0] for o in TENSOR_OPS])
def test_tensor_op_gradients(name, ft, fn, shapes):
  Tensor = _bind()
  arrays = [distinct(s, i) if name.startswith(("max", "min")) else rnd(s, seed=i) for i, s in enumerate(shapes)]
  ts = [Tensor(a, dtype=dtypes.float64, requires_grad=True) for a in arrays]
  out = ft(*ts)
  ref = fn(*arrays)
  w = np.asarray(np.random.default_rng(9).standard_normal(np.shape(ref)))
  grads = (out * Tensor(w.reshape(-1), dtype=dtypes.float64).reshape(w.shape)).sum().gradient(*ts)  # before realizing out: that cuts the graph
  np.testing.assert_allclose(out.numpy(), ref, atol=1e-6, rtol=1e-6)
  for i, g in enumerate(grads):
    np.testing.assert_allclose(g.numpy(), numeric_grad(fn, arrays, w, i), atol=1e-5, rtol=1e-4, err_msg=f"{name}: input {i}")

# ---- backward after realizing, and the default requires_grad (public tinygrad's semantics) ----
def _mlp_ref(a: np.ndarray, w: np.ndarray) -> tuple[float, np.ndarray]:
  h = np.maximum(a @ w, 0)
  return float((h * h).sum()), a.T @ (2 * h * (a @ w > 0))

@needs_tensor
@pytest.mark.parametrize("read", ["item", "realize", "numpy", "hidden_realized"])
def test_backward_after_reading_the_loss_keeps_the_graph(read):
  Tensor = _bind()
  rng = np.random.default_rng(1)
  a, w = rng.standard_normal((5, 3)).astype(np.float32), rng.standard_normal((3, 2)).astype(np.float32)
  tw = Tensor(w, requires_grad=True)
  h = (Tensor(a) @ tw).relu()
  if read == "hidden_realized": h.realize()   # an intermediate realized too: the gradient still flows through it
  loss = (h * h).sum()
  if read == "item": val = loss.item()
  elif read == "numpy": val = float(loss.numpy())
  else: val = float(loss.realize().numpy())
  ref_loss, ref_grad = _mlp_ref(a, w)
  np.testing.assert_allclose(val, ref_loss, rtol=1e-5)
  loss.backward()
  assert tw.grad is not None
  np.testing.assert_allclose(tw.grad.numpy(), ref_grad, rtol=1e-4, atol=1e-5)
  # gradient() as well
  np.testing.assert_allclose(loss.gradient(tw)[0].numpy(), ref_grad, rtol=1e-4, atol=1e-5)

@needs_tensor
@pytest.mark.parametrize("read", ["numpy", "realize"])
def test_fresh_random_weights_get_gradients_after_the_forward_is_read(read):
  # a fresh model's weights are lazy random inits: reading the forward computes them (and the init's seed arithmetic into
  # buffers of their own); backward afterwards must still reach the weights, with the values the forward used
  Tensor = _bind()
  from tinygrad import nn
  a = np.random.default_rng(3).standard_normal((4, 3)).astype(np.float32)
  l1, l2 = nn.Linear(3, 5), nn.Linear(5, 2)
  out = l2(l1(Tensor(a)).relu())
  getattr(out, read)()
  (out * out).sum().backward()
  w1, b1, w2, b2 = (t.numpy() for t in (l1.weight, l1.bias, l2.weight, l2.bias))
  h = np.maximum(a @ w1.T + b1, 0)
  o = h @ w2.T + b2
  np.testing.assert_allclose(out.numpy(), o, rtol=1e-5, atol=1e-6)
  dh = (2 * o) @ w2 * (h > 0)
  assert all(t.grad is not None for t in (l1.weight, l1.bias, l2.weight, l2.bias))
  np.testing.assert_allclose(l2.weight.grad.numpy(), (2 * o).T @ h, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(l1.weight.grad.numpy(), dh.T @ a, rtol=1e-4, atol=1e-5)
  np.testing.assert_allclose(l1.bias.grad.numpy(), dh.sum(0), rtol=1e-4, atol=1e-5)

@needs_tensor
def test_tensors_realized_from_equal_graphs_get_their_own_gradients():
  Tensor = _bind()
  w1, w2 = Tensor.ones(3).contiguous().realize(), Tensor.ones(3).contiguous().realize()   # one (hash-consed) graph each
  (w1 * Tensor([1.0, 2.0, 3.0]) + w2 * Tensor([10.0, 20.0, 30.0])).sum().backward()
  assert w1.grad.tolist() == [1.0, 2.0, 3.0] and w2.grad.tolist() == [10.0, 20.0, 30.0]

@needs_tensor
def test_linear_weights_get_grads_without_an_optimizer():
  Tensor = _bind()
  from tinygrad import nn
  rng = np.random.default_rng(2)
  a = rng.standard_normal((4, 3)).astype(np.float32)
  lin = nn.Linear(3, 2)
  frozen = Tensor(rng.standard_normal((4, 2)).astype(np.float32), requires_grad=False)
  out = lin(Tensor(a)) * frozen
  out.sum().backward()
  np.testing.assert_allclose(lin.weight.grad.numpy(), frozen.numpy().T @ a, rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(lin.bias.grad.numpy(), frozen.numpy().sum(0), rtol=1e-5)
  assert frozen.grad is None
  d = Tensor(a)
  (lin(d.detach()).sum()).backward()
  assert d.grad is None   # only reached through detach()

@needs_tensor
def test_constant_tensors_with_requires_grad_get_their_own_gradients():
  # Tensor(3.0), Tensor.ones/zeros/full are broadcast constants, one hash-consed node per value: before, a constant with
  # requires_grad=True got .grad None after backward (silently untrained), and two equal ones would share a node
  Tensor = _bind()
  x = Tensor(3.0, requires_grad=True)
  (x * x).backward()
  assert x.grad is not None and x.grad.item() == 6.0
  a, b = Tensor.ones(4, requires_grad=True), Tensor.ones(4, requires_grad=True)
  (a * 2 + b * 3).sum().backward()
  assert a.grad.tolist() == [2.0] * 4 and b.grad.tolist() == [3.0] * 4
  y = Tensor.full((2, 3), 2.0)
  y.requires_grad = True   # set after construction: the same
  (y * y).sum().backward()
  np.testing.assert_array_equal(y.grad.numpy(), np.full((2, 3), 4.0, np.float32))
  np.testing.assert_array_equal(y.numpy(), np.full((2, 3), 2.0, np.float32))
  assert Tensor.zeros(0, 3, requires_grad=True).shape == (0, 3)

def test_abs_gradient_at_zero_is_zero_like_torch():
  # d|x|/dx at 0 (either sign) is sign(0) = 0 as torch's; the where(x <= 0, -x, x) form gave -1 there, and abs(-0.0) is +0
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  vals = [float("nan"), 1.0, -0.0, 0.0, -2.0, float("-inf")]
  x, tx = Tensor(vals, requires_grad=True), torch.tensor(vals, requires_grad=True)
  y, ty = x.abs(), tx.abs()
  y.sum().backward(); ty.sum().backward()
  np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
  assert not np.signbit(y.numpy()[2])
  np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())

def test_abs_gradient_at_zero_times_an_infinite_gradient_is_nan_like_torch():
  # torch's d|x|/dx is g*sgn(x), so at 0 an infinite g (sqrt(|x|), |x|**-1) gives NaN, as public tinygrad 0.14 too; the
  # detached zero branch gave 0 there, a finite gradient where the function has none. Found by test_grad_fuzz.py
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  for fn in (lambda x: x.abs().sqrt(), lambda x: x.abs() ** -1.0, lambda x: x.abs().log(), lambda x: x.abs() ** 2.0):
    vals = [0.0, -0.0, 1.0, -2.0]
    x, tx = Tensor(vals, requires_grad=True), torch.tensor(vals, requires_grad=True)
    fn(x).sum().backward(); fn(tx).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())

def test_pow_exponent_gradient_at_a_zero_base_times_an_infinite_gradient_is_nan_like_torch():
  # torch's d x**y/dy is g * where(x == 0 and y >= 0, 0, x**y ln x): at x = 0, y = 0.5 with g = inf ((x**y)**-0.5 has
  # g = -inf/2) that is NaN, as public tinygrad 0.14 too; the where around g gave 0. Found by test_grad_fuzz.py
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  xs, ys = [0.0, 0.0, 0.0, 2.0, 0.5], [-1.0, 0.5, 0.0, -1.0, 1.0]
  x, y, tx, ty = Tensor(xs, requires_grad=True), Tensor(ys, requires_grad=True), torch.tensor(xs, requires_grad=True), torch.tensor(ys, requires_grad=True)
  ((x ** y) ** -0.5).sum().backward()
  ((tx ** ty) ** -0.5).sum().backward()
  np.testing.assert_allclose(y.grad.numpy(), ty.grad.numpy(), rtol=1e-6)
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)

# ---- gradients at the edges, against torch (upstream test_ops' backward checks) ----
EDGE_FNS = {  # name: (tinygrad, torch, inputs). exp's range reduction differentiated to 0 at +inf (torch: inf); cos/tan's
  # where over two formulas gave NaN at 0; acosh/atanh gave NaN outside their domain where torch's 1/sqrt(x^2-1), 1/(1-x^2)
  # are finite; cos at 1e6 was off by 30%
  "exp": (lambda x: x.exp(), lambda x: x.exp(), [math.inf, -math.inf, math.nan, 0.0, 88.0, -300.0, 1.5, -20.0]),
  "cos": (lambda x: x.cos(), lambda x: x.cos(), [math.nan, math.inf, 0.0, -0.0, 0.3, 2.0, 1e4, 1e6, -1e5]),
  "tan": (lambda x: x.tan(), lambda x: x.tan(), [math.nan, math.inf, 0.0, 0.3, -1.4, 4.0, 100.0]),
  "acosh": (lambda x: x.acosh(), lambda x: x.acosh(), [-1.7, -298.0, 1.5, 301.0, 0.5, math.nan]),
  "atanh": (lambda x: x.atanh(), lambda x: x.atanh(), [1.57, -298.0, 301.0, 0.5, -0.9, 0.0]),
}
@pytest.mark.parametrize("name", list(EDGE_FNS))
def test_transcendental_gradients_match_torch_at_edges(name):
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  ft, fr, vals = EDGE_FNS[name]
  x, tx = Tensor(vals), torch.tensor(vals, requires_grad=True)
  want = torch.autograd.grad(fr(tx).sum(), tx)[0].numpy()
  np.testing.assert_allclose(ft(x).sum().gradient(x)[0].numpy(), want, rtol=1e-4, atol=1e-6, equal_nan=True)

@pytest.mark.parametrize("axis", [None, 1])
def test_prod_gradient_with_zeros_is_the_product_of_the_others(axis):
  # prod/x was NaN at a 0 (torch: the product of the others; 0 where another element is 0 too)
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  vals = [[0.0, 2.0, 3.0], [0.0, 0.0, 3.0], [1.5, -2.0, 3.0], [4.0, 0.0, -0.5]]
  x, tx = Tensor(vals), torch.tensor(vals, requires_grad=True)
  want = torch.autograd.grad((tx.prod() if axis is None else tx.prod(axis)).sum(), tx)[0].numpy()
  np.testing.assert_allclose((x.prod() if axis is None else x.prod(axis)).sum().gradient(x)[0].numpy(), want, rtol=1e-6)

@pytest.mark.parametrize("vals", [[-math.inf, 0.0], [0.0, -math.inf, 2.0], [math.inf, 0.0, 0.0], [0.0, math.inf, 0.0], [-2.0, 0.0, 3.0]])
def test_prod_gradient_beside_a_zero_and_an_infinity(vals):
  # prod([-inf, 0]) is NaN and prod/x at the -inf was NaN/-inf: its gradient is the other's product, 0 (torch's too)
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  x, tx = Tensor(vals), torch.tensor(vals, requires_grad=True)
  want = torch.autograd.grad(tx.prod() * 1.5, tx)[0].numpy()
  np.testing.assert_allclose((x.prod() * 1.5).gradient(x)[0].numpy(), want, rtol=1e-6, equal_nan=True)

@settings(max_examples=25, deadline=None)
@given(st.lists(st.sampled_from([-math.inf, math.inf, -1.0, 0.0, 2.0]), min_size=1, max_size=7), st.sampled_from(["cummax", "cummin"]))
def test_cummax_gradient_reaches_the_input_whole(vals, op):
  # the running max over windows padded with -inf: an -inf prefix's max tied the padding, which took a share of its
  # gradient (cummax([-inf, 0]) passed on half of g[0]); each output's gradient goes to the tied inputs, all of it
  from tinygrad.tensor import Tensor
  x = Tensor(vals, requires_grad=True)
  w = np.arange(1, len(vals) + 1, dtype=np.float32)
  getattr(x, op)(0)[0].mul(Tensor(w)).sum().backward()
  np.testing.assert_allclose(x.grad.numpy().sum(), w.sum(), rtol=1e-6)
  assert (x.grad.numpy() >= 0).all()

def test_cummax_gradient_of_a_long_axis_starting_at_minus_inf():
  # past 256 elements the scan is blocks plus the running max of the blocks before: the first block's carry was the
  # -inf fill, which took half the gradient of an -inf first block
  from tinygrad.tensor import Tensor
  vals = np.full(300, -np.inf, np.float32)
  vals[256:] = 1.0
  x = Tensor(vals, requires_grad=True)
  x.cummax(0)[0].sum().backward()
  g = x.grad.numpy()
  np.testing.assert_allclose(g.sum(), 300, rtol=1e-6)
  np.testing.assert_allclose(g[:256].sum(), 256, rtol=1e-6)   # (the first block's outputs, to its own inputs)

def test_split_max_gradient_of_an_all_minus_inf_row_reaches_the_input_whole():
  # a long max runs as chunks, the last padded with -inf: in a row of -inf the padding tied the max and took its share
  # (70001 elements: 0.53 of the gradient arrived)
  from tinygrad.tensor import Tensor
  x = Tensor(np.full((2, 70001), -np.inf, np.float32), requires_grad=True)
  x.max(1).sum().backward()
  np.testing.assert_allclose(x.grad.numpy().astype(np.float64).sum(1), [1.0, 1.0], rtol=1e-6)

def test_max_gradient_is_never_shared_with_an_identity_fill():
  # the max rule counts the positions of a -inf fill (the max's identity: max_pool2d's and cummax's padding) as no ties:
  # they have no gradient path, and their share was lost. A fill of another value ties as an element does in torch
  # (x.pad((1, 1)).amax() of [-1, -2, 0] gives the 0 a third, the pad's zeros the rest)
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  for vals, ours, ref in ((([-1.0, -2.0, 0.0]), lambda x: x.pad((1, 1)).max(), lambda t: torch.nn.functional.pad(t, (1, 1)).amax()),
                          (([-1.0, -2.0, 0.0]), lambda x: (x > -1.5).where(x, 0.0).max(), lambda t: torch.where(t > -1.5, t, 0.0).amax()),
                          (([-1.0, -2.0, 0.0]), lambda x: (x > 0).where(x, 0.0).max(), lambda t: torch.where(t > 0, t, 0.0).amax())):
    x, t = Tensor(vals, requires_grad=True), torch.tensor(vals, requires_grad=True)
    ours(x).backward()
    ref(t).backward()
    np.testing.assert_allclose(x.grad.numpy(), t.grad.numpy(), rtol=1e-6)
  x = Tensor([-math.inf, -2.0, -math.inf], requires_grad=True)
  (x > -3).where(-math.inf, x).max().backward()   # (torch: a third each, the -inf fill's third lost)
  assert x.grad.tolist() == [0.5, 0.0, 0.5]

def test_max_pool2d_gradient_never_goes_to_the_padding():
  # max_pool2d pads with -inf: a window whose inputs are all -inf tied the padding, which took its share (lost);
  # torch gives the whole gradient to an input
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  vals = np.array([[[[-np.inf, 1.0], [2.0, 3.0]]]], np.float32)
  x, tx = Tensor(vals, requires_grad=True), torch.tensor(vals, requires_grad=True)
  x.max_pool2d(2, stride=1, padding=1).sum().backward()
  torch.nn.functional.max_pool2d(tx, 2, stride=1, padding=1).sum().backward()
  np.testing.assert_array_equal(x.grad.numpy(), tx.grad.numpy())
  x = Tensor(np.full((1, 1, 3, 3), -np.inf, np.float32), requires_grad=True)
  x.max_pool2d(2, stride=2, padding=1).sum().backward()
  np.testing.assert_allclose(x.grad.numpy().sum(), 4.0)   # four windows, each gradient 1, split among its -inf inputs

def test_clip_gradient_is_one_on_the_bounds():
  # clip was max/min, whose ties split the gradient: 0.5 on a bound (torch: 1); a NaN bound gives NaN, max_ wins over min_
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  vals = [-3.0, -2.5, 0.0, 1.5, 2.0, math.nan]
  for lo, hi in [(-2.5, 1.5), (3.0, 0.0), (None, 0.0), (0.0, None), ([math.nan] * 6, [1.5] * 6)]:
    x, tx = Tensor(vals), torch.tensor(vals, requires_grad=True)
    y = x.clip(*(Tensor(b) if isinstance(b, list) else b for b in (lo, hi)))
    ty = tx.clamp(*(torch.tensor(b) if isinstance(b, list) else b for b in (lo, hi)))
    np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
    np.testing.assert_array_equal(y.sum().gradient(x)[0].numpy(), torch.autograd.grad(ty.sum(), tx)[0].numpy())

@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "logsumexp", "softmin"])
def test_softmax_family_gradient_is_torch_tight(fn):
  # the gradient of sum(softmax) is 0 up to rounding; the one through the max shift added ~4e-7 noise to the row's argmax
  # (torch's is below 1e-7, and so is ours with the shift detached, as torch and public tinygrad)
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  a = np.random.default_rng(0).uniform(-2, 2, (45, 65)).astype(np.float32)
  x, tx = Tensor(a), torch.tensor(a, requires_grad=True)
  y = x.logsumexp(1) if fn == "logsumexp" else getattr(x, fn)(1)
  ty = tx.logsumexp(1) if fn == "logsumexp" else (torch.nn.functional.softmin(tx, 1) if fn == "softmin" else getattr(tx, fn)(1))
  np.testing.assert_allclose(y.sum().gradient(x)[0].numpy(), torch.autograd.grad(ty.sum(), tx)[0].numpy(), atol=1e-7, rtol=1e-3)

@needs_tensor
def test_gradient_passes_through_chains_of_realized_tensors_and_skips_graphs_with_nothing_to_train():
  # backward forgets the kept graphs of realized tensors that hold no tensor to differentiate (a realized Tensor.randn
  # input's random graph): the gradient is the same, through graphs that do hold one, directly or through another's
  Tensor = _bind()
  from tinygrad.gradient import _Realized, _live_tensors
  w = Tensor([1.0, 2.0, 3.0]) * 1   # lazy: its node is inside y's graph
  y = (w * 2).realize()
  z = (y + 1).realize()             # its graph reads y's buffer only: the gradient reaches w through y's graph
  x = Tensor.randn(3).realize()     # its graph (seeds, counters: ints) holds nothing to train
  ex = _Realized(_live_tensors())
  assert x.uop in ex.graphs and z.uop in ex.graphs
  ex.prune({w.uop})
  assert x.uop not in ex.graphs and z.uop in ex.graphs and y.uop in ex.graphs
  (z * x).sum().backward()
  np.testing.assert_allclose(w.grad.numpy(), 2 * x.numpy(), rtol=1e-6)
  np.testing.assert_allclose(x.grad.numpy(), z.numpy(), rtol=1e-6)
  np.testing.assert_allclose(y.grad.numpy(), x.numpy(), rtol=1e-6)

@needs_tensor
def test_gradient_passes_through_a_loop_of_realizes_whose_tensors_died():
  # Y = (Y * w).realize() in a loop: each Y's kept graph reads the one before's buffer only, and that tensor was gone, so
  # w's gradient stopped at the last step's buffer: [1, 8] (the last Y's d/dw, w**3) where torch gives 4 * w**3 = [4, 32]
  Tensor = _bind()
  w = Tensor([1.0, 2.0], requires_grad=True)
  Y = w * 1
  for _ in range(3): Y = (Y * w).realize()
  Y.sum().backward()
  np.testing.assert_allclose(w.grad.numpy(), [4.0, 32.0])
  # (through a view, a reduce and a sharded step too: x's gradient through each buffer the loop made)
  x = Tensor([0.5, -1.0, 2.0], requires_grad=True)
  Z = x * 1
  for i in range(4): Z = ((Z * x).flip(0) + (Z * Z).sum() * 0.1).realize() if i % 2 else (Z * x + 1).realize()
  tx = __import__("torch").tensor([0.5, -1.0, 2.0], requires_grad=True) if importlib.util.find_spec("torch") else None
  Z.sum().backward()
  if tx is not None:
    tz = tx * 1
    for i in range(4): tz = ((tz * tx).flip(0) + (tz * tz).sum() * 0.1) if i % 2 else tz * tx + 1
    tz.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5)

@needs_tensor
def test_a_loop_of_realizes_keeps_memory_flat_without_a_tensor_to_train():
  # the kept graphs of dead tensors are kept only with a requires_grad=True tensor below them: a loop of realizes of
  # tensors with nothing to train (requires_grad None or False) holds its last buffer, not one per step, also while a
  # requires_grad=True tensor lives elsewhere
  Tensor = _bind()
  import gc
  from tinygrad.helpers import GlobalCounters
  other = Tensor.ones(3, requires_grad=True).realize()
  for rg in (None, False):
    w = Tensor([1.0, 1.0001] * 256, requires_grad=rg).realize()
    Y = (w * 1).realize()
    while gc.collect(): pass   # (a buffer's node is in a cycle of its own: one gc pass a link)
    base = GlobalCounters.mem_used
    for _ in range(1000): Y = (Y * w).realize()
    while gc.collect(): pass
    assert GlobalCounters.mem_used - base <= 4 * w.nbytes(), (rg, GlobalCounters.mem_used - base)
  w = Tensor([1.0, 1.0001] * 256, requires_grad=True).realize()   # (with one: each step's buffer is kept, as torch keeps its graph)
  Y = (w * 1).realize()
  while gc.collect(): pass
  base = GlobalCounters.mem_used
  for _ in range(20): Y = (Y * w).realize()
  while gc.collect(): pass
  assert GlobalCounters.mem_used - base >= 15 * w.nbytes()
  del Y
  while gc.collect(): pass   # (and freed with the last tensor)
  assert GlobalCounters.mem_used - base <= 0
  assert other.requires_grad

@needs_tensor
def test_the_check_mode_finds_an_implicit_gradient_missing_from_its_index():
  # CHECK_LAZY_INDEX (the test suite's) checks grad_holders too: a .grad of a requires_grad=None tensor set where nothing
  # noted it is computed early by the next update, as a reader, instead of staying lazy; the check raises there
  Tensor = _bind()
  from tinygrad.helpers import Context
  x, w = Tensor([1.0, 2.0]).realize(), Tensor([1.0, 1.0]).contiguous().realize()
  x.grad = w * 2   # (not through backward: not in the index)
  with Context(CHECK_LAZY_INDEX=1), pytest.raises(RuntimeError, match="grad_holders"):
    w += 1
    w.realize()
  x.grad = None

@needs_tensor
def test_backward_after_an_update_overwrote_what_the_graph_read_raises():
  # y = (x*x).sum() realized, then x overwritten (an assign, an optimizer step): the kept graph's gradient 2*x read x's
  # new buffer (10 for [2, 4, 6]); torch raises "modified by an inplace operation". A gradient that needs no old value
  # (x*3's) and a graph built after the write are still differentiated
  Tensor = _bind()
  from tinygrad.nn import optim
  x = Tensor([1.0, 2.0, 3.0], requires_grad=True).realize()
  y, lin = (x * x).sum().realize(), (x * 3).sum().realize()
  x.assign(Tensor.full((3,), 5.0)).realize()
  with pytest.raises(RuntimeError, match="in-place update"): y.backward()
  with pytest.raises(RuntimeError, match="in-place update"): y.gradient(x)
  lin.backward()
  np.testing.assert_allclose(x.grad.numpy(), [3.0, 3.0, 3.0])
  x.grad = None
  (x * x).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), [10.0, 10.0, 10.0])
  w = Tensor([1.0, 2.0], requires_grad=True)
  opt, loss = optim.SGD([w], lr=0.1), (w * w * w).sum()
  loss.backward()
  opt.step()
  with pytest.raises(RuntimeError, match="in-place update"): loss.backward()   # (was 3 * new w**2)

@needs_tensor
def test_backward_through_a_read_of_a_tensor_with_a_pending_update_raises():
  # the graph read y (or the realized T) before `y += 1`, still lazy: y's node is the update now, which the graph does not
  # hold, so y.grad (and x.grad, through T's kept graph) was silently None, and gradient() zeros; torch raises
  Tensor = _bind()
  y = Tensor([1.0, 2.0], requires_grad=True).realize()
  r = (y * y).sum()
  y += 1
  with pytest.raises(RuntimeError, match="in-place update"): r.backward()
  with pytest.raises(RuntimeError, match="in-place update"): r.gradient(y)
  x = Tensor([1.0, 2.0], requires_grad=True)
  T = (x * 1).realize()
  r2 = (T * T).sum()
  T += 1
  with pytest.raises(RuntimeError, match="in-place update"): r2.backward()
  # once realized (or built after the update) the graph reads the new values and differentiates as usual
  y.realize()
  (y * y).sum().backward()
  np.testing.assert_allclose(y.grad.numpy(), [4.0, 6.0])

_PENDING_READS = {   # (z = a realized copy of t, or torch's clone) -> (the loss, read before the update; the update)
  "affine": (lambda z, t, u: (z * 2 + 1).sum(), lambda z, u: z.__iadd__(u * u)),   # (d/dz 2: reads no value of z)
  "read_through_a_product": (lambda z, t, u: ((z * 3) * (z * 3)).sum(), lambda z, u: z.__iadd__(u * u)),   # (torch saved z*3)
  "exp": (lambda z, t, u: z.exp().sum(), lambda z, u: z.__iadd__(u * u)),   # (torch saved the result)
  "view_affine": (lambda z, t, u: (z.T * 3).sum(), lambda z, u: z.__iadd__(u)),
  "row_update": (lambda z, t, u: (z[1] * 2).sum(), lambda z, u: z[0].__iadd__(u[0])),
  "other_operand": (lambda z, t, u: (z.detach() * 2 + t).sum(), lambda z, u: z.__iadd__(1)),
  "square": (lambda z, t, u: (z * z).sum(), lambda z, u: z.__iadd__(u * u)),   # (these need z's old value: torch raises)
  "square_of_a_view": (lambda z, t, u: (z.T * z.T).sum(), lambda z, u: z.__iadd__(u * u)),
  "product_with_a_leaf": (lambda z, t, u: (z * u).sum(), lambda z, u: z.__iadd__(1)),
}

@pytest.mark.parametrize("case", list(_PENDING_READS))
def test_backward_through_a_read_of_a_tensor_with_a_pending_update_raises_only_where_torch_does(case):
  # z (requires_grad None, as torch's non-leaf clone) is realized, read, then updated in place (still pending): backward
  # raised "an in-place update made since" for every read of z, also z * 2 + 1's, whose gradient (2) reads no value of z
  # and which torch differentiates (t.grad [2, 2, 2, 2]); it raises only where the gradient reads z's old value itself
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  loss, update = _PENDING_READS[case]
  a, b = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]], np.float32), np.array([[1.0, 2.0, -1.0], [0.5, -0.5, 3.0]], np.float32)
  tt, tu = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
  tz = (tt * 1).clone()
  tl = loss(tz, tt, tu)
  with torch.no_grad(): update(tz, tu)
  try:
    tl.backward()
  except RuntimeError as e:
    assert "modified by an inplace operation" in str(e)
    tt = None
  t, u = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
  z = (t * 1).contiguous().realize()
  lo = loss(z, t, u)
  update(z, u)
  if tt is None:
    with pytest.raises(RuntimeError, match="in-place update"): lo.backward()
    return
  lo.backward()
  for mine, ref in ((t, tt), (u, tu)):
    assert (mine.grad is None) == (ref.grad is None)
    if ref.grad is not None: np.testing.assert_allclose(mine.grad.numpy(), ref.grad.numpy(), rtol=1e-6)
  np.testing.assert_allclose(z.numpy(), tz.detach().numpy(), rtol=1e-6)   # (the update still runs)

@pytest.mark.parametrize("update", ["iadd", "view_assign", "setitem"])
def test_a_tensor_updated_after_the_forward_gets_the_gradient_of_the_value_read(update):
  # y = (x * 3).sum(); x += 1 (pending); y.backward() raised (x's node is the update, which y does not read, so x's gradient
  # was lost), where torch, updating the leaf under no_grad, gives x.grad [3, 3, 3], and ours too once the update has run;
  # x * x's gradient needs the old x: both raise
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  a = np.array([1.0, -2.0, 3.0], np.float32)
  def upd(x):
    if update == "iadd": x += 1
    if update == "view_assign": x[0:2].assign(x[1:] * 2) if isinstance(x, Tensor) else x[0:2].copy_(x[1:] * 2)
    if update == "setitem": x[1] = 7.0
  def loss(x, realized): return (x * 3).sum() if realized else (x * 3 + (x * 2).exp()).sum()   # (exp(2x): a value it read)
  for realized in (False, True):
    tx = torch.tensor(a, requires_grad=True)
    ty = loss(tx, realized)
    with torch.no_grad(): upd(tx)
    ty.backward()
    x = Tensor(a, requires_grad=True).realize()
    y = loss(x, realized)
    upd(x)
    if realized: x.realize()   # (the update has run: exp(2x)'s gradient would read the new x, and raises)
    g = y.gradient(x)[0].numpy()
    y.backward()
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(g, tx.grad.numpy(), rtol=1e-6)
    np.testing.assert_allclose(x.numpy(), tx.detach().numpy())
  x = Tensor(a, requires_grad=True).realize()
  y = (x * x).sum()
  upd(x)
  with pytest.raises(RuntimeError, match="in-place update"): y.backward()
  with pytest.raises(RuntimeError, match="in-place update"): y.gradient(x)
  # a realized copy with nothing asked of it (requires_grad None) gets the gradient of the value read too, as once its
  # update has run, and the gradient goes on to what it was computed from
  t = Tensor(a, requires_grad=True)
  z = (t * 1).contiguous().realize()
  y = (z * 2 + 1).sum()
  upd(z)
  y.backward()
  np.testing.assert_allclose(z.grad.numpy(), [2.0, 2.0, 2.0])
  np.testing.assert_allclose(t.grad.numpy(), [2.0, 2.0, 2.0])

# ---- gradient edge cases that differed from torch (each is torch's value; var's sign is documented in docs/guide.md) ----
def _grads(out, *xs): return [g.tolist() for g in out.sum().gradient(*xs)]

def test_bce_gradient_wrt_target_is_minus_logit_at_p_0_and_1():
  # d/dY of -(Y log p + (1-Y) log(1-p)) is log(1-p) - log(p): +-inf at p = 0, 1 (the clamped logs' derivative gave +-100)
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  p, y = [0.0, 1.0, 0.3], [0.5, 0.5, 0.2]
  tp, ty = torch.tensor(p, requires_grad=True), torch.tensor(y, requires_grad=True)
  torch.nn.functional.binary_cross_entropy(tp, ty).backward()
  xp, xy = Tensor(p, requires_grad=True), Tensor(y, requires_grad=True)
  loss = xp.binary_crossentropy(xy)
  gp, gy = _grads(loss, xp, xy)
  np.testing.assert_allclose(gy, ty.grad.tolist(), rtol=1e-6)
  np.testing.assert_allclose(gp, tp.grad.tolist(), rtol=1e-6)
  assert loss.item() == pytest.approx(torch.nn.functional.binary_cross_entropy(tp, ty).item(), rel=1e-6)   # still clamped: finite

def test_var_gradient_with_correction_at_least_n_is_inf_not_nan():
  # dividing by max(0, N - correction) = 0: the gradient is 2(x - mean)/0, +-inf, NaN at the mean (all NaN before; torch
  # gives +inf for both signs); std's stays NaN (0 * inf), as torch's
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  for c in (3, 4):
    x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
    v = x.var(correction=c)
    assert v.item() == math.inf and _grads(v, x)[0] == [-math.inf, pytest.approx(math.nan, nan_ok=True), math.inf]
    tx = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    torch.std(tx, correction=c).backward()
    assert all(math.isnan(g) for g in _grads(x.std(correction=c), x)[0]) and all(math.isnan(g) for g in tx.grad.tolist())
  x = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  np.testing.assert_allclose(_grads(x.var(), x)[0], [-1.0, 0.0, 1.0], atol=1e-7)   # the finite case keeps its path

def test_logaddexp_gradient_at_a_tie_of_infinities_is_nan():
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  inf = math.inf
  a, b = [-inf, inf, -inf, inf, 1.0, 2.0], [-inf, inf, 1.0, -inf, 1.0, -3.0]   # torch: NaN, NaN, (0, 1), (1, 0), 1/2, ...
  ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
  torch.logaddexp(ta, tb).sum().backward()
  xa, xb = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
  out = xa.logaddexp(xb)
  assert out.tolist() == torch.logaddexp(ta, tb).tolist()
  ga, gb = _grads(out, xa, xb)
  np.testing.assert_allclose(ga, ta.grad.tolist(), rtol=1e-6)
  np.testing.assert_allclose(gb, tb.grad.tolist(), rtol=1e-6)

def test_clamp_max_wins_the_gradient_where_min_exceeds_max_also_at_nan():
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  xs = [math.nan, 0.0, 5.0, 1.5, math.nan, 0.5, -1.0, 3.0]
  los, his = [2.0] * 4 + [0.0] * 4, [1.0] * 4 + [1.0] * 4   # min > max, then an ordinary [0, 1]
  tt = [torch.tensor(v, requires_grad=True) for v in (xs, los, his)]
  torch.clamp(*tt).sum().backward()
  ts = [Tensor(v, requires_grad=True) for v in (xs, los, his)]
  out = ts[0].clamp(ts[1], ts[2])
  np.testing.assert_equal(np.array(out.tolist()), torch.clamp(*tt).detach().numpy())
  for g, t in zip(_grads(out, *ts), tt): assert g == t.grad.tolist()

SECOND_ORDER = {   # name: (tinygrad, torch); each goes through exp's or tan's custom rule, whose value y is the forward pass
  "exp": (lambda x: x.exp(), lambda x: x.exp()),
  "tanh": (lambda x: x.tanh(), lambda x: x.tanh()),
  "sigmoid": (lambda x: x.sigmoid(), lambda x: x.sigmoid()),
  "tan": (lambda x: x.tan(), lambda x: x.tan()),
  "gelu": (lambda x: x.gelu(), lambda x: __import__("torch").nn.functional.gelu(x, approximate="tanh")),
  "softmax": (lambda x: x.softmax(-1) * x, lambda x: x.softmax(-1) * x),
  "log_softmax": (lambda x: x.log_softmax(-1) ** 2, lambda x: x.log_softmax(-1) ** 2),
}
@pytest.mark.parametrize("name", list(SECOND_ORDER))
def test_second_order_gradients_through_custom_rules_match_torch(name):
  # a custom rule's y was the WHERE's value src[1], whose own graph the gradient of the gradient then walked: exp's LDEXP
  # (the CPU's and PYTHON's 2**n) has no rule (RuntimeError for tanh/sigmoid/softmax ...), and without LDEXP the second
  # derivative of exp was the Taylor polynomial's derivative (not e**x bit for bit)
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  a = np.random.default_rng(1).uniform(-1.4, 1.4, (3, 5)).astype(np.float32)
  ft, fr = SECOND_ORDER[name]
  x, tx = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
  g = ft(x).sum().gradient(x)[0]
  tg = torch.autograd.grad(fr(tx).sum(), tx, create_graph=True)[0]
  np.testing.assert_allclose(g.square().sum().gradient(x)[0].numpy(), torch.autograd.grad(tg.square().sum(), tx)[0].numpy(), rtol=1e-4, atol=1e-5)
  if name == "exp": np.testing.assert_array_equal(g.sum().gradient(x)[0].numpy(), x.exp().numpy())   # d2 e^x = e^x exactly

@pytest.mark.parametrize("n", [7, 300])
@pytest.mark.parametrize("op", ["cummax", "cummin"])
def test_cummax_gradient_with_a_nan_goes_to_the_nan_like_torch(op, n):
  # a NaN running max is its NaN, which takes the gradient (torch's, as cummax's index says): the max rule's NaN over the
  # row gave NaN to every element before the row's first NaN too, whose outputs never saw it. 300: the block scan, whose
  # carry's maximum passed a NaN's gradient to both sides. (A plain max(axis) stays NaN over the row: torch's amax)
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  a = np.random.default_rng(0).permutation(4 * n).reshape(4, n).astype(np.float32)   # (no ties: torch gives a tie to one)
  a[0, 3], a[1, n // 2], a[2, n - 1] = np.nan, np.nan, np.nan
  w = np.random.default_rng(1).uniform(0.5, 1.5, a.shape).astype(np.float32)
  x, tx = Tensor(a), torch.tensor(a, requires_grad=True)
  y, ty = getattr(x, op)(1)[0], getattr(tx, op)(1)[0]
  np.testing.assert_array_equal(y.numpy(), ty.detach().numpy())
  g = (y * Tensor(w)).sum().gradient(x)[0].numpy()
  np.testing.assert_allclose(g, torch.autograd.grad((ty * torch.tensor(w)).sum(), tx)[0].numpy(), rtol=1e-5)

def test_gradient_reading_two_pending_assigns_of_one_buffer_reads_each_ones_value():
  # a gradient that reads a pending assign's value (2y of y*y) read it as the target's buffer, and where the graph holds a
  # later assign of the same buffer too (y += x; y *= x), the schedule gave both the last one's value: d/dx was 336, torch -96
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  a, b = np.array([1.0, -2.0, 3.0], np.float32), np.array([2.0, 8.0, 18.0], np.float32)
  x, y = Tensor(a).realize(), Tensor(b).realize()
  tx, ty = torch.tensor(a, requires_grad=True), torch.tensor(b)
  for t, u in ((y, x), (ty, tx)):
    t += u
    t *= u
  g = (y * y).sum().gradient(x)[0]
  np.testing.assert_allclose(g.numpy(), torch.autograd.grad((ty * ty).sum(), tx)[0].numpy(), rtol=1e-6)
  np.testing.assert_allclose(y.numpy(), ty.detach().numpy(), rtol=1e-6)   # (the assigns still run, once)

@pytest.mark.parametrize("case", ["iadd", "imul_twice", "setitem", "view_assign", "slice_iadd", "read_before"])
def test_gradient_through_a_pending_assign_into_a_realized_tensor_reaches_its_graph(case):
  # a realized tensor keeps the graph it was computed from, but an assign into it (y += x, y[1:] = v) dropped that graph
  # while its value still read the old contents: y = (x*x*2).realize(); y += x gave d sum(y)/dx = 1, torch 4x + 1
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  a = np.array([1.0, -2.0, 3.0], np.float32)
  def run(x, y):
    z = y * 3   # (read before the update: the old value, in torch too)
    if case in ("iadd", "imul_twice", "read_before"): y += x
    if case == "imul_twice": y *= x
    if case == "setitem": y[1:] = x[:2] * 5
    if case == "view_assign": y[0:2].assign(x[1:] * (y[2] * 1)) if isinstance(y, Tensor) else y[0:2].copy_(x[1:] * (y[2] * 1))
    if case == "slice_iadd": y[0:2] += x[1:]
    return (y * y).sum() + ((z * z).sum() if case == "read_before" else 0)
  x = Tensor(a).realize()
  got = run(x, (x * x * 2).contiguous().realize())
  tx = torch.tensor(a, requires_grad=True)
  want = run(tx, (tx * tx * 2).clone())
  np.testing.assert_allclose(got.gradient(x)[0].numpy(), torch.autograd.grad(want, tx)[0].numpy(), rtol=1e-6)
  np.testing.assert_allclose(got.numpy(), want.item(), rtol=1e-6)

@pytest.mark.parametrize("case", ["iadd", "assign", "slice_iadd", "two_updates", "two_pending", "imul", "by_another_realize", "detach",
                                  "leaf_target"])
def test_gradient_through_a_realized_assign_into_a_realized_tensor_reaches_its_graph(case):
  # the same once the assign ran: realizing it gave the tensor its buffer back with no graph, so the gradient through it
  # was lost: z = (x*1).realize(); z += x*2; z.realize(); x.grad of sum(z*z) was None, torch 18x. Found by test_grad_fuzz
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  a, b = np.array([0.5, -2.0, 3.0, 1.5], np.float32), np.array([1.0, 2.0, -1.0, 0.25], np.float32)
  def run(x, lib):
    z = (torch.tensor(b) if lib is torch else Tensor(b)) if case == "leaf_target" else (x * 1).clone() if lib is torch else (x * 1).contiguous().realize()
    done = (lambda t: t.realize()) if lib is Tensor else (lambda t: t)
    if case == "assign": z.assign(z + x * 2) if lib is Tensor else z.copy_(z + x * 2)
    elif case == "slice_iadd": z[1:3] += x[1:3] * 2
    elif case == "imul": z *= x
    else: z += x * 2
    if case == "two_pending": z *= x   # (realized with the first: its value reads the first's)
    if case == "by_another_realize": done(z * 3)
    else: done(z)
    if case == "two_updates":
      z *= x
      done(z)
    if case == "leaf_target": held.append(z)   # (its graph reads its own buffer: not kept past the tensor, gradient.keep_chain)
    if case == "detach": return (z.detach() * x).sum()
    return (z * z).sum()
  held: list = []
  x = Tensor(a, requires_grad=True)
  run(x, Tensor).backward()
  tx = torch.tensor(a, requires_grad=True)
  run(tx, torch).backward()
  assert x.grad is not None
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)

@pytest.mark.parametrize("target", ["zeros", "leaf"])
@pytest.mark.parametrize("update", ["iadd", "slice_iadd", "imul", "imul_after_add", "slice_imul"])
@pytest.mark.parametrize("end", ["del", "rebind", "function", "held"])
def test_gradient_through_a_realized_update_outlives_its_target(target, update, end):
  # a target with no graph to train (zeros, or a realized leaf) updated from x, realized, then gone before backward (del,
  # rebound, or a local of a function that returns only y): its kept graph reads its own buffer's old value, so keep_chain
  # did not keep it and x.grad was None (torch: 4 * (2x)). Still held (test above) it worked. z *= x's gradient reads z's
  # old value, which the write overwrote: it raised 'modified by an inplace operation', torch saves it (x.grad 2 z_old^2 x)
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  a, b = np.array([0.5, -2.0, 3.0, 1.5], np.float32), np.array([1.0, 2.0, -1.0, 0.25], np.float32)
  def make(lib):
    if lib is torch: return torch.zeros(4) if target == "zeros" else torch.tensor(b)
    return Tensor.zeros(4).contiguous().realize() if target == "zeros" else Tensor(b).realize()
  def update_of(z, x):
    if update == "iadd": z += x * 2
    elif update == "slice_iadd": z[1:3] += x[1:3] * 2
    elif update == "imul": z *= x
    elif update == "slice_imul": z[1:3] *= x[1:3]
    else:
      z += 1
      z *= x   # (reads the first, pending, whose value reads z's old value)
    return z
  def run(x, lib):
    if end == "function":
      def f():
        z = update_of(make(lib), x)
        if lib is Tensor: z.realize()
        return z * z
      return f().sum()
    z = update_of(make(lib), x)
    if lib is Tensor: z.realize()
    y = z * z
    if end == "del": del z
    elif end == "rebind": z = make(lib)
    else: held.append(z)
    return y.sum()
  held: list = []
  x, tx = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
  run(x, Tensor).backward()
  run(tx, torch).backward()
  assert x.grad is not None
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)

@pytest.mark.parametrize("update", ["iadd", "slice_iadd", "imul"])
@pytest.mark.parametrize("hold_z", [True, False])
@pytest.mark.parametrize("with_z", [True, False])
def test_gradient_through_an_update_realized_with_its_reader(update, hold_z, with_z):
  # z += x * 2 pending, y = z * z, then y realized (and z with it, or not), z held or gone: y's kept graph read each assign
  # that ran with it as its target, detached, so x.grad was None (torch: 4 * (2x)); z *= x: its old value, saved
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  a, b = np.array([0.5, -2.0, 3.0, 1.5], np.float32), np.array([1.0, 2.0, -1.0, 0.25], np.float32)
  held: list = []
  def run(x, lib):
    z = torch.tensor(b) if lib is torch else Tensor(b).realize()
    if update == "iadd": z += x * 2
    elif update == "imul": z *= x
    else: z[1:3] += x[1:3] * 2
    y = z * z
    if hold_z: held.append(z)
    if lib is Tensor:
      if with_z: Tensor.realize(y, z)
      del z
      y.realize()
    return y.sum()
  x, tx = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
  run(x, Tensor).backward()
  run(tx, torch).backward()
  assert x.grad is not None
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)

def test_a_kept_graph_never_reads_a_buffer_through_its_newer_graph():
  # y = (z * 3) realized, z = x * 2 realized before, then z.assign(w * 5) realized: y's gradient went into z's new graph
  # (w.grad 15, torch: w none, x 6). z's old graph is gone: the gradient stops at its buffer (x.grad None, a gap noted in
  # docs/guide.md), and never reaches w
  from tinygrad.tensor import Tensor
  x, w = Tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True), Tensor([1.0, 1.0, 1.0, 1.0], requires_grad=True)
  z = (x * 2).realize()
  y = (z * 3).realize()
  z.assign(w * 5).realize()
  y.sum().backward()
  assert w.grad is None

@pytest.mark.parametrize("update", ["setitem", "iadd"])
@pytest.mark.parametrize("keep_y", [True, False])
def test_a_graph_realized_while_an_assign_into_what_it_read_is_pending_passes_the_gradient_on(update, keep_y):
  # y = z * 2 + 1 read the realized z, then z[0:1] = v (pending), then y was realized: backward's pruning of the kept graphs
  # dropped y's (it reads z's buffer, whose old graph only the pending assign's record holds), so t lost the gradient
  # through y: t.grad [0, 2, 3] where torch gives [0, 2, 6]; and with y gone, its graph was not kept (gradient.KEPT_CHAIN)
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  a, b = np.array([0.3, -1.2, 0.9], np.float32), np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], np.float32)
  def run(t, t2, z, lib):
    y = z * 2 + 1
    if update == "setitem": z[0:1] = t2.sum()
    else: z += t2[0]
    if lib is Tensor: held.append(y.realize() if keep_y else y.realize().shape)   # (y gone by backward, or held)
    w = torch.tensor([1.0, 2.0, 3.0]) if lib is torch else Tensor([1.0, 2.0, 3.0])
    return (y.amax(0) if lib is torch else y.max(0)) * 1.5 + (z * w).sum()
  held: list = []
  t, t2 = Tensor(a, requires_grad=True), Tensor(b, requires_grad=True)
  run(t, t2, (t * 1).contiguous().realize(), Tensor).backward()
  tt, tt2 = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
  run(tt, tt2, (tt * 1).clone(), torch).backward()
  np.testing.assert_allclose(t.grad.numpy(), tt.grad.numpy(), rtol=1e-6)
  np.testing.assert_allclose(t2.grad.numpy(), tt2.grad.numpy(), rtol=1e-6)

@pytest.mark.parametrize("axis", [0, None])
def test_gradient_through_pending_assigns_into_a_realized_sharded_tensor(axis):
  # the same per shard: each shard's assign reads its own buffer, whose old value its shard of the kept graph computed
  from tinygrad.tensor import Tensor
  a = np.array([1.0, 2.0, -3.0, 4.0], np.float32)
  x = Tensor(a).shard(("CPU:0", "CPU:1"), axis).realize()
  y = (x * x).contiguous().realize()
  y += x
  y *= x   # y = x^3 + x^2
  yv = a ** 3 + a ** 2
  np.testing.assert_allclose((y * y).sum().gradient(x)[0].numpy(), 2 * yv * (3 * a * a + 2 * a), rtol=1e-6)
  np.testing.assert_allclose(y.numpy(), yv, rtol=1e-6)

@pytest.mark.parametrize("axis", [0, None])
@pytest.mark.parametrize("update", ["iadd", "slice_iadd", "imul"])
@pytest.mark.parametrize("end", ["pending", "held", "del", "y_realized"])
def test_gradient_through_a_realized_update_of_a_sharded_tensor(axis, update, end):
  # z and x sharded over 2 devices, z += x * 2 (z[1:3] += x[1:3], z *= x) realized: held, z.realize() left z with no kept
  # graph (its shards' graphs stayed on the per-shard tensors of the realize, kept only once z died), so x.grad was None
  # (torch: 4 * (2x) for +=); z *= x raised 'modified by an inplace operation' (its shards' old values, now saved), and
  # pending on axis 0 the schedule's cycle error (test below)
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  devs = ("CPU:0", "CPU:1")
  a, b = np.array([0.5, -2.0, 3.0, 1.5], np.float32), np.array([1.0, 2.0, -1.0, 0.25], np.float32)
  def upd(z, x):
    if update == "iadd": z += x * 2
    elif update == "slice_iadd": z[1:3] += x[1:3]
    else: z *= x
  x = Tensor(a).shard(devs, axis=axis)
  x.requires_grad = True
  z = Tensor(b).shard(devs, axis=axis).realize()
  upd(z, x)
  if end == "held": z.realize()
  if end == "del": z.realize()
  y = z * z
  if end in ("del", "y_realized"): del z
  if end == "y_realized": y.realize()
  y.sum().backward()
  tx, tz = torch.tensor(a, requires_grad=True), torch.tensor(b)
  upd(tz, tx)
  (tz * tz).sum().backward()
  assert x.grad is not None
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)

def test_only_an_update_whose_gradient_reads_the_old_value_copies_it():
  # the copy save_old_value makes costs a kernel and the memory: an accumulator's z += x * 2, a slice's assign (a select
  # whose condition is no value of z), z *= 3 or z.exp() + x need none; z *= x and z[1:3] *= x[1:3] do (slice assigns
  # made one before this was refined)
  from tinygrad.tensor import Tensor
  from tinygrad.gradient import SAVED_OLD
  x = Tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
  def copies(f) -> int:
    z = Tensor([5.0, 6.0, 7.0, 8.0]).realize()
    f(z)
    return int(z.uop in SAVED_OLD)   # (z's node is its pending assign)
  def setitem(z, v): z[1:3] = v
  assert copies(lambda z: z.assign(z + x * 2)) == copies(lambda z: setitem(z, x[1:3])) == copies(lambda z: setitem(z, z[1:3] + x[1:3])) == 0
  assert copies(lambda z: z.assign(z * 3)) == copies(lambda z: z.assign((x > 2).where(z, x))) == copies(lambda z: z.assign(z.exp() + x)) == 0
  assert copies(lambda z: z.assign(z * x)) == copies(lambda z: setitem(z, z[1:3] * x[1:3])) == copies(lambda z: z.assign(z.exp() / x)) == 1
  assert copies(lambda z: z.assign((z > 6).where(x, 0.0))) == 1

def test_the_copy_of_an_old_value_keeps_no_graph():
  # the copy z *= d made (d data, x asking for a gradient elsewhere) kept its graph, COPY(z's buffer), which KEPT_CHAIN
  # held once the copy's tensor died (z's pending assign reads that buffer): every later backward scanned all live
  # tensors for it (a small backward among 5000 tensors 4 -> 7 ms)
  import gc
  from tinygrad.tensor import Tensor
  from tinygrad.gradient import KEPT_CHAIN
  x, d, z = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, 4.0]).realize(), Tensor([5.0, 6.0]).realize()
  for _ in range(3): z.assign(z * d).realize()
  gc.collect()
  assert not any(z.uop in g.toposort() for g, _ in list(KEPT_CHAIN.values()))
  assert z.tolist() == [135.0, 384.0] and x.requires_grad

def test_backward_walks_the_gradients_for_saved_values_only_while_such_an_assign_is_pending(monkeypatch):
  # _read_saved walks every gradient graph: once the assign that made the copy ran, nothing is left for it to do
  import tinygrad.gradient as gm
  from tinygrad.tensor import Tensor
  x, z = Tensor([1.0, 2.0], requires_grad=True), Tensor([3.0, 4.0]).realize()
  z *= x
  y = (z + 1).realize()   # (its kept graph holds the assign, which ran with it: the record of the copy stays)
  assert len(gm.SAVED_OLD) and y.tolist() == [4.0, 9.0]
  w = Tensor([5.0, 6.0], requires_grad=True)
  monkeypatch.setattr(gm, "_read_saved", lambda us: pytest.fail("walked with no pending assign"))
  (w * w).sum().backward()
  assert w.grad.tolist() == [10.0, 12.0]

@pytest.mark.parametrize("loss", ["square", "exp"])
def test_gradient_through_a_pending_imul_reads_the_saved_old_value(loss):
  # z *= x pending, (z * z).sum() (or z.exp()): the gradient reads the new z (the assign) and the old one (x's z_old * ...):
  # realizing it raised "cannot order the schedule: a cycle of assigns"; torch gives 2 z_old^2 x (exp(z_old x) z_old)
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  a, b = np.array([0.5, -2.0, 3.0, 1.5], np.float32), np.array([1.0, 2.0, -1.0, 0.25], np.float32)
  def run(x, z):
    z *= x
    return (z * z).sum() if loss == "square" else z.exp().sum()
  x, tx = Tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
  run(x, Tensor(b).realize()).backward()
  run(tx, torch.tensor(b)).backward()
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-6)

def test_gradient_through_a_pending_strided_setitem_into_a_realized_2d_tensor():
  # a realized 2-d tensor is a reshape of its buffer, and a view assign's merge reads the untouched elements from the buffer
  # itself: z[1::2] += v gave z[0]'s old value no gradient (x.grad [[2], [3]], torch [[12], [3]]). Found by test_grad_fuzz
  torch = pytest.importorskip("torch", reason="the torch reference is missing: pip install torch")
  from tinygrad.tensor import Tensor
  a, w = np.array([[1.0], [2.0], [-3.0]], np.float32), np.array([[10.0], [1.0], [0.5]], np.float32)
  x, tx = Tensor(a).realize(), torch.tensor(a, requires_grad=True)
  z, tz = (x * 1).contiguous().realize(), tx * 1
  z[1::2] += x.sum() * 2
  tz[1::2] += tx.sum() * 2
  np.testing.assert_allclose((z * Tensor(w)).sum().gradient(x)[0].numpy(), torch.autograd.grad((tz * torch.tensor(w)).sum(), tx)[0].numpy())

def test_backward_does_not_expand_the_kept_graphs_of_unrelated_realized_tensors(monkeypatch):
  # a training loop that keeps its losses (realized, each with the graph it was computed from) made every backward expand
  # all of their graphs, to find them unused: each step slower than the last (66 -> 457 ms a step over 400 steps)
  from tinygrad import Tensor, gradient
  w = Tensor([1.0, 2.0, 3.0], requires_grad=True).contiguous().realize()
  x = Tensor([0.5, -1.0, 2.0]).realize()
  kept = [((w * x).sum() * (i + 1)).realize() for i in range(40)]
  y = (w * 3).realize()                   # realized, and read by the loss: its kept graph is expanded
  made = []
  orig = gradient._Realized._stand_in
  def counting(self, r):
    made.append(r)
    return orig(self, r)
  monkeypatch.setattr(gradient._Realized, "_stand_in", counting)
  ((y * x).sum() + (w * w).sum()).backward()
  assert len(made) <= 2, len(made)
  np.testing.assert_allclose(w.grad.numpy(), 3 * np.array([0.5, -1.0, 2.0]) + 2 * np.array([1.0, 2.0, 3.0]))
  np.testing.assert_allclose(y.grad.numpy(), [0.5, -1.0, 2.0])   # (an intermediate's gradient, as public tinygrad gives)
  assert all(k.grad is None for k in kept)
