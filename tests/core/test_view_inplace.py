"""In-place operators on a view of a view write through to the base, as torch: `x[0][1] += 1`, `x.T[0] *= 2` and
`v = x[1:3]; v[0] += 5` raised "the truth value of a Tensor is ambiguous" (setitem evaluated `view_of or self`)."""
import numpy as np
import pytest
from tinygrad import Tensor

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
