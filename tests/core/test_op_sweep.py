"""A differential sweep of the long tail of Tensor methods against torch (CPU) as the reference: indexing and scatter,
scans and reductions (every axis, sizes 0, 1 and odd, int/bool/float, ties and NaN), shape ops (pad modes, roll, unfold,
split, einsum, interpolate ...), integer dtype corners, gradients, inputs that are views, constant-folded inputs against
realized ones, and a subset on the PYTHON device. The unary/binary float edge values are test_edge_values.py's.

Where public tinygrad (the contract) or docs/guide.md ("Numerics") chooses otherwise than torch, the case is constrained
and the comment says which rule: out-of-range tensor indices read 0 unless CHECK_OOB=1, float->int casts saturate, a 0-d
index tensor is an advanced index (numpy's), the default int is int32, topk's order among ties is unspecified by torch."""
import itertools, math
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad import Tensor, dtypes, Context

pytestmark = pytest.mark.filterwarnings("ignore:.*degrees of freedom:UserWarning")
torch = pytest.importorskip("torch", reason="the reference for the op sweep: pip install torch")
F = torch.nn.functional
nan, inf = math.nan, math.inf

def _np(x):
  if isinstance(x, torch.Tensor): return x.detach().float().numpy() if x.dtype == torch.bfloat16 else x.detach().numpy()
  return x.numpy()

def check(got, want, rtol=1e-5, atol=1e-6, dtype=False, zero_sign=False):
  """got (a Tensor or a tuple of them) equals want (torch's): shape, values (NaN where NaN), with dtype=True the dtype's name,
  with zero_sign=True the sign of zeros."""
  if isinstance(want, (tuple, list)):
    assert isinstance(got, (tuple, list)) and len(got) == len(want), f"{len(want)} results expected"
    for g, w in zip(got, want): check(g, w, rtol, atol, dtype, zero_sign)
    return
  g, w = _np(got), _np(want)
  assert g.shape == w.shape, f"shape {g.shape}, torch {w.shape}"
  if dtype: assert g.dtype == w.dtype, f"dtype {g.dtype}, torch {w.dtype}"
  if w.dtype.kind in "fc" or g.dtype.kind in "fc":
    np.testing.assert_allclose(g.astype(np.float64), w.astype(np.float64), rtol=rtol, atol=atol, equal_nan=True)
    if zero_sign: np.testing.assert_array_equal(np.signbit(g[g == 0]), np.signbit(w[w == 0]))
  else: np.testing.assert_array_equal(g.astype(np.int64) if g.dtype.kind in "iub" else g, w.astype(np.int64) if w.dtype.kind in "iub" else w)

def T(x: torch.Tensor, **kw) -> Tensor: return Tensor(_np(x), **kw)

RNG = np.random.default_rng(0)
def rand(shape, kind="f"):
  if kind == "f": return torch.tensor(RNG.standard_normal(shape), dtype=torch.float32)
  if kind == "i": return torch.tensor(RNG.integers(-5, 6, shape), dtype=torch.int32)
  if kind == "b": return torch.tensor(RNG.integers(0, 2, shape).astype(bool))
  if kind == "u8": return torch.tensor(RNG.integers(0, 256, shape), dtype=torch.uint8)
  if kind == "i8": return torch.tensor(RNG.integers(-128, 128, shape), dtype=torch.int8)
  raise ValueError(kind)

# ---------------------------------------------------------------- indexing and scatter

GATHER_SHAPES = [(3, 4), (1, 5), (5, 1), (0, 3), (2, 3, 5)]

@pytest.mark.parametrize("shape", GATHER_SHAPES, ids=str)
def test_gather_scatter_scatter_reduce(shape):
  x = rand(shape)
  for dim in range(len(shape)):
    n = shape[dim]
    if n == 0: continue
    ishape = list(shape)
    ishape[dim] = 3   # more index rows than some dims: duplicates on every small axis
    idx = torch.tensor(RNG.integers(0, n, ishape))
    src = rand(ishape)
    check(T(x).gather(dim, T(idx)), x.gather(dim, idx))
    check(T(x).scatter(dim, T(idx), 2.5), x.scatter(dim, idx, 2.5))
    check(T(x).scatter(dim, T(idx), 2.5, reduce="add"), x.scatter(dim, idx, 2.5, reduce="add"))
    check(T(x).scatter(dim, T(idx), 2.5, reduce="multiply"), x.scatter(dim, idx, 2.5, reduce="multiply"))
    for red, inc in itertools.product(["sum", "prod", "mean", "amax", "amin"], [True, False]):
      check(T(x).scatter_reduce(dim, T(idx), T(src), red, include_self=inc), x.scatter_reduce(dim, idx, src, red, include_self=inc),
            rtol=1e-4, atol=1e-5)

def test_gather_scatter_of_a_0d_tensor():
  # torch's 0-d gather/scatter take dim 0 (or -1) and a 0-d index; gather raised IndexError (tuple index out of range)
  x = torch.tensor(3.5)
  for d in (0, -1):
    check(T(x).gather(d, Tensor(0)), x.gather(d, torch.tensor(0)))
    check(T(x).scatter(d, Tensor(0), 7.0), x.scatter(d, torch.tensor(0), 7.0))
  t = Tensor(3.5, requires_grad=True)
  (t.gather(0, Tensor(0)) * 2.0).backward()
  assert t.grad.item() == 2.0

def test_scatter_without_duplicates_matches_torch():
  # (with duplicate targets torch's scatter keeps an unspecified one of them)
  x, src = rand((4, 5)), rand((2, 5))
  idx = torch.stack([torch.randperm(4, generator=torch.Generator().manual_seed(i))[:2] for i in range(5)], 1)
  check(T(x).scatter(0, T(idx), T(src)), x.scatter(0, idx, src))

@pytest.mark.parametrize("kind", ["i", "u8", "b"])
def test_scatter_reduce_ints(kind):
  x, src = rand((2, 5), kind), rand((2, 4), kind)
  idx = torch.tensor([[0, 0, 1, 4], [1, 1, 1, 0]])
  for red, inc in itertools.product(["sum", "prod", "amax", "amin"] + (["mean"] if kind != "b" else []), [True, False]):
    if kind == "b" and red in ("sum", "prod"): continue   # (torch: "add"/"mul" on bool are or/and, tinygrad sums ints)
    check(T(x).scatter_reduce(1, T(idx), T(src), red, include_self=inc), x.scatter_reduce(1, idx, src, red, include_self=inc), dtype=True)

X4 = torch.arange(2 * 3 * 4 * 5, dtype=torch.float32).reshape(2, 3, 4, 5)
I3, I2, I4, I5 = [0, 2, -1, 1, 1], [[0, 1], [1, 0]], [3, 0, 0, -4, 2], [4, -5, 0, 0, 2]
# indices as a function of the index-tensor constructor, so the same expression indexes both
INDEXES = {
  "slice,t": lambda I: (slice(None), I(I3)),
  "slice,t,slice": lambda I: (slice(None), I(I3), slice(1, 3)),
  "t,slice,t (moved to the front)": lambda I: (slice(None), I(I3), slice(None), I(I5)),
  "2d,slice,2d": lambda I: (I(I2), slice(None), I(I2)),
  "2d,2d": lambda I: (I(I2), I(I2)),
  "ellipsis,t": lambda I: (Ellipsis, I(I5)),
  "none,slice,t": lambda I: (None, slice(None), I(I3)),
  "int,t": lambda I: (1, I(I3)),
  "slice,t,int": lambda I: (slice(None), I(I3), 2),
  "slice,int,t": lambda I: (slice(None), 1, I(I4)),
  "broadcast column,row": lambda I: (I([1, 0])[:, None], I(I3)),
  "bool 2d": lambda I: (I([[True, False, True], [False, True, True]]),),
  "slice,slice,bool": lambda I: (slice(None), slice(None), I([True, False, True, False])),
  "2d,none,2d": lambda I: (I(I2), None, I(I2)),
  "slices around t": lambda I: (slice(1, 2), I(I3), slice(None), slice(4, 5)),
}

@pytest.mark.parametrize("name", list(INDEXES))
def test_advanced_getitem_and_setitem(name):
  ix = INDEXES[name]
  check(T(X4)[ix(Tensor)], X4[ix(torch.tensor)])
  t = T(X4).contiguous()
  t[ix(Tensor)] = -1.0
  w = X4.clone()
  w[ix(torch.tensor)] = -1.0
  check(t, w)
  v = rand(X4[ix(torch.tensor)].shape)
  t = T(X4).contiguous()
  t[ix(Tensor)] = T(v)
  w = X4.clone()
  w[ix(torch.tensor)] = v
  # (duplicate targets: torch's CPU kernel writes in order, the last value wins; so do we)
  check(t, w)

def test_zero_dim_index_tensor_is_an_advanced_index():
  # public tinygrad's and numpy's rule: a 0-d index tensor broadcasts with the other tensor indices, and a slice between
  # them moves the result's indexed dims to the front; torch takes a 0-d tensor as an int (shape (3, 5, 5) here)
  assert T(X4)[Tensor(1), :, Tensor(I4)].shape == X4.numpy()[np.array(1), :, np.array(I4)].shape == (5, 3, 5)

def test_setitem_duplicate_indices_last_wins():
  t = Tensor.zeros(5).contiguous()
  t[Tensor([1, 3, 1, 1])] = Tensor([1.0, 2.0, 3.0, 4.0])
  check(t, torch.zeros(5).index_put_((torch.tensor([1, 3, 1, 1]),), torch.tensor([1.0, 2.0, 3.0, 4.0])))

def test_out_of_range_indices_read_zero_or_raise_with_check_oob():
  # public tinygrad's rule (docs/guide.md, CHECK_OOB): an out-of-range index tensor reads 0; CHECK_OOB=1 raises, as torch
  x = torch.arange(6.0).reshape(2, 3)
  assert T(x)[Tensor([2])].tolist() == [[0.0, 0.0, 0.0]]
  assert T(x).gather(1, Tensor([[3], [-1]])).tolist() == [[0.0], [0.0]]   # (gather: no negative indices, as torch)
  with Context(CHECK_OOB=1):
    for fn in [lambda: T(x)[Tensor([2])], lambda: T(x)[Tensor([-3])], lambda: T(x).gather(1, Tensor([[3], [0]])),
               lambda: T(x).gather(1, Tensor([[-1], [0]])), lambda: Tensor([-1, 2]).one_hot(3),
               lambda: T(x).scatter(1, Tensor([[3], [0]]), 1.0), lambda: T(x).scatter_reduce(1, Tensor([[-1], [0]]), Tensor([[1.0], [2.0]]), "sum")]:
      with pytest.raises(IndexError): fn().realize()
    with pytest.raises(IndexError):
      t = T(x).contiguous()
      t[Tensor([2])] = 1.0
      t.realize()
    check(T(x)[Tensor([-1, 0])], x[torch.tensor([-1, 0])])   # (negative ones in range wrap, as torch)

def test_masked_fill_of_another_kind_raises():
  # torch keeps self's dtype (int.masked_fill(m, 2.5) is 2), public tinygrad promotes (2.5): ours gave the float 2.5 silently
  m = torch.tensor([True, False])
  for t, v in [(torch.tensor([1, 2]), 2.5), (torch.tensor([1, 2], dtype=torch.uint8), math.inf), (torch.tensor([True, False]), 300)]:
    with pytest.raises(TypeError, match="masked_fill"): T(t).masked_fill(T(m), v)
  with pytest.raises(TypeError, match="masked_fill"): T(torch.tensor([1, 2], dtype=torch.int8)).masked_fill(T(m), Tensor(2.5))
  for t, v in [(torch.tensor([1, 2]), 5), (torch.tensor([1, 2]), True), (torch.tensor([1.0, 2.0]), 5), (torch.tensor([True, False]), False)]:
    check(T(t).masked_fill(T(m), v), t.masked_fill(m, v), dtype=True)
  check(T(torch.tensor([1.0, 2.0], dtype=torch.float16)).masked_fill(T(m), -inf), torch.tensor([-inf, 2.0], dtype=torch.float16), dtype=True)

def test_masks_where_nonzero_repeat_interleave():
  x = rand((3, 4))
  m = torch.tensor([[True, False, True, False]])
  check(T(x).masked_fill(T(m), -1.0), x.masked_fill(m, -1.0))
  check(T(x).masked_select(T(m)), x.masked_select(m))
  check(T(x).masked_select(Tensor.zeros(3, 4, dtype=dtypes.bool)), x.masked_select(torch.zeros(3, 4, dtype=torch.bool)))
  check(T(m.T).where(T(x[:1]), Tensor([1.0, 2, 3, 4])), torch.where(m.T, x[:1], torch.tensor([1.0, 2, 3, 4])))
  check(T(m).where(T(x), 7), torch.where(m, x, 7.0))
  for v in ([[0, 1, 0], [2, 0, 3]], [0.0, 1.0, nan, -0.0], [0, 0, 0], [True, False, True]):
    check(Tensor(v).nonzero(), torch.tensor(v).nonzero())
  y = torch.tensor([[1, 2], [3, 4]])
  check(T(y).repeat_interleave(2, dim=0), y.repeat_interleave(2, dim=0))
  check(T(y).repeat_interleave(3), y.repeat_interleave(3))
  check(T(x).repeat_interleave(2, 1), x.repeat_interleave(2, 1))

# ---------------------------------------------------------------- scans and reductions

SCAN_SHAPES = [(0,), (1,), (5,), (3, 0), (2, 3), (3, 1, 5), (1, 7)]

@pytest.mark.parametrize("kind", ["f", "i", "b", "u8", "i8"])
@pytest.mark.parametrize("shape", SCAN_SHAPES, ids=str)
def test_scans_and_reductions_every_axis(shape, kind):
  x = rand(shape, kind)
  # torch refuses argmax/argmin of bool; ours is numpy's (the first True)
  arg_ref = (lambda f, ax: torch.tensor(getattr(x.numpy(), f)(ax))) if kind == "b" else (lambda f, ax: getattr(x, f)(ax))
  for ax in range(-len(shape), len(shape)):
    # ints and bools sum and multiply in int64 (docs/guide.md "Integer sums"), as torch
    check(T(x).cumsum(ax), x.cumsum(ax), dtype=True)
    check(T(x).cumprod(ax), x.cumprod(ax), dtype=True)
    check(T(x).sum(ax), x.sum(ax), dtype=True)
    check(T(x).prod(ax), x.prod(ax), dtype=True)
    check(T(x).any(ax), x.any(ax))
    check(T(x).all(ax), x.all(ax))
    if 0 in shape: continue   # (max/min/argmax over or beside an empty axis: EmptyReductionError, as torch's error)
    check(T(x).cummax(ax), tuple(x.cummax(ax)))
    check(T(x).cummin(ax), tuple(x.cummin(ax)))
    check(T(x).max(ax), x.amax(ax), dtype=True)
    check(T(x).min(ax), x.amin(ax), dtype=True)
    check(T(x).argmax(ax), arg_ref("argmax", ax))
    check(T(x).argmin(ax), arg_ref("argmin", ax))
    for desc in (False, True):
      check(T(x).sort(ax, descending=desc), tuple(x.sort(dim=ax, descending=desc, stable=True)))
    if kind in "fi":   # (the mean of ints is float32, docs/guide.md; torch refuses)
      check(T(x).mean(ax), x.double().mean(ax).float(), rtol=1e-6)
    if kind == "f":
      for c in (0, 1, 2):
        check(T(x).var(ax, correction=c), x.var(ax, correction=c), rtol=1e-4)
        check(T(x).std(ax, correction=c), x.std(ax, correction=c), rtol=1e-4)
      check(T(x).logcumsumexp(ax), x.logcumsumexp(ax), rtol=1e-5)
  check(T(x).sum(), x.sum(), dtype=True)
  check(T(x).prod(), x.prod(), dtype=True)
  if kind in "fib": check(T(x).mean(), x.double().mean().float(), rtol=1e-6)
  if x.numel(): check(T(x).argmax(), arg_ref("argmax", None))

@pytest.mark.parametrize("vals", [[1.0, 3.0, 3.0, 0.0, 3.0], [1.0, nan, 3.0, nan], [-inf, inf, inf], [0.0, -0.0, 0.0], [2.0, 2.0]], ids=str)
def test_ties_and_nan_in_arg_and_sort_and_topk(vals):
  # the first index of a tie; NaN is the largest (argmax finds the first NaN, argmin too: NaN wins both, as torch)
  x = torch.tensor(vals)
  check(T(x).argmax(), x.argmax())
  check(T(x).argmin(), x.argmin())
  check(T(x).cummax(0), tuple(x.cummax(0)))
  check(T(x).cummin(0), tuple(x.cummin(0)))
  for desc in (False, True):
    check(T(x).sort(descending=desc), tuple(x.sort(descending=desc, stable=True)))
    check(T(x).argsort(descending=desc), x.argsort(descending=desc, stable=True))
    for k in range(1, len(vals) + 1):
      v, i = T(x).topk(k, largest=desc)
      check(v, x.topk(k, largest=desc)[0])
      # (which of tied elements topk returns is unspecified in torch: ours is the first, as a stable sort; it must index v)
      check(T(x)[i], x.topk(k, largest=desc)[0])
      assert len(set(i.tolist())) == k

def test_arg_reductions_2d_ties_nan():
  x = torch.tensor([[1.0, 5.0, 5.0], [2.0, 2.0, 0.0]])
  check(T(x).argmax(1), x.argmax(1))
  check(T(x).argmax(1, keepdim=True), x.argmax(1, keepdim=True))
  for f in ("argmax", "argmin"):   # (no axis: every dim kept as 1, torch's; public tinygrad drops keepdim there, docs/guide.md)
    check(getattr(T(x), f)(keepdim=True), getattr(x, f)(keepdim=True))
  xn = torch.tensor([[1.0, nan, 5.0], [nan, 2.0, nan]])
  for ax in (0, 1):
    check(T(xn).argmax(ax), xn.argmax(ax))
    check(T(xn).argmin(ax), xn.argmin(ax))
    check(T(xn).max(ax), xn.amax(ax))
    check(T(xn).sort(ax), tuple(xn.sort(dim=ax, stable=True)))
    check(T(xn).sort(ax, descending=True), tuple(xn.sort(dim=ax, descending=True, stable=True)))

def test_int_accumulation_and_single_element_statistics():
  x = torch.tensor([2**20, 2**20, 2**3], dtype=torch.int32)
  check(T(x).prod(), x.prod(), dtype=True)
  check(T(x).cumprod(0), x.cumprod(0), dtype=True)
  x = torch.tensor([2**30] * 4, dtype=torch.int32)
  check(T(x).cumsum(0), x.cumsum(0), dtype=True)
  x = torch.tensor([200] * 5, dtype=torch.uint8)
  check(T(x).cumsum(0), x.cumsum(0), dtype=True)
  check(Tensor([3.0]).var(), torch.tensor([3.0]).var())   # NaN, as torch
  check(Tensor([3.0]).std(correction=0), torch.tensor([3.0]).std(correction=0))
  check(Tensor([1.0, 2.0, 4.0]).std_mean(), torch.std_mean(torch.tensor([1.0, 2.0, 4.0])))
  check(Tensor([1.0, 2.0, 4.0]).var_mean(correction=2), torch.var_mean(torch.tensor([1.0, 2.0, 4.0]), correction=2))

@pytest.mark.parametrize("n", [255, 257, 4097])
def test_long_scans_and_sorts(n):
  x, xi = rand((n,)), torch.tensor(RNG.integers(-3, 4, n), dtype=torch.int32)
  check(T(x).cumsum(), x.cumsum(0), rtol=1e-3, atol=1e-3)
  check(T(xi).cumsum(), xi.cumsum(0), dtype=True)
  check(T(xi).cummax(0), tuple(xi.cummax(0)))
  check(T(xi).argmax(), xi.argmax())
  check(T(xi).argmin(), xi.argmin())
  check(T(xi).sort(), tuple(xi.sort(stable=True)))
  check(T(xi).sort(descending=True), tuple(xi.sort(stable=True, descending=True)))
  check(T(x).topk(10)[0], x.topk(10)[0])
  check(T(x).logcumsumexp(), x.logcumsumexp(0), rtol=1e-4, atol=1e-4)

# ---------------------------------------------------------------- shape ops

def _np_pad(x: np.ndarray, pads, mode):
  # torch's pads (last dim first; a negative pad crops) in numpy's terms
  width = [(0, 0)] * x.ndim
  for i in range(len(pads) // 2): width[x.ndim - 1 - i] = (pads[2 * i], pads[2 * i + 1])
  x = x[tuple(slice(max(0, -a), x.shape[d] - max(0, -b)) for d, (a, b) in enumerate(width))]
  return torch.tensor(np.pad(x, [(max(0, a), max(0, b)) for a, b in width], mode={"constant": "constant", "reflect": "reflect",
                                                                                   "replicate": "edge", "circular": "wrap"}[mode]))

@pytest.mark.parametrize("mode", ["constant", "reflect", "replicate", "circular"])
def test_pad_modes_with_negative_pads(mode):
  x = rand((2, 3, 5, 4))
  for pads in [(1, 2), (-1, 2), (0, -2, 1, 1), (2, 2, 1, 0), (3, 3), (-1, -1, -2, 0), (1, 0, 0, 0, 1, 1)]:
    check(T(x).pad(pads, mode=mode), _np_pad(x.numpy(), pads, mode))
  if mode != "constant":
    for pads in [(-1, 2, 1, -1), (2, -1, -1, 3)]: check(T(x).pad(pads, mode=mode), F.pad(x, pads, mode=mode))
  check(T(x).pad((1, 1), value=-2.5), F.pad(x, (1, 1), value=-2.5))

@pytest.mark.parametrize("dev", ["CPU", "PYTHON"])
def test_pad_fill_promotes_as_a_python_number(dev):
  # public tinygrad pads with where(mask, t, value), so the fill promotes as any Python number does (t + value): a float fill
  # of an int tensor gives a float tensor, an int fill of a bool one an int tensor. The fill was cast to the tensor's dtype
  # (int8 padded with 2.5 gave [2, 1, 2, 2], bool padded with 2 [True, True, False, True]; found by upstream's dtype suite)
  for data, dt, value, want_dt, want in [([1, 2], dtypes.int8, 2.5, dtypes.float32, [2.5, 1, 2, 2.5]),
                                         ([True, False], dtypes.bool, 2, dtypes.int32, [2, 1, 0, 2]),
                                         ([True, False], dtypes.bool, 2.5, dtypes.float32, [2.5, 1, 0, 2.5]),
                                         ([1, 2], dtypes.int32, -math.inf, dtypes.float32, [-math.inf, 1, 2, -math.inf]),
                                         ([1, 2], dtypes.uint8, 7, dtypes.uint8, [7, 1, 2, 7]), ([True, False], dtypes.bool, True, dtypes.bool, [True, True, False, True]),
                                         ([1, 2], dtypes.int16, -0.0, dtypes.int16, [0, 1, 2, 0]), ([1.0, 2.0], dtypes.float16, 2.5, dtypes.float16, [2.5, 1, 2, 2.5])]:
    got = Tensor(data, dtype=dt, device=dev).pad((1, 1), value=value)
    assert got.dtype == want_dt and got.tolist() == want, (dt, value, got.dtype, got.tolist())
    if value != 0: assert got.dtype == (Tensor(data, dtype=dt, device=dev) + value).dtype   # the same rule as a binary op's (a zero fill adds nothing)
  with pytest.raises(OverflowError): Tensor([1, 2], dtype=dtypes.int8, device=dev).pad((1, 1), value=300)   # as int8_t + 300 (it wrapped to 44)

def test_roll_flip_repeat_unfold_split_chunk():
  x = rand((3, 5, 4))
  for shifts, dims in [(1, 0), (-2, 1), ((1, -3), (0, 2)), (7, 2), (0, 1), (13, None)]: check(T(x).roll(shifts, dims), x.roll(shifts, dims))
  for dims in [(0,), (1, 2), (-1,)]: check(T(x).flip(dims), x.flip(dims))
  for reps in [(2, 1, 1), (1, 2, 3), (2, 1, 1, 1), (0, 1, 1)]: check(T(x).repeat(reps), x.repeat(reps))
  for dim, size, step in [(0, 2, 1), (2, 2, 2), (2, 3, 1), (1, 3, 3), (2, 4, 1), (1, 1, 2), (1, 2, 7)]:
    check(T(x).unfold(dim, size, step), x.unfold(dim, size, step))
  for s in [2, [1, 3], 5, 3]: check(T(x).split(s, 2), x.split(s, 2))
  for c in [1, 2, 3, 4, 6]:
    check(T(x).chunk(c, 2), x.chunk(c, 2))
    check(Tensor.arange(6).chunk(c), torch.arange(6).chunk(c))   # (6 in 4 chunks: three of 2, as torch)
    check(Tensor.zeros(0, 2).chunk(c), torch.zeros(0, 2).chunk(c))   # (an empty dim: c empty chunks, as torch; it gave one)

def test_cat_stack_with_empty_tensors():
  x = rand((3, 5, 4))
  check(Tensor.zeros(0, 5, 4).cat(T(x), dim=0), torch.cat([torch.zeros(0, 5, 4), x], 0))
  check(T(x).cat(Tensor.zeros(3, 0, 4), dim=1), torch.cat([x, torch.zeros(3, 0, 4)], 1))
  check(Tensor.zeros(0).cat(Tensor([1.0, 2.0])), torch.cat([torch.zeros(0), torch.tensor([1.0, 2.0])]))
  check(T(x).stack(T(x), dim=-1), torch.stack([x, x], -1))
  check(Tensor.stack(Tensor.zeros(0, 2), Tensor.zeros(0, 2), dim=1), torch.stack([torch.zeros(0, 2)] * 2, 1))

@pytest.mark.parametrize("k", [-5, -2, -1, 0, 1, 3, 6, 7])
def test_triangles_and_diagonals(k):
  m, v, x = rand((4, 6)), torch.tensor([1.0, 2.0, 3.0]), rand((3, 5, 4))
  check(T(m).triu(k), m.triu(k))
  check(T(m).tril(k), m.tril(k))
  check(T(x).triu(k), x.triu(k))
  check(T(x).tril(k), x.tril(k))
  check(T(m).diagonal(k), m.diagonal(k))
  check(T(v).diag(k), v.diag(k))
  check(T(m).diag(k), m.diag(k))
  check(T(x).diagonal(k, 0, 2), x.diagonal(k, 0, 2))
  check(T(x).diagonal(k, -1, 1), x.diagonal(k, -1, 1))

def test_einsum_repeated_indices_and_broadcasting():
  a, b3, v = rand((3, 3)), rand((2, 3, 4)), torch.tensor([1.0, 2.0, 3.0])
  for f, ops in [("ii->i", [a]), ("ii", [a]), ("ii->", [a]), ("ij->", [a]), ("ij,ij->ij", [a, a]), ("bij,jk->bik", [b3, rand((4, 2))]),
                 ("...ij->...ji", [b3]), ("bij->j", [b3]), ("i,j->ij", [v, v]), ("ij,j", [a, v]), ("iij->ij", [rand((3, 3, 2))]),
                 ("ij,kj->ik", [a, a]), ("...j,j->...", [b3, torch.ones(4)]), ("iji->j", [rand((3, 2, 3))]), ("bii->bi", [rand((2, 3, 3))]),
                 ("ij,jk,kl->il", [a, a, a]), ("i...,i...->...", [b3, b3])]:
    check(Tensor.einsum(f, *[T(o) for o in ops]), torch.einsum(f, *ops), rtol=1e-4, atol=1e-5)

def test_interpolate_every_mode():
  # public tinygrad's modes: nearest, nearest-exact, linear (over every spatial dim: torch's linear/bilinear/trilinear)
  torch_mode = {1: "linear", 2: "bilinear", 3: "trilinear"}
  for shape, sizes in [((1, 2, 7), [(3,), (11,), (1,)]), ((1, 2, 5, 7), [(3, 4), (10, 9), (5, 7), (1, 1)]), ((1, 1, 3, 4, 5), [(5, 2, 7)])]:
    img = rand(shape)
    for size, (mode, ac) in itertools.product(sizes, [("nearest", None), ("nearest-exact", None), ("linear", False), ("linear", True)]):
      kw = {} if ac is None else {"align_corners": ac}
      want = F.interpolate(img, size=size, mode=torch_mode[len(size)] if mode == "linear" else mode, **kw)
      check(T(img).interpolate(size, mode=mode, **kw), want, rtol=1e-4, atol=1e-5)

def test_one_hot_arange_linspace_meshgrid():
  idx = torch.tensor([[0, 3], [2, 1]])
  check(T(idx).one_hot(5), F.one_hot(idx, 5))
  # (the default int is int32, public tinygrad's: arange of ints is int32 where torch's is int64)
  for s, e, st in [(0, 1, 0.1), (0, 1, 0.3), (1, 0, -0.1), (0.5, 3.2, 0.7), (-1, 1, 0.2), (0, 10, 3), (10, 0, -3), (0, 0.3, 0.1),
                   (0, 5, 1.5), (1, 2.0000001, 0.1), (3, 3, 1)]:
    check(Tensor.arange(s, e, st), torch.arange(s, e, st))
  assert Tensor.arange(0, -1, 1).shape == np.arange(0, -1, 1).shape == (0,)   # (numpy's empty range; torch raises)
  # an int dtype from float arguments: numpy's fill (the first two values truncated, their difference repeated); torch's
  # answer there depends on the dtype (int32 [0, 1, 2], int64 [0, 1, 2, 3, 4] for 0.5..5 by 1.5) and 0.14's is off
  for s, e, st in [(0, 5, 1.5), (0.5, 5, 1.5), (-3.7, 4.2, 0.9), (5, 0, -1.5), (2.5, -3, -0.7), (0, 3, 0.3), (1.9, 7, 2.2)]:
    for dt, ndt in ((dtypes.int32, np.int32), (dtypes.int64, np.int64), (dtypes.int16, np.int16)):
      assert Tensor.arange(s, e, st, dtype=dt).tolist() == np.arange(s, e, st, dtype=ndt).tolist(), (s, e, st, dt)
  for s, e, n in [(0, 1, 5), (0, 1, 1), (0, 1, 0), (-3, 7, 11), (1, 0, 4), (0, 10, 2)]:
    check(Tensor.linspace(s, e, n), torch.linspace(s, e, n), dtype=True)
  check(Tensor.linspace(0, 10, 4, dtype=dtypes.int32), torch.linspace(0, 10, 4, dtype=torch.int32))
  for ind in ["ij", "xy"]:
    check(Tensor.meshgrid(Tensor([1, 2, 3]), Tensor([4, 5]), indexing=ind), torch.meshgrid(torch.tensor([1, 2, 3]), torch.tensor([4, 5]), indexing=ind))

# ---------------------------------------------------------------- integer dtypes

INTS = {"int8": (torch.int8, dtypes.int8), "uint8": (torch.uint8, dtypes.uint8), "int16": (torch.int16, dtypes.int16),
        "int32": (torch.int32, dtypes.int32), "int64": (torch.int64, dtypes.int64)}
INT_VALS = {"int8": [-128, -127, -7, -1, 0, 1, 7, 100, 127], "uint8": [0, 1, 7, 100, 200, 255], "int16": [-32768, -300, -7, -1, 0, 1, 7, 300, 32767],
            "int32": [-2**31, -7, -1, 0, 1, 7, 2**31 - 1], "int64": [-2**63, -7, -1, 0, 3, 7, 2**63 - 1]}
INT_BINARY = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "and": lambda a, b: a & b, "or": lambda a, b: a | b,
              "xor": lambda a, b: a ^ b, "lt": lambda a, b: a < b, "eq": lambda a, b: a == b}
INT_DIV = {"floordiv": (lambda a, b: a // b, lambda a, b: a // b), "mod": (lambda a, b: a % b, lambda a, b: a % b),
           "fmod": (Tensor.fmod, torch.fmod), "trunc": (lambda a, b: a.div(b, rounding_mode="trunc"), lambda a, b: torch.div(a, b, rounding_mode="trunc")),
           "floor": (lambda a, b: a.div(b, rounding_mode="floor"), lambda a, b: torch.div(a, b, rounding_mode="floor")),
           "maximum": (Tensor.maximum, torch.maximum), "minimum": (Tensor.minimum, torch.minimum)}

@pytest.mark.parametrize("d", list(INTS))
def test_int_arithmetic_wraps_and_divides_as_torch(d):
  od, td = INTS[d]
  a, b = (list(t) for t in zip(*itertools.product(INT_VALS[d], INT_VALS[d])))
  ta, tb = torch.tensor(a, dtype=od), torch.tensor(b, dtype=od)
  for f in INT_BINARY.values(): check(f(Tensor(a, dtype=td), Tensor(b, dtype=td)), f(ta, tb), dtype=True)
  # torch's own kernel traps (SIGFPE) on INT_MIN // -1 for int32/int64: those pairs are checked below, without torch
  ok = (tb != 0) & ~((tb == -1) & (ta == torch.iinfo(od).min))
  a2, b2 = ta[ok], tb[ok]
  for f, tf in INT_DIV.values(): check(f(T(a2), T(b2)), tf(a2, b2), dtype=True)
  x = torch.tensor(INT_VALS[d], dtype=od)
  for f in [lambda t: -t, lambda t: t.abs(), lambda t: ~t, lambda t: t.sign(), lambda t: t.square(), lambda t: t // 3, lambda t: t % 3,
            lambda t: t * 3, lambda t: t + 2, lambda t: t ** 2, lambda t: t ** 3, lambda t: t / 3] + \
           [lambda t, s=s: t << s for s in (0, 1, 3, 7)] + [lambda t, s=s: t >> s for s in (0, 1, 3, 7)] + \
           ([lambda t: t // -3, lambda t: t % -3] if d != "uint8" else []):
    check(f(T(x)), f(x), dtype=True)
  nz = x[x != 0]
  for s in ((3, -3) if d != "uint8" else (3,)):   # (-3 does not fit uint8: an OverflowError here, as public tinygrad)
    check(s // T(nz), s // nz, dtype=True)
    check(s % T(nz), s % nz, dtype=True)
  if d != "uint8":   # INT_MIN // -1 wraps to INT_MIN and its remainder is 0 (docs/guide.md), as int8/int16 in torch
    mn = torch.iinfo(od).min
    t, o = Tensor([mn, 7], dtype=td), Tensor([-1, -1], dtype=td)
    assert (t // o).tolist() == [mn, -7] and (t % o).tolist() == [0, 0] and t.fmod(o).tolist() == [0, 0]
    assert t.div(o, rounding_mode="trunc").tolist() == [mn, -7] and (t // -1).tolist() == [mn, -7] and (-t).tolist() == [mn, -7]

def test_bool_ops_and_mixed_promotion():
  b, c = torch.tensor([True, False, True, False]), torch.tensor([True, True, False, False])
  for f in [lambda x, y: x & y, lambda x, y: x | y, lambda x, y: x ^ y, lambda x, y: x == y, lambda x, y: x != y, lambda x, y: x < y,
            lambda x, y: x + y, lambda x, y: x * y, lambda x, y: x.maximum(y)]:
    check(f(T(b), T(c)), f(b, c), dtype=True)
  check(~T(b), ~b, dtype=True)
  check(T(b).logical_not(), b.logical_not(), dtype=True)
  check(T(b).cumsum(), b.cumsum(0), dtype=True)
  u8, i8 = torch.tensor([200], dtype=torch.uint8), torch.tensor([-1], dtype=torch.int8)
  check(T(u8) + T(i8), u8 + i8, dtype=True)
  check(T(torch.tensor([3], dtype=torch.uint8)) - T(torch.tensor([5], dtype=torch.uint8)), torch.tensor([3], dtype=torch.uint8) - torch.tensor([5], dtype=torch.uint8), dtype=True)
  check(T(u8) * 2, u8 * 2, dtype=True)
  check(T(torch.tensor([100], dtype=torch.int8)) * Tensor([1.5], dtype=dtypes.float16), torch.tensor([100], dtype=torch.int8) * torch.tensor([1.5], dtype=torch.float16), dtype=True)
  ai, bi = torch.tensor(RNG.integers(-128, 128, (4, 5)), dtype=torch.int8), torch.tensor(RNG.integers(-128, 128, (5, 3)), dtype=torch.int8)
  check(T(ai) @ T(bi), ai @ bi, dtype=True)   # (an int8 matmul wraps at int8, as torch)

def test_casts_between_ints_and_from_float():
  for d, (od, td) in INTS.items():
    x = torch.tensor(INT_VALS[d], dtype=od)
    for d2, (od2, td2) in INTS.items(): check(T(x).cast(td2), x.to(od2), dtype=True)   # int to int wraps, as numpy and torch
    check(T(x).cast(dtypes.bool), x.bool(), dtype=True)
    check(T(x).cast(dtypes.float16), x.half(), dtype=True)
    check(T(x).cast(dtypes.float32), x.float(), dtype=True)
  # float to int truncates and saturates, NaN gives 0 (docs/guide.md "Numerics": torch wraps or gives INT_MIN there);
  # inside the range it is torch's
  fv = [-1e10, -129.0, -1.5, -1.0, -0.5, 0.0, 0.7, 1.5, 2.5, 127.9, 128.0, 255.0, 255.9, 256.0, 300.0, 1e10, inf, -inf, nan]
  for d, (od, td) in INTS.items():
    lo, hi = torch.iinfo(od).min, torch.iinfo(od).max
    want = [0 if math.isnan(v) else lo if v <= lo else hi if v >= hi else int(v) for v in fv]
    assert Tensor(fv).cast(td).tolist() == want, d
    inside = [v for v in fv if math.isfinite(v) and lo <= v < hi + 1]
    check(Tensor(inside).cast(td), torch.tensor(inside).to(od), dtype=True)

WIDE = {"uint32": (dtypes.uint32, np.uint32, [3, 2**31 + 5, 7, 2**32 - 1, 0, 2**31 - 1, 2**31]),
        "uint64": (dtypes.uint64, np.uint64, [3, 2**63 + 5, 7, 2**64 - 1, 0, 2**63 - 1, 2**63]),
        "int64": (dtypes.int64, np.int64, [3, 2**40 + 5, -2**50, 2**63 - 1, -2**63, 2**31, -2**31 - 1]),
        "uint16": (dtypes.uint16, np.uint16, [3, 2**15 + 5, 7, 2**16 - 1, 0, 2**15 - 1, 9])}

@pytest.mark.parametrize("d", list(WIDE))
def test_unsigned_and_int64_extremes_order_as_numpy(d):
  # values past the signed range (top bit set) and past int32: comparisons, selection and order (numpy: torch lacks most of
  # these for unsigned dtypes)
  td, nd, vals = WIDE[d]
  a = np.array(vals, dtype=nd)
  for t in (Tensor(vals, dtype=td), Tensor(a).contiguous().realize()):
    for got, want in [(t.max(), a.max()), (t.min(), a.min()), (t.argmax(), a.argmax()), (t.argmin(), a.argmin()), (t.sort()[0], np.sort(a)),
                      (t.argsort(), np.argsort(a, kind="stable")), (t.sort(descending=True)[0], np.sort(a)[::-1]), (t.topk(3)[0], np.sort(a)[::-1][:3]),
                      (t.cummax(0)[0], np.maximum.accumulate(a)), (t.cummin(0)[0], np.minimum.accumulate(a)), (t < t[2], a < a[2]),
                      (t.maximum(t.flip(0)), np.maximum(a, a[::-1])), (t.clip(a[0], a[2]), np.clip(a, a[0], a[2])),
                      (t.masked_select(t > a[0]), a[a > a[0]]), (t // 2, a // nd(2)), (t % 3, a % nd(3)), (t * 3, a * nd(3)), (t >> 1, a >> nd(1)),
                      (Tensor.zeros(2, dtype=td).scatter_reduce(0, Tensor([0, 1, 0, 1, 0, 1, 0]), t, "amax", include_self=False), [a[0::2].max(), a[1::2].max()]),
                      (t.cast(dtypes.float64), a.astype(np.float64))]:
      np.testing.assert_array_equal(got.numpy(), np.asarray(want))

@pytest.mark.parametrize("d", list(INTS))
def test_shifts_by_tensors_and_past_the_width(d):
  od, td = INTS[d]
  a = torch.tensor([1, 5, -1 if d != "uint8" else 255, 100, 3, 7, 1, 2], dtype=od)
  s = torch.tensor([0, 1, 3, 7, 8, 15, 31, 63][:8] if d == "int64" else [0, 1, 3, 7, 8, 15, 31, 16] if d in ("int32", "int16") else [0, 1, 3, 7, 7, 6, 5, 4], dtype=od)
  check(T(a) << T(s), a << s, dtype=True)
  check(T(a) >> T(s), a >> s, dtype=True)
  for k in [8, 9, 16, 31, 32, 33, 63, 64]:   # (past the width: 0, and the sign for >>, as torch)
    check(T(a) << k, a << k, dtype=True)
    check(T(a) >> k, a >> k, dtype=True)
  check(T(a) ^ 3, a ^ 3, dtype=True)
  check(T(a) | True, a | True, dtype=True)
  check(T(a).bitwise_not(), a.bitwise_not(), dtype=True)

# ---------------------------------------------------------------- gradients

def grad_check(f_tiny, f_torch, *arrays, rtol=1e-4, atol=1e-5):
  ts = [torch.tensor(a, requires_grad=True) for a in arrays]
  out = f_torch(*ts)
  w = torch.tensor(RNG.standard_normal(out.shape), dtype=torch.float32)
  (out * w).sum().backward()
  tt = [Tensor(a, requires_grad=True) for a in arrays]
  (f_tiny(*tt) * T(w)).sum().backward()
  for t, o in zip(tt, ts):
    got = t.grad.numpy() if t.grad is not None else np.zeros(t.shape, np.float32)
    want = o.grad.numpy() if o.grad is not None else np.zeros(o.shape, np.float32)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)

GX = RNG.standard_normal((3, 4)).astype(np.float32)
GZ = np.array([[1.0, 0.0, 3.0, 2.0], [0.0, 0.0, 2.0, -1.0], [2.0, 3.0, -1.0, 0.5]], np.float32)    # zeros: prod and cumprod
GT = np.array([[1.0, 3.0, 3.0, 2.0], [0.0, 0.0, 0.0, 0.0], [5.0, 1.0, 5.0, 5.0]], np.float32)     # ties: max and min
GI = torch.tensor([[0, 0, 2, 1], [2, 2, 2, 0]])
GRADS = {
  "gather": (lambda a: a.gather(0, T(GI)), lambda a: a.gather(0, GI), [GX]),
  "scatter": (lambda a, s: a.scatter(0, Tensor([[0, 1, 2, 1]]), s[:1]), lambda a, s: a.scatter(0, torch.tensor([[0, 1, 2, 1]]), s[:1]), [GX, GX[:2]]),
  # (src's values differ from self's: where an excluded self value (include_self=False) ties with the amax, torch still
  # counts it among the ties and gives src half the gradient, self none; ours gives src all of it)
  **{f"scatter_reduce {r} {inc}": (lambda a, s, r=r, inc=inc: a.scatter_reduce(0, T(GI), s, r, include_self=inc),
                                   lambda a, s, r=r, inc=inc: a.scatter_reduce(0, GI, s, r, include_self=inc), [GX, GX[:2] * 1.5 + 0.25])
     for r, inc in itertools.product(["sum", "prod", "mean", "amax", "amin"], [True, False])},
  **{f"{op} {ax}": (lambda a, op=op, ax=ax: getattr(a, op)(ax), lambda a, op=op, ax=ax: getattr(a, op)(ax), [GX])
     for op, ax in itertools.product(["cumsum", "cumprod", "logcumsumexp"], [0, 1])},
  **{f"{op} zeros {ax}": (lambda a, op=op, ax=ax: getattr(a, op)(ax), lambda a, op=op, ax=ax: getattr(a, op)(ax), [GZ])
     for op, ax in itertools.product(["cumprod", "prod"], [0, 1])},
  "prod one zero": (lambda a: a.prod(), lambda a: a.prod(), [np.array([2.0, 0.0, 3.0], np.float32)]),
  "prod all": (lambda a: a.prod(), lambda a: a.prod(), [GZ]),
  # (cummax's gradient on ties is split among them, documented; values without ties here)
  "cummax": (lambda a: a.cummax(1)[0], lambda a: a.cummax(1)[0], [GX]), "cummin": (lambda a: a.cummin(0)[0], lambda a: a.cummin(0)[0], [GX]),
  "sort": (lambda a: a.sort(1)[0], lambda a: a.sort(1)[0], [GX]), "sort desc": (lambda a: a.sort(0, descending=True)[0], lambda a: a.sort(0, descending=True)[0], [GX]),
  "topk": (lambda a: a.topk(2, 1)[0], lambda a: a.topk(2, 1)[0], [GX]),
  "max ties": (lambda a: a.max(), lambda a: a.amax(), [GT]), "max ties 1": (lambda a: a.max(1), lambda a: a.amax(1), [GT]),
  "min ties 0": (lambda a: a.min(0), lambda a: a.amin(0), [GT]),
  **{f"var {ax} {c}": (lambda a, ax=ax, c=c: a.var(ax, correction=c), lambda a, ax=ax, c=c: a.var(ax, correction=c), [GX]) for ax, c in itertools.product([0, 1], [0, 1, 2])},
  **{f"std {ax} {c}": (lambda a, ax=ax, c=c: a.std(ax, correction=c), lambda a, ax=ax, c=c: a.std(ax, correction=c), [GX]) for ax, c in itertools.product([0, 1], [0, 1])},
  **{f"pad {m}": (lambda a, m=m: a.pad((2, 1, 1, 2), mode=m), lambda a, m=m: F.pad(a, (2, 1, 1, 2), mode=m), [GX[None, None]]) for m in ["reflect", "replicate", "circular"]},
  **{f"pad {m} negative": (lambda a, m=m: a.pad((-1, 2, 1, -1), mode=m), lambda a, m=m: F.pad(a, (-1, 2, 1, -1), mode=m), [GX[None, None]]) for m in ["reflect", "replicate", "circular"]},
  **{f"interpolate {m} {ac}": (lambda a, m=m, ac=ac: a.interpolate((7, 3), mode=m, **({} if ac is None else {"align_corners": ac})),
                               lambda a, m=m, ac=ac: F.interpolate(a, (7, 3), mode="bilinear" if m == "linear" else m, **({} if ac is None else {"align_corners": ac})),
                               [GX[None, None]]) for m, ac in [("nearest", None), ("nearest-exact", None), ("linear", False), ("linear", True)]},
  "roll": (lambda a: a.roll((1, -2), (0, 1)), lambda a: a.roll((1, -2), (0, 1)), [GX]), "unfold": (lambda a: a.unfold(1, 2, 1), lambda a: a.unfold(1, 2, 1), [GX]),
  "repeat": (lambda a: a.repeat(2, 3), lambda a: a.repeat(2, 3), [GX]), "repeat_interleave": (lambda a: a.repeat_interleave(2, 1), lambda a: a.repeat_interleave(2, 1), [GX]),
  "triu": (lambda a: a.triu(1), lambda a: a.triu(1), [GX]), "diagonal": (lambda a: a.diagonal(1), lambda a: a.diagonal(1), [GX]),
  "masked_fill": (lambda a: a.masked_fill(Tensor(GX > 0), 0.0), lambda a: a.masked_fill(torch.tensor(GX > 0), 0.0), [GX]),
  "masked_select": (lambda a: a.masked_select(Tensor(GX > 0)), lambda a: a.masked_select(torch.tensor(GX > 0)), [GX]),
  "where": (lambda a, b: Tensor(GX > 0).where(a, b[0]), lambda a, b: torch.where(torch.tensor(GX > 0), a, b[0]), [GX, GX]),
  "einsum trace": (lambda a: Tensor.einsum("ii->i", a[:, :3]), lambda a: torch.einsum("ii->i", a[:, :3]), [GX]),
  "einsum": (lambda a, b: Tensor.einsum("ij,kj->ik", a, b), lambda a, b: torch.einsum("ij,kj->ik", a, b), [GX, GX]),
  "getitem duplicates": (lambda a: a[Tensor([0, 0, 2])], lambda a: a[torch.tensor([0, 0, 2])], [GX]),
  "getitem two": (lambda a: a[Tensor([0, 0, 2]), Tensor([1, 1, -1])], lambda a: a[torch.tensor([0, 0, 2]), torch.tensor([1, 1, -1])], [GX]),
  "cat empty": (lambda a: a.cat(a, a[:0], dim=0), lambda a: torch.cat([a, a, a[:0]], 0), [GX]),
  "split": (lambda a: a.split(3, 1)[1], lambda a: a.split(3, 1)[1], [GX]),
}

@pytest.mark.parametrize("name", list(GRADS))
def test_gradients_match_torch(name):
  ft, fo, arrays = GRADS[name]
  grad_check(ft, fo, *arrays)

# ---------------------------------------------------------------- inputs that are views

VIEWS = {
  "permute": lambda t: t.permute(2, 0, 1), "step": lambda t: t[::2, 1::2], "flip": lambda t: t.flip(1),
  "expand": lambda t: t[:, :1].expand(4, 3, 5), "shrink": lambda t: t[1:3, 2:5, 1:],
  "pad": lambda t: t.pad(((0, 0), (1, 2), (0, 1))) if isinstance(t, Tensor) else F.pad(t, (0, 1, 1, 2)),
  "reshape,transpose": lambda t: t.reshape(6, 4, 5).transpose(0, 2),
}
def _idx(t, n): return (Tensor if isinstance(t, Tensor) else torch.tensor)(np.ones((t.shape[0], n, t.shape[2]), np.int64).tolist())
VIEW_OPS = {
  "cumsum": lambda t: t.cumsum(1), "cumprod": lambda t: t.cumprod(0), "cummax": lambda t: t.cummax(2)[1], "argmax": lambda t: t.argmax(1),
  "argmin": lambda t: t.argmin(2), "argmax all": lambda t: t.argmax(), "prod": lambda t: t.prod(1), "roll": lambda t: t.roll(2, 1),
  "unfold": lambda t: t.unfold(1, 2, 1), "triu": lambda t: t.triu(1), "repeat_interleave": lambda t: t.repeat_interleave(2, 1),
  "diagonal": lambda t: t.diagonal(1, 0, 2), "masked_select": lambda t: t.masked_select(t > 0), "nonzero": lambda t: (t > 0).nonzero(),
  "sort": lambda t: t.sort(1)[1] if isinstance(t, Tensor) else t.sort(dim=1, stable=True)[1],
  "sort desc": lambda t: t.sort(0, descending=True)[0] if isinstance(t, Tensor) else t.sort(dim=0, descending=True, stable=True)[0],
  "topk": lambda t: t.topk(2, 2)[0], "gather": lambda t: t.gather(1, _idx(t, 2)),
  "scatter_reduce sum": lambda t: t.scatter_reduce(1, _idx(t, 2), t[:, :2] * 3, "sum"),
  "scatter_reduce amax": lambda t: t.scatter_reduce(1, _idx(t, 2), t[:, :2] * 3, "amax", include_self=False),
  "getitem": lambda t: t[(Tensor if isinstance(t, Tensor) else torch.tensor)([1, 0, 1]), :, (Tensor if isinstance(t, Tensor) else torch.tensor)([0, 0, 2])],
  "pad reflect": lambda t: t.pad((1, 1, 1, 0), mode="reflect") if isinstance(t, Tensor) else F.pad(t, (1, 1, 1, 0), mode="reflect"),
}

@pytest.mark.parametrize("view", list(VIEWS))
def test_ops_on_views(view):
  for kind in ("f", "i"):
    base = rand((4, 6, 5), kind)
    for name, op in VIEW_OPS.items():
      if kind == "i" and name not in ("cumsum", "cummax", "argmax", "sort", "gather", "scatter_reduce amax", "getitem"): continue
      check(op(VIEWS[view](T(base))), op(VIEWS[view](base)), rtol=1e-4, atol=1e-5)

# ---------------------------------------------------------------- constants: folded as the kernel computes them

INT_OPS = {"neg": lambda t: -t, "abs": lambda t: t.abs(), "floordiv": lambda t: t // 3, "floordiv neg": lambda t: t // -3, "mod": lambda t: t % 3,
           "mod neg": lambda t: t % -3, "mul": lambda t: t * 3, "add": lambda t: t + 100, "square": lambda t: t * t, "invert": lambda t: ~t,
           "shl": lambda t: t << 2, "shr": lambda t: t >> 1, "lt": lambda t: t < 0, "eq": lambda t: t == 0, "maximum": lambda t: t.maximum(5),
           "sign": lambda t: t.sign(), "sub": lambda t: t - 1, "where": lambda t: (t < 0).where(1, t)}
FLOAT_OPS = {"neg": lambda t: -t, "abs": lambda t: t.abs(), "floordiv": lambda t: t // 3, "floordiv neg": lambda t: t // -3, "mod": lambda t: t % 3,
             "trunc": lambda t: t.trunc(), "floor": lambda t: t.floor(), "ceil": lambda t: t.ceil(), "round": lambda t: t.round(),
             "recip": lambda t: t.reciprocal(), "sqrt": lambda t: t.sqrt(), "sign": lambda t: t.sign(), "cast int8": lambda t: t.cast(dtypes.int8),
             "cast uint8": lambda t: t.cast(dtypes.uint8), "cast half": lambda t: t.cast(dtypes.half), "lt": lambda t: t < 0, "where": lambda t: (t < 0).where(1.0, t)}
CONSTS = [(d, v) for d in INTS for v in INT_VALS[d]] + [("float32", v) for v in [-7.5, -0.5, -0.0, 0.0, 0.5, 2.5, 1e30, inf, -inf, nan]]

def _bits(t: Tensor) -> list: return [("nan" if math.isnan(v) else (v, math.copysign(1, v))) if isinstance(v, float) else v for v in t.flatten().tolist()]

@pytest.mark.parametrize("d,v", CONSTS, ids=str)
def test_constant_folding_matches_the_kernel(d, v):
  # an op on a constant (Tensor(v), Tensor.full) folds in Python; on a realized buffer it runs as a kernel: the same bits
  td = INTS[d][1] if d in INTS else dtypes.float32
  realized = Tensor([v, v], dtype=td).contiguous().realize()
  for name, f in (INT_OPS if d in INTS else FLOAT_OPS).items():
    if d == "uint8" and name in ("floordiv neg", "mod neg"): continue   # (-3 does not fit uint8: an OverflowError)
    want = _bits(f(realized))
    assert _bits(f(Tensor.full((2,), v, dtype=td))) == want, name
    assert _bits(f(Tensor(v, dtype=td)).reshape(1).expand(2)) == want, name

# ---------------------------------------------------------------- the PYTHON device (the emulator)

def test_subset_on_python_device():
  x, xi = rand((3, 5)), rand((3, 5), "i")
  P = lambda t: T(t, device="PYTHON")
  idx = torch.tensor([[0, 4, 4], [1, 1, 0], [2, 0, 3]])
  check(P(x).gather(1, T(idx, device="PYTHON")), x.gather(1, idx))
  check(P(x).scatter_reduce(1, T(idx, device="PYTHON"), P(x[:, :3]), "amax", include_self=False), x.scatter_reduce(1, idx, x[:, :3], "amax", include_self=False))
  check(P(xi).cumsum(1), xi.cumsum(1), dtype=True)
  check(P(xi).cummax(0), tuple(xi.cummax(0)))
  check(P(xi).argmax(1), xi.argmax(1))
  check(P(x).sort(1, descending=True), tuple(x.sort(dim=1, descending=True, stable=True)))
  check(P(x).pad((2, 1), mode="reflect"), F.pad(x, (2, 1), mode="reflect"))
  check(P(x)[Tensor([2, 0, 2], device="PYTHON"), 1:], x[torch.tensor([2, 0, 2]), 1:])
  check(P(x).var(1, correction=0), x.var(1, correction=0), rtol=1e-5)
  i8 = torch.tensor([-128, -7, 127], dtype=torch.int8)
  check(P(i8) * 3 // -2, i8 * 3 // -2, dtype=True)
  check(P(i8) % 5, i8 % 5, dtype=True)
  assert (Tensor(2**40 + 5, dtype=dtypes.int64, device="PYTHON").abs()).tolist() == 2**40 + 5

# ---------------------------------------------------------------- regressions found by this sweep

def test_int64_constant_past_int32_beside_an_index_is_not_narrowed():
  # a kernel's int64 index math narrows to int32 when it fits; a comparison of a wide int64 constant with 0 (which is also
  # the store's index offset, the same node) joined the index nodes and the constant was narrowed too: 2**40+5 became 5
  for v in [2**40 + 5, -2**63, 2**63 - 1, -2**31 - 1]:
    x = Tensor(v, dtype=dtypes.int64)
    assert x.abs().tolist() == (v if v == -2**63 else abs(v))
    assert (x < 0).tolist() == (v < 0)
    assert (x < 0).where(1, x).tolist() == (1 if v < 0 else v)
    assert (Tensor.full((3,), v, dtype=dtypes.int64) // 3).tolist() == [int(torch.tensor(v) // 3)] * 3

def test_trunc_of_a_constant_keeps_the_sign_of_zero():
  # C's trunc(-0.5) is -0.0 (so are floor/ceil/round built on it), which the kernel gives; the folded constant gave +0.0
  for v in [-0.5, -0.0, -0.9]:
    for f in [Tensor.trunc, Tensor.ceil, Tensor.round]:
      assert math.copysign(1, f(Tensor(v)).item()) == -1.0
  assert math.copysign(1, (Tensor(0.0) // -3).item()) == -1.0   # (torch: 0.0 // -3 is -0.0)

@pytest.mark.parametrize("dt,tdt", [(dtypes.float16, torch.float16), (dtypes.bfloat16, torch.bfloat16)], ids=["half", "bfloat16"])
def test_half_var_layernorm_cumsum_compute_in_float32(dt, tdt):
  # torch computes these in float32 and rounds once; in float16 the squares' sum (and N past 65504) overflowed to inf/NaN
  # (var of 70000 values was NaN, layernorm of +-300 was 0), and bfloat16's cumsum carried its block totals rounded (a
  # running sum of ones stuck at 65536)
  x = torch.linspace(-300, 300, 1000).to(tdt)
  h = T(x.float()).cast(dt)
  check(h.var(), x.var(), rtol=1e-2, dtype=True)
  check(h.std(correction=0), x.std(correction=0), rtol=1e-2, dtype=True)
  check(h.layernorm(), F.layer_norm(x, (1000,)), rtol=1e-2, atol=1e-3, dtype=True)
  y = torch.linspace(-3, 3, 70000).to(tdt)
  check(T(y.float()).cast(dt).var(), y.var(), rtol=1e-2, dtype=True)
  check(Tensor.ones(70000, dtype=dt).cumsum(), torch.ones(70000, dtype=tdt).cumsum(0), dtype=True)
  check(Tensor.full((300,), 1.01, dtype=dt).cumprod(0), torch.full((300,), 1.01, dtype=tdt).cumprod(0), rtol=1e-2, dtype=True)
  grad_check(lambda a: a.cast(dt).var(1).cast(dtypes.float32), lambda a: a.to(tdt).var(1).float(), GX, rtol=2e-2, atol=2e-2)

def test_uint8_interpolate_matches_torch():
  img = torch.tensor(RNG.integers(0, 256, (1, 3, 5, 7)), dtype=torch.uint8)
  for size, ac in itertools.product([(3, 4), (10, 9)], [False, True]):
    check(T(img).interpolate(size, mode="linear", align_corners=ac), F.interpolate(img, size=size, mode="bilinear", align_corners=ac), dtype=True)
    check(T(img).interpolate(size, mode="nearest"), F.interpolate(img, size=size, mode="nearest"), dtype=True)
    check(T(img).interpolate(size, mode="nearest-exact"), F.interpolate(img, size=size, mode="nearest-exact"), dtype=True)

# ---------------------------------------------------------------- random chains of the long-tail ops (hypothesis)

def _pad_ref(o, pads, mode): return F.pad(o.unsqueeze(0), pads, mode=mode).squeeze(0) if o.ndim < 3 else F.pad(o, pads, mode=mode)
CHAIN = {   # (tinygrad, torch, applies): each keeps the ops' inputs float
  "cumsum": (lambda t, ax, r: t.cumsum(ax), lambda o, ax, r: o.cumsum(ax), lambda sh, ax: True),
  "cumprod": (lambda t, ax, r: (t * 0.9).cumprod(ax), lambda o, ax, r: (o * 0.9).cumprod(ax), lambda sh, ax: True),
  "cummax": (lambda t, ax, r: t.cummax(ax)[0], lambda o, ax, r: o.cummax(ax)[0], lambda sh, ax: True),
  "sort": (lambda t, ax, r: t.sort(ax)[0], lambda o, ax, r: o.sort(dim=ax, stable=True)[0], lambda sh, ax: True),
  "flip": (lambda t, ax, r: t.flip(ax), lambda o, ax, r: o.flip(ax), lambda sh, ax: True),
  "roll": (lambda t, ax, r: t.roll(2, ax), lambda o, ax, r: o.roll(2, ax), lambda sh, ax: True),
  "pad reflect": (lambda t, ax, r: t.pad((1, 2), mode="reflect"), lambda o, ax, r: _pad_ref(o, (1, 2), "reflect"), lambda sh, ax: sh[-1] >= 3),
  "pad circular": (lambda t, ax, r: t.pad((2, 1), mode="circular"), lambda o, ax, r: _pad_ref(o, (2, 1), "circular"), lambda sh, ax: sh[-1] >= 2),
  "triu": (lambda t, ax, r: t.triu(1), lambda o, ax, r: o.triu(1), lambda sh, ax: len(sh) >= 2),
  "transpose": (lambda t, ax, r: t.transpose(0, -1), lambda o, ax, r: o.transpose(0, -1), lambda sh, ax: True),
  "step": (lambda t, ax, r: t[::2], lambda o, ax, r: o[::2], lambda sh, ax: True),
  "gather": (lambda t, ax, r: t.gather(ax, Tensor(r)), lambda o, ax, r: o.gather(ax, torch.tensor(r)), lambda sh, ax: sh[ax] > 0),
  "scatter_reduce": (lambda t, ax, r: t.scatter_reduce(ax, Tensor(r), t * 0.5 + 0.25, "amax", include_self=False),
                     lambda o, ax, r: o.scatter_reduce(ax, torch.tensor(r), o * 0.5 + 0.25, "amax", include_self=False), lambda sh, ax: sh[ax] > 0),
  "repeat_interleave": (lambda t, ax, r: t.repeat_interleave(2, ax), lambda o, ax, r: o.repeat_interleave(2, ax), lambda sh, ax: True),
  "unfold": (lambda t, ax, r: t.unfold(ax, 2, 1).sum(-1), lambda o, ax, r: o.unfold(ax, 2, 1).sum(-1), lambda sh, ax: sh[ax] >= 2),
  "max": (lambda t, ax, r: t.max(ax, keepdim=True) - t, lambda o, ax, r: o.amax(ax, keepdim=True) - o, lambda sh, ax: sh[ax] > 0),
  "argmax": (lambda t, ax, r: t.argmax(ax, keepdim=True).float() + t, lambda o, ax, r: o.argmax(ax, keepdim=True).float() + o, lambda sh, ax: sh[ax] > 0),
  "var": (lambda t, ax, r: t.var(ax, keepdim=True) + t, lambda o, ax, r: o.var(ax, keepdim=True) + o, lambda sh, ax: sh[ax] > 1),
  "where": (lambda t, ax, r: (t > 0).where(t, t * 2), lambda o, ax, r: torch.where(o > 0, o, o * 2), lambda sh, ax: True),
}

@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.sampled_from([1, 2, 3, 4, 5, 7]), min_size=1, max_size=3), st.lists(st.tuples(st.sampled_from(list(CHAIN)), st.integers(0, 2)), min_size=1, max_size=4),
       st.integers(0, 2**31 - 1))
def test_random_chains_of_long_tail_ops(shape, chain, seed):
  rng = np.random.default_rng(seed)
  x = rng.standard_normal(shape).astype(np.float32)
  t, o = Tensor(x), torch.tensor(x)
  for name, ax in chain:
    ax = ax % t.ndim
    ft, fo, ok = CHAIN[name]
    if not ok(tuple(t.shape), ax): continue
    r = rng.integers(0, max(1, t.shape[ax]), t.shape)
    t, o = ft(t, ax, r), fo(o, ax, r)
  check(t, o, rtol=1e-3, atol=1e-4)

@pytest.mark.parametrize("fn", ["softmax", "log_softmax", "logsumexp"])
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_softmax_rows_past_the_half_range(fn, dt):
  # a float16 row of 70000 near-equal values: its sum of exps (about 70000) overflowed float16, so every probability was
  # 0 (and logsumexp inf); computed in float32 and rounded once, as torch
  x = np.full((2, 70000), 3.0, dtype=np.float32)
  x[:, 0] = 2.0
  tdt = getattr(torch, dt)
  ref = getattr(torch.tensor(x).to(tdt).float(), fn)(-1).to(tdt).float().numpy()
  got = getattr(Tensor(x).cast(getattr(dtypes, dt)), fn)(-1)
  assert got.dtype == getattr(dtypes, dt)
  np.testing.assert_allclose(got.float().numpy(), ref, rtol=1e-2)
