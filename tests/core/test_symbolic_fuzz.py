"""Tensor ops on tensors shrunk by two bound Variables (n rows, m columns, each over its own range), under TinyJit and
replayed with changing values (the range's ends, 1, a return to the first), each replay against numpy: reductions over
the variable axes, mean (divided by the bound value, also of ints, bools and float16), var/std, softmax/logsumexp over a
variable axis, cumsum, argmax, pad in every mode, cat of two variable slices, matmul with a variable inner dim (float32,
float16, int), flips and gathers. test_symbolic_shapes.py's fuzz draws one variable and compares with the int program."""
import numpy as np, pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, TinyJit, Variable, dtypes
from tinygrad.engine.jit import JitError
from tinygrad.mixin.common import EmptyReductionError

_RS = np.random.RandomState(11)
X = _RS.randn(9, 10).astype(np.float32)
Y = _RS.randn(10, 9).astype(np.float32)
XI = _RS.randint(-50, 50, (9, 10)).astype(np.int32)
IDX = _RS.randint(0, 10, (9, 3)).astype(np.int32)
PAD = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}   # ours: numpy's

def _sm(a, ax):
  e = np.exp(a.astype(np.float64) - a.max(ax, keepdims=True))
  return e / e.sum(ax, keepdims=True)

# name: (ours on (x, n, m), numpy on (x, n, m) with ints, the smallest n and m it needs)
PROGS = {
  "sum0": (lambda n, m: Tensor(X)[:n, :m].sum(0), lambda n, m: X[:n, :m].sum(0), 0),
  "sum_all": (lambda n, m: Tensor(X)[:n, :m].sum(), lambda n, m: X[:n, :m].sum(), 0),
  "mean0": (lambda n, m: Tensor(X)[:n].mean(0), lambda n, m: X[:n].mean(0), 1),
  "mean_all": (lambda n, m: Tensor(X)[:n, :m].mean(), lambda n, m: X[:n, :m].mean(), 1),
  "mean_int": (lambda n, m: Tensor(XI)[:n, :m].mean(1), lambda n, m: XI[:n, :m].astype(np.float64).mean(1), 1),
  "mean_bool": (lambda n, m: (Tensor(X)[:n, :m] > 0).mean(0), lambda n, m: (X[:n, :m] > 0).mean(0), 1),
  "mean_half": (lambda n, m: Tensor(X).half()[:n, :m].mean(0).float(), lambda n, m: X.astype(np.float16)[:n, :m].astype(np.float64).mean(0), 1),
  "var0": (lambda n, m: Tensor(X)[:n, :m].var(0), lambda n, m: X[:n, :m].astype(np.float64).var(0, ddof=1), 2),
  "std1_c0": (lambda n, m: Tensor(X)[:n, :m].std(1, correction=0), lambda n, m: X[:n, :m].astype(np.float64).std(1), 1),
  "softmax0": (lambda n, m: Tensor(X)[:n, :m].softmax(0), lambda n, m: _sm(X[:n, :m], 0), 1),
  "log_softmax1": (lambda n, m: Tensor(X)[:n, :m].log_softmax(1), lambda n, m: np.log(_sm(X[:n, :m], 1)), 1),
  "logsumexp0": (lambda n, m: Tensor(X)[:n, :m].logsumexp(0), lambda n, m: np.log(np.exp(X[:n, :m].astype(np.float64)).sum(0)), 1),
  "cumsum0": (lambda n, m: Tensor(X)[:n, :m].cumsum(0), lambda n, m: X[:n, :m].cumsum(0), 1),
  "cumsum_int": (lambda n, m: Tensor(XI)[:n, :m].cumsum(1), lambda n, m: XI[:n, :m].astype(np.int64).cumsum(1), 1),
  "max1": (lambda n, m: Tensor(X)[:n, :m].max(1), lambda n, m: X[:n, :m].max(1), 1),
  "argmax0": (lambda n, m: Tensor(X)[:n, :m].argmax(0), lambda n, m: X[:n, :m].argmax(0), 1),
  "argmin_all": (lambda n, m: Tensor(X)[:n, :m].argmin(), lambda n, m: X[:n, :m].argmin(), 1),
  "prod0": (lambda n, m: (Tensor(X)[:n, :m] * 0.1 + 1).prod(0), lambda n, m: (X[:n, :m] * np.float32(0.1) + 1).astype(np.float64).prod(0), 0),
  "any_all": (lambda n, m: (Tensor(X)[:n, :m] > 1).any(0) ^ (Tensor(X)[:n, :m] > -1).all(0), lambda n, m: (X[:n, :m] > 1).any(0) ^ (X[:n, :m] > -1).all(0), 0),
  "pad_const": (lambda n, m: Tensor(X)[:n, :m].pad(((2, 1), (0, 3)), value=7.0), lambda n, m: np.pad(X[:n, :m], ((2, 1), (0, 3)), constant_values=7.0), 0),
  "pad_reflect": (lambda n, m: Tensor(X)[:n, :m].pad(((1, 1), (1, 0)), mode="reflect"), lambda n, m: np.pad(X[:n, :m], ((1, 1), (1, 0)), mode="reflect"), 2),
  "pad_replicate": (lambda n, m: Tensor(X)[:n, :m].pad(((1, 2), (2, 0)), mode="replicate"), lambda n, m: np.pad(X[:n, :m], ((1, 2), (2, 0)), mode="edge"), 1),
  "pad_circular": (lambda n, m: Tensor(X)[:n, :m].pad(((1, 0), (0, 1)), mode="circular"), lambda n, m: np.pad(X[:n, :m], ((1, 0), (0, 1)), mode="wrap"), 1),
  "cat_nm": (lambda n, m: Tensor(X)[:n].cat(Tensor(X)[:m] * 2, dim=0), lambda n, m: np.concatenate([X[:n], X[:m] * 2], 0), 0),
  "cat_sum": (lambda n, m: Tensor(X)[:, :n].cat(Tensor(Y.T)[:, :m], dim=1).sum(1), lambda n, m: np.concatenate([X[:, :n], Y.T[:, :m]], 1).sum(1), 0),
  "matmul": (lambda n, m: Tensor(X)[:n, :m] @ Tensor(Y)[:m, :n], lambda n, m: X[:n, :m].astype(np.float64) @ Y[:m, :n], 0),
  "matmul_half": (lambda n, m: (Tensor(X).half()[:, :m] @ Tensor(Y).half()[:m]).float(),
                  lambda n, m: X.astype(np.float16)[:, :m].astype(np.float64) @ Y.astype(np.float16)[:m], 0),
  "matmul_int": (lambda n, m: Tensor(XI)[:n, :m] @ Tensor(XI.T.copy())[:m], lambda n, m: XI[:n, :m] @ XI.T[:m], 0),
  "flip": (lambda n, m: Tensor(X)[:n, :m].flip(0, 1), lambda n, m: X[:n, :m][::-1, ::-1], 0),
  "roll_neg": (lambda n, m: Tensor(X)[:n, :m].roll((-1, -3), (0, 1)), lambda n, m: np.roll(X[:n, :m], (-1, -3), (0, 1)), 1),
  "roll_past": (lambda n, m: Tensor(X)[:n, :m].roll((5, 12), (0, 1)), lambda n, m: np.roll(X[:n, :m], (5, 12), (0, 1)), 1),
  "neg_slices": (lambda n, m: Tensor(X)[-n:, :-m] * 1, lambda n, m: X[9 - n:, :10 - m], 1),
  "neg_index": (lambda n, m: Tensor(X)[:, -m], lambda n, m: X[:, -m], 1),
  "transpose": (lambda n, m: Tensor(X)[:n, :m].T.contiguous() * 1, lambda n, m: X[:n, :m].T, 0),
  "gather": (lambda n, m: Tensor(X)[:n].gather(1, Tensor(IDX)[:n]), lambda n, m: np.take_along_axis(X[:n], IDX[:n], 1), 0),
  "from_end": (lambda n, m: Tensor(X)[9 - n:, 10 - m:].sum(1), lambda n, m: X[9 - n:, 10 - m:].sum(1), 0),
  "last_row": (lambda n, m: Tensor(X)[:n, :m][-1], lambda n, m: X[:n, :m][-1], 1),
  "sum_keep_div": (lambda n, m: Tensor(X)[:n, :m].abs().sum(1, keepdim=True) / (Tensor(X)[:n, :m].abs().sum() + 1),
                   lambda n, m: np.abs(X[:n, :m]).sum(1, keepdims=True) / (np.abs(X[:n, :m]).sum() + 1), 0),
  "layernorm": (lambda n, m: Tensor(X)[:n, :m].layernorm(), lambda n, m: (X[:n, :m] - X[:n, :m].mean(1, keepdims=True)) / np.sqrt(X[:n, :m].var(1, keepdims=True) + 1e-5), 1),
}

@settings(max_examples=80, deadline=None)
@given(st.sampled_from(sorted(PROGS)), st.lists(st.tuples(st.integers(0, 9), st.integers(0, 10)), min_size=2, max_size=4), st.integers(0, 1))
def test_fuzz_two_variables_replayed_match_numpy(name, vals, lo):
  ours, ref, need = PROGS[name]
  lo = max(lo, need)
  vals = [(max(n, lo), max(m, lo)) for n, m in vals] + [(9, 10), (lo, lo), (max(vals[0][0], lo), max(vals[0][1], lo))]
  if name in ("matmul", "cat_nm") and any(m > 9 for _, m in vals): vals = [(n, min(m, 9)) for n, m in vals]
  # the input tensor changes every call too: its value is added to the result
  jf = TinyJit(lambda t, n, m: (ours(n, m) + t).realize())
  for i, (n, m) in enumerate(vals):
    got = jf(Tensor([float(i)]).reshape(*([1] * max(1, np.ndim(ref(n, m))))) if np.ndim(ref(n, m)) else Tensor(float(i)),
             Variable("n", lo, 9).bind(n), Variable("m", lo, 10).bind(m))
    want, gotn = np.asarray(ref(n, m)).astype(np.float64) + i, got.numpy()
    assert gotn.shape == want.shape, f"call {i} n={n} m={m}: shape {gotn.shape} vs {want.shape}"
    np.testing.assert_allclose(gotn.astype(np.float64), want, rtol=2e-3 if "half" in name else 1e-4, atol=2e-3 if "half" in name else 1e-4,
                               err_msg=f"{name}: call {i}, n={n}, m={m}")

@pytest.mark.parametrize("op", ["max", "min", "argmax", "argmin"])
def test_max_over_a_variable_axis_bound_to_0_raises(op):
  # max/min/argmax/argmin of an empty axis raise EmptyReductionError (torch's error), but one whose size was a bound
  # Variable at 0 returned -inf, +inf or INT_MIN silently, eagerly and from a TinyJit replay
  f = lambda x, n: getattr(x[:n], op)(0).realize()
  with pytest.raises(EmptyReductionError): f(Tensor(X), Variable("n", 0, 9).bind(0))
  jf = TinyJit(f)
  for v in (3, 3, 5, 9):
    np.testing.assert_array_equal(jf(Tensor(X), Variable("n", 0, 9).bind(v)).numpy(), getattr(X[:v], op)(0))
  with pytest.raises(JitError, match="'n': 0"): jf(Tensor(X), Variable("n", 0, 9).bind(0))
  # a range that starts at 1 records nothing: every value is non-empty
  jf1 = TinyJit(f)
  for v in (3, 3, 1, 9): np.testing.assert_array_equal(jf1(Tensor(X), Variable("n", 1, 9).bind(v)).numpy(), getattr(X[:v], op)(0))

def test_roll_by_a_negative_shift_over_a_variable_axis():
  # roll's shift % n is C's % for a symbolic n (its sign kept): x[:n].roll(-1, 0) took the shrink (n+1, n) and raised
  # ArgumentError for every value; Python's % (n-1) is meant
  jf = TinyJit(lambda x, n: x[:n].roll(-1, 0).realize())
  for v in (2, 2, 5, 9, 3):
    np.testing.assert_array_equal(jf(Tensor(X), Variable("n", 1, 9).bind(v)).numpy(), np.roll(X[:v], -1, 0))
    np.testing.assert_array_equal(Tensor(X)[:Variable("n", 1, 9).bind(v)].roll(-13, 0).numpy(), np.roll(X[:v], -13, 0))

def test_an_index_or_slice_bound_that_is_minus_a_variable_counts_from_the_end():
  # x[-n:] and x[:, -n] with n a bound Variable (a start negative for every value) were taken as they are: IndexError
  # "index (-n) ... is out of bounds", where the int program counts from the end (x[-3:], the last three rows)
  f = lambda x, n: (x[-n:, :-n].sum(1) + x[:, -n][:1].sum()).realize()
  jf = TinyJit(f)
  for v in (2, 2, 5, 9, 1):
    want = X[9 - v:, :10 - v].sum(1) + X[:, -v][:1].sum()
    np.testing.assert_allclose(f(Tensor(X), Variable("n", 1, 9).bind(v)).numpy(), want, rtol=1e-6)
    np.testing.assert_allclose(jf(Tensor(X), Variable("n", 1, 9).bind(v)).numpy(), want, rtol=1e-6)

@pytest.mark.parametrize("op", ["cumsum", "cumprod", "cummax", "logcumsumexp"])
def test_running_reduce_over_a_variable_axis_bound_to_0(op):
  # the running reduces pad a window of n-1 elements, which has no form at n = 0: x[:, :n].cumsum(1) with n bound to 0
  # raised ArgumentError ('padding (n-1) >= 0 does not hold') where x[:, :0].cumsum(1) is an empty (9, 0). The empty case
  # is now decided at the bound value, and a TinyJit records the branch: a replay that needs the other one raises
  f = lambda x, n: (lambda r: r[0] if isinstance(r, tuple) else r)(getattr(x[:, :n], op)(1)).realize()
  for v in (0, 4):
    np.testing.assert_allclose(f(Tensor(X), Variable("n", 0, 10).bind(v)).numpy(), f(Tensor(X), v).numpy(), rtol=1e-5)
  jf = TinyJit(f)
  for v in (0, 0, 0): assert jf(Tensor(X), Variable("n", 0, 10).bind(v)).numpy().shape == (9, 0)
  with pytest.raises(JitError, match="'n': 3"): jf(Tensor(X), Variable("n", 0, 10).bind(3))

def test_ceildiv_of_a_symbolic_size_rounds_up():
  # ceildiv was -(n // -c), Python's floor trick, but a UOp's // truncates: ceildiv(n, 2) at n=3 was 1. A cumsum over a
  # variable axis longer than its 256 block and a ceil_mode pool over a short variable axis raised 'padding >= 0 does
  # not hold' at values the int program takes
  from tinygrad.helpers import ceildiv
  from tinygrad.uop.ops import sym_infer
  v = Variable("v", -9, 9)
  for c in (1, 2, 3, 5):
    assert [sym_infer(ceildiv(v + 2, c), {v: i}) for i in range(-9, 10)] == [-(-(i + 2) // c) for i in range(-9, 10)]
  big = _RS.randn(600).astype(np.float32)
  jf = TinyJit(lambda x, n: x[:n].cumsum(0).realize())
  for n in (1, 300, 513, 300, 600):
    np.testing.assert_allclose(jf(Tensor(big), Variable("n", 1, 600).bind(n)).numpy(), big[:n].cumsum(), atol=1e-3, rtol=1e-4)
  x = Tensor(X).reshape(1, 1, 9, 10)
  for n in (2, 3, 8):
    got = x[:, :, :Variable("n", 1, 9).bind(n)].avg_pool2d(3, stride=2, padding=1, ceil_mode=True).numpy()
    np.testing.assert_allclose(got, x[:, :, :n].avg_pool2d(3, stride=2, padding=1, ceil_mode=True).numpy(), rtol=1e-6)
