"""numpy integers (a shape or an index read back from numpy) are accepted wherever a Python int is: sizes, axes, counts."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes

# every call with numpy integers builds what the same call with Python ints builds (the same graph, hash-consed)
_I = np.int64
NUMPY_INT_CALLS = {
  "permute": lambda t, i: t.permute(i(1), i(0)), "permute_tuple": lambda t, i: t.permute((i(1), i(0))), "reshape": lambda t, i: t.reshape(i(3), i(2)),
  "reshape_tuple": lambda t, i: t.reshape((i(3), -1)), "view": lambda t, i: t.view(i(6)), "expand": lambda t, i: t[:1].expand(i(4), 3),
  "pad": lambda t, i: t.pad(((i(1), 0), (0, i(2)))), "shrink": lambda t, i: t.shrink(((i(0), i(1)), None)), "flip": lambda t, i: t.flip(i(0)),
  "transpose": lambda t, i: t.transpose(i(0), i(1)), "sum": lambda t, i: t.sum(i(1)), "max_kw": lambda t, i: t.max(axis=i(0)),
  "mean_tuple": lambda t, i: t.mean((i(0), i(1))), "softmax": lambda t, i: t.softmax(i(0)), "cumsum": lambda t, i: t.cumsum(i(1)),
  "argmax": lambda t, i: t.argmax(i(1)), "unsqueeze": lambda t, i: t.unsqueeze(i(0)), "squeeze": lambda t, i: t.unsqueeze(0).squeeze(i(0)),
  "flatten": lambda t, i: t.unsqueeze(0).flatten(i(1)), "unflatten": lambda t, i: t.unflatten(i(1), (i(3), 1)), "repeat": lambda t, i: t.repeat(i(2), 1),
  "split": lambda t, i: t.split(i(1))[1], "chunk": lambda t, i: t.chunk(i(2), i(1))[0], "roll": lambda t, i: t.roll(i(1), i(0)),
  "cat": lambda t, i: t.cat(t, dim=i(1)), "stack": lambda t, i: Tensor.stack(t, t, dim=i(0)), "gather": lambda t, i: t.gather(i(0), Tensor([[0, 1, 0]])),
  "tril": lambda t, i: t.tril(i(1)), "topk": lambda t, i: t.topk(i(2))[0], "one_hot": lambda t, i: Tensor([1, 2]).one_hot(i(4)),
  "zeros": lambda t, i: Tensor.zeros(i(2), i(3)), "ones_tuple": lambda t, i: Tensor.ones((i(2),)), "full": lambda t, i: Tensor.full((np.int32(2),), 1.0),
  "eye": lambda t, i: Tensor.eye(i(3)), "linspace": lambda t, i: Tensor.linspace(0, 1, i(5)),
  "max_pool2d": lambda t, i: Tensor.ones(1, 1, 4, 4).max_pool2d(i(2)), "interpolate": lambda t, i: Tensor.ones(1, 1, 2, 2).interpolate((i(4), i(4))),
  "conv2d": lambda t, i: Tensor.ones(1, 1, 4, 4).conv2d(Tensor.ones(1, 1, 3, 3), stride=i(1), padding=i(1)),
  "unfold": lambda t, i: t.unfold(i(1), i(2), i(1)), "arange": lambda t, i: Tensor.arange(i(1), i(7), i(2)),
}

@pytest.mark.parametrize("name", NUMPY_INT_CALLS)
def test_numpy_ints_are_accepted_wherever_python_ints_are(name):
  t = Tensor.arange(6).float().reshape(2, 3)
  want, got = NUMPY_INT_CALLS[name](t, int), NUMPY_INT_CALLS[name](t, _I)
  assert got.shape == want.shape and all(type(s) is int for s in got.shape) and got.dtype == want.dtype
  assert got.uop is want.uop or name in ("gather", "one_hot")   # (these two build their index tensors afresh)
  np.testing.assert_equal(got.numpy(), want.numpy())

def test_numpy_ints_as_values_keep_their_dtype():
  # a numpy scalar as a value is strongly typed (numpy 2's rule): only sizes and axes are turned into ints
  t8 = Tensor([1, 2], dtype=dtypes.int8)
  assert (t8 + np.int64(1)).dtype == dtypes.int64 and Tensor.full((2,), np.int64(3)).dtype == dtypes.int64
  assert Tensor.rand(np.int64(2), np.int64(3)).shape == (2, 3) and Tensor.randn((np.int64(2),)).shape == (2,)

def test_permute_with_numpy_ints_against_numpy():
  a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
  order = np.argsort(np.array([2, 0, 1]))   # numpy ints, as an argsort gives them
  np.testing.assert_equal(Tensor(a).permute(*order).numpy(), a.transpose(*order))
  np.testing.assert_equal(Tensor(a).reshape(a.shape[::-1]).numpy(), a.reshape(a.shape[::-1]))

def test_numpy_numbers_as_range_ends_and_steps():
  # a range's ends and step pick no dtype of their own (numpy floats are floats): arange(np.float32(0), 1, np.float32(0.25))
  # was int32 [0, 0, 0, 0] (isinstance(np.float32, float) is False), linspace of numpy ends raised a numpy dtype
  # TypeError, randint refused numpy ints
  f = np.float32
  got = Tensor.arange(f(0), f(1), f(0.25))
  assert got.dtype == dtypes.default_float and got.tolist() == [0.0, 0.25, 0.5, 0.75]
  assert Tensor.arange(stop=f(2.5), start=0).tolist() == [0.0, 1.0, 2.0]
  assert Tensor.linspace(f(0), f(1), 5).tolist() == [0.0, 0.25, 0.5, 0.75, 1.0] == Tensor.linspace(_I(0), _I(4), 5).div(4).tolist()
  r = Tensor.randint(50, low=np.int32(2), high=np.int32(5)).numpy()
  assert r.min() >= 2 and r.max() < 5
  u = Tensor.uniform(50, low=f(1), high=f(2)).numpy()
  assert u.dtype == np.float32 and u.min() >= 1 and u.max() < 2
