"""Row reduces fused into the kernel that writes the rows (schedule.py's _row_local, codegen/opt.py's own-range unroll):
softmax, log_softmax, layer norm and argmax over the last axis are one kernel on the CPU, each row's reduces vectorized
and computed once per row; the values are torch's."""
import numpy as np
import pytest
import torch
from tinygrad import Tensor, Device
from tinygrad.plugin_api import kernels, render
from tinygrad.uop import Ops

def _rand(*shape: int, seed: int = 0) -> np.ndarray: return np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * 4

def _progs(t: Tensor) -> list:
  return [render(k, Device["CPU"].renderer) for k in kernels(t)]

@pytest.mark.parametrize("shape", [(16, 64), (64, 257), (2, 8, 33, 48), (20, 4096)])
def test_softmax_family_is_one_kernel_and_matches_torch(shape):
  a = _rand(*shape)
  a[0, ..., :5] = 80.0   # large values: the max shift keeps exp finite
  if len(shape) == 2: a[1] = -np.inf   # a row of -inf: NaN, as torch
  x, ta = Tensor(a, device="CPU"), torch.tensor(a)
  cases = [(x.softmax(-1), ta.softmax(-1)), (x.log_softmax(-1), ta.log_softmax(-1)), (x.logsumexp(-1), ta.logsumexp(-1)),
           (x.layernorm(-1), torch.nn.functional.layer_norm(ta, shape[-1:])), (x.argmax(-1), ta.argmax(-1))]
  for i, (got, want) in enumerate(cases):
    assert len(kernels(got)) == (2 if i == 4 else 1), f"{shape}: {len(kernels(got))} kernels"   # argmax: and its arange
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=2e-6)

def test_softmax_row_reduces_are_vector_accumulators_and_one_reciprocal_per_row():
  # the max and the sum run in 16-lane accumulators (a reduce nested in another is packed once: a scalar copy of the max
  # beside the vector one ran the row's max twice), and each row divides once: 1/sum outside the row's loops, then *
  (p,) = _progs(Tensor.empty(64, 4096, device="CPU").softmax(-1))
  accs = [u for u in p.uops if u.op is Ops.DEFINE_REG]
  assert len(accs) == 2 and all(u.dtype.base.count > 1 for u in accs), [u.dtype for u in accs]
  divs = [u for u in p.uops if u.op in (Ops.FDIV, Ops.RECIPROCAL)]
  assert len(divs) == 1 and divs[0].dtype.count == 1, divs

@pytest.mark.parametrize("make", [lambda x: x.softmax(0), lambda x: x[:8].softmax(-1), lambda x: x.softmax(-1).reshape(-1)[::2]])
def test_other_softmaxes_keep_their_kernels_and_values(make):
  # over a leading axis (its reduce is not inside the rows' loops), with fewer rows than threads need, or read back
  # through a movement op: the reduces keep kernels of their own
  a = _rand(64, 96, seed=1)
  got = make(Tensor(a, device="CPU"))
  assert len(kernels(got)) > 1
  np.testing.assert_allclose(got.numpy(), make(torch.tensor(a)).numpy(), rtol=2e-5, atol=2e-6)

def test_row_reduce_read_by_two_kernels_is_computed_once():
  # the max feeds the softmax and is also an output: computed once, in a kernel of its own
  a = _rand(32, 64, seed=2)
  x = Tensor(a, device="CPU")
  m = x.max(-1, keepdim=True)
  s, m2 = (x - m).exp(), m * 2
  Tensor.realize(s, m2)
  np.testing.assert_allclose(s.numpy(), np.exp(a - a.max(-1, keepdims=True)), rtol=1e-6)
  np.testing.assert_allclose(m2.numpy(), a.max(-1, keepdims=True) * 2)
