"""In-place operators on a view of a view write through to the base, as torch: `x[0][1] += 1`, `x.T[0] *= 2` and
`v = x[1:3]; v[0] += 5` raised "the truth value of a Tensor is ambiguous" (setitem evaluated `view_of or self`)."""
import numpy as np
import pytest
from tinygrad import Tensor, Variable

torch = pytest.importorskip("torch", reason="the reference for in-place views: pip install torch")

def _c1(x): x[0][1] += 1
def _c2(x): x.T[0] *= 2
def _c3(x):
  v = x[1:3]
  v[0] += 5
  return v
def _c4(x):
  v = x[1:3]
  v[0] += 5
  v[1, 2] -= 1
  v[0] += 5
  return v
def _c5(x): x[1][1:3] *= 3
def _c6(x):
  v = x.T
  v[1][2] = 7
  return v
def _c7(x): x[:, 1][::2] += 10
def _c8(x):
  v = x.reshape(12)[2:8]
  v[1:3] += 100
  return v
def _c9(x): x[0][1] = 9
def _c10(x):
  v = x[1:3]
  w = v.T
  w[0] += 1
  v[0] *= 2
  return w
def _c11(x):
  x[2][1::2][1] -= 4
  x[0][1:][1:] += 1
CASES = [_c1, _c2, _c3, _c4, _c5, _c6, _c7, _c8, _c9, _c10, _c11]

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
@pytest.mark.parametrize("realized", [True, False], ids=["realized", "lazy"])
def test_inplace_on_a_view_of_a_view_matches_torch(device, realized):
  for case in CASES:
    a = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    tv = case(a)
    x = Tensor.arange(12, device=device).float().reshape(3, 4)
    if realized: x = x.contiguous().realize()
    v = case(x)
    np.testing.assert_array_equal(x.numpy(), a.numpy(), err_msg=f"{case.__name__}: the base after")
    if v is not None: np.testing.assert_array_equal(v.numpy(), tv.numpy(), err_msg=f"{case.__name__}: the view after")
    np.testing.assert_array_equal((x * 2).numpy(), (a * 2).numpy(), err_msg=f"{case.__name__}: computing with the base")

# realize() of a view of a realized tensor leaves it a view of the buffer, as torch's views and numpy's share their
# tensor's storage: `tmp = t[0].realize(); t[0] = t[1]; t[2] = tmp` copies the new row 0 (public tinygrad's
# test_setitem_swap_rows); it was a copy of its own, so tmp kept the old values and `v.realize(); v += 1` no longer wrote
# into the tensor. numpy is the reference: a flip is a view here as there (torch has no negative strides: its flip copies)
VIEWS = {"row": lambda t: t[1], "step": lambda t: t[::2, 1::2], "flip": lambda t: t[:, ::-1] if isinstance(t, np.ndarray) else t.flip(1),
         "permute": lambda t: t.T, "column": lambda t: t[:, 2], "view_of_view": lambda t: t[1:3].T[::-1],
         "detach": lambda t: t[1:3] if isinstance(t, np.ndarray) else t.detach()[1:3],
         # a slice by a bound Variable (a symbolic shape): realized, it was a copy, so writes into it left x as it was
         "bound_rows": lambda t: t[:2] if isinstance(t, np.ndarray) else t[:Variable("n", 1, 3).bind(2)],
         "bound_cols": lambda t: t[:, 1:3] if isinstance(t, np.ndarray) else t[:, 1:1 + Variable("n", 1, 3).bind(2)]}

def _r1(x, view):   # the view realized, then the base written: the view sees it
  v = view(x)
  if isinstance(v, Tensor): v.realize()
  x += 10
  return v
def _r2(x, view):   # the view realized, then written in place: the base sees it
  v = view(x)
  if isinstance(v, Tensor): v.realize()
  v += 1
  v *= 3
  return v
def _r3(x, view):   # written through the base with setitem after the view was read
  v = view(x)
  if isinstance(v, Tensor): v.numpy()
  x[1] = x[0] * 2
  return v

@pytest.mark.parametrize("device", ["CPU", "PYTHON"])
@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("case", [_r1, _r2, _r3])
def test_a_realized_view_still_shares_the_buffer(device, kind, case):
  a = np.arange(12, dtype=np.float32).reshape(3, 4)
  nv = case(a, VIEWS[kind])
  x = Tensor.arange(12, device=device).float().reshape(3, 4).contiguous().realize()
  v = case(x, VIEWS[kind])
  np.testing.assert_array_equal(x.numpy(), a, err_msg="the base")
  np.testing.assert_array_equal(v.numpy(), nv, err_msg="the view")

def test_swap_rows_through_a_realized_view():
  t = Tensor.arange(6).float().reshape(3, 2).contiguous().realize()
  tmp = t[0].realize()
  t[0] = t[1].realize()
  t[2] = tmp.realize()
  np.testing.assert_array_equal(t.numpy(), [[2, 3], [2, 3], [2, 3]])   # torch's result, and public tinygrad's

def test_contiguous_or_clone_of_a_view_is_a_copy():
  x = Tensor.arange(6).float().reshape(2, 3).contiguous().realize()
  c, k = x[0].contiguous().realize(), x[0].clone().realize()
  x += 1
  np.testing.assert_array_equal(c.numpy(), [0, 1, 2])
  np.testing.assert_array_equal(k.numpy(), [0, 1, 2])

def test_a_view_passed_to_a_jitted_function_is_read_at_each_call():
  from tinygrad import TinyJit
  f = TinyJit(lambda v: (v * 2 + 1).realize())
  x = Tensor.arange(20).float().reshape(4, 5).contiguous().realize()
  for i in range(4):
    np.testing.assert_array_equal(f(x[i]).numpy(), np.arange(5 * i, 5 * i + 5) * 2 + 1)

@pytest.mark.parametrize("axis", [0, 1])
@pytest.mark.parametrize("kind", list(VIEWS))
@pytest.mark.parametrize("case", [_r1, _r2, _r3])
def test_a_realized_view_of_a_sharded_tensor_still_shares_the_buffer(axis, kind, case):
  a = np.arange(16, dtype=np.float32).reshape(4, 4)
  nv = case(a, VIEWS[kind])
  x = Tensor(np.arange(16, dtype=np.float32).reshape(4, 4)).shard(("CPU:0", "CPU:1"), axis=axis).realize()
  v = case(x, VIEWS[kind])
  np.testing.assert_array_equal(x.numpy(), a, err_msg="the base")
  np.testing.assert_array_equal(v.numpy(), nv, err_msg="the view")
