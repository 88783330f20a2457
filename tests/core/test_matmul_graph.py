"""Tensor.dot's graph built on UOps for the common case (mixin/nn.py _dot_uop) is the very node its Tensor ops build, so
every kernel, cache key and result stays as it was; the cases it leaves to the Tensor ops still get those."""
import numpy as np
import pytest
from tinygrad import Tensor, dtypes, Context
from tinygrad.mixin import nn

def _both(a: Tensor, b: Tensor, want_fast: bool | None = True, **kw):
  orig, built = nn._dot_uop, []
  nn._dot_uop = lambda *args: built.append(orig(*args)) or built[-1]
  try: fast = a.dot(b, **kw).uop
  finally: nn._dot_uop = orig
  assert built and want_fast in (None, built[0] is not None), "the UOp form is taken where it applies"
  orig, nn._dot_uop = nn._dot_uop, lambda *args: None
  try: slow = a.dot(b, **kw).uop
  finally: nn._dot_uop = orig
  return fast, slow

@pytest.mark.parametrize("ashape,bshape", [((5, 7), (7, 3)), ((16, 64), (64, 48)), ((2, 3, 33, 17), (17, 20)), ((1, 197, 192), (192, 576)),
                                           ((7,), (7, 5)), ((4, 6), (6,)), ((64, 300), (300, 1000))])
@pytest.mark.parametrize("pack", [0, 1])
def test_same_node(ashape, bshape, pack):
  rng = np.random.default_rng(0)
  an, bn = rng.standard_normal(ashape, dtype=np.float32), rng.standard_normal(bshape, dtype=np.float32)
  with Context(MATMUL_PACK=1, MATMUL_PACK_BYTES=0 if pack else 1 << 20):
    a, b = Tensor(an), Tensor(bn)
    fast, slow = _both(a, b)
    assert fast is slow
    np.testing.assert_allclose((a @ b).numpy(), an @ bn, rtol=1e-4, atol=1e-4)
    bt = Tensor(np.ascontiguousarray(bn.T)).T   # a transposed operand (packed along k, padded where n needs it)
    fast, slow = _both(a, bt, want_fast=None)   # (packed, n is padded to whole panels where it needs: the Tensor ops)
    assert fast is slow
    np.testing.assert_allclose((a @ bt).numpy(), an @ bn, rtol=1e-4, atol=1e-4)

def test_left_to_tensor_ops():
  a, b = Tensor.ones(4, 8), Tensor.ones(8, 3)
  assert nn._dot_uop(a, b, dtypes.float32, 0) is None   # a dtype asked for
  assert nn._dot_uop(a.cast(dtypes.half), b.cast(dtypes.half), None, 0) is None   # half sums in float32
  assert nn._dot_uop(a, Tensor.ones(2, 8, 3), None, 0) is None   # a batched right operand
  assert nn._dot_uop(Tensor.ones(4, 5000), Tensor.ones(5000, 3), None, 0) is None   # a reduce long enough to split
  assert nn._dot_uop(a, b, None, 0) is not None
  np.testing.assert_allclose((Tensor.ones(4, 5000) @ Tensor.ones(5000, 3)).numpy(), np.full((4, 3), 5000.0))
