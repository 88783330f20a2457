"""`from tinygrad import function`: public tinygrad's @function decorator (beautiful_mnist's Model.__call__): the body's
values and gradients, the return-type check, and the implicit-buffer check (a tensor read from a closure or a global)."""
import numpy as np
import pytest
import torch
from tinygrad import Tensor, function, nn
from tinygrad.function import _function

def test_values_and_gradients_match_torch():
  @function
  def f(a: Tensor, b: Tensor) -> Tensor: return (a @ b).relu() * b
  na, nb = np.random.default_rng(0).standard_normal((2, 3, 3)).astype(np.float32)
  a, b = Tensor(na, requires_grad=True), Tensor(nb, requires_grad=True)
  f(a, b).sum().backward()
  ta, tb = torch.tensor(na, requires_grad=True), torch.tensor(nb, requires_grad=True)
  ((ta @ tb).relu() * tb).sum().backward()
  np.testing.assert_allclose(f(a, b).numpy(), ((ta @ tb).relu() * tb).detach().numpy(), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(a.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-6)
  np.testing.assert_allclose(b.grad.numpy(), tb.grad.numpy(), rtol=1e-5, atol=1e-6)

def test_method_makes_self_weights_explicit():
  class Model:
    def __init__(self): self.l = nn.Linear(3, 2)
    @function
    def __call__(self, x: Tensor) -> Tensor: return self.l(x).relu()
  m, x = Model(), Tensor([[1.0, -2.0, 3.0]])
  np.testing.assert_allclose(m(x).numpy(), m.l(x).relu().numpy(), rtol=1e-6)

def test_tuple_return_and_keyword_form():
  @function(precompile=True)
  def f(a: Tensor) -> tuple[Tensor, Tensor]: return a + 1, a * 2
  x, y = f(Tensor([1, 2, 3]))
  assert x.tolist() == [2, 3, 4] and y.tolist() == [2, 4, 6]

def test_bad_return_type_raises_and_depth_is_restored():
  @function
  def f(a: Tensor): return [a]
  with pytest.raises(RuntimeError, match="returned list"): f(Tensor([1]))
  @function
  def g(a: Tensor) -> Tensor: raise ValueError("inside")
  with pytest.raises(ValueError): g(Tensor([1]))
  assert _function.depth == 0

def test_implicit_buffer_is_named_unless_allowed():
  w = Tensor([7, 8, 9]).realize()
  def body(a: Tensor) -> Tensor: return a + w
  with pytest.raises(RuntimeError, match="1 implicit buffer.*allow_implicit=False"): function(body)(Tensor([1, 2, 3]))
  assert function(body, allow_implicit=True)(Tensor([1, 2, 3])).tolist() == [8, 10, 12]
  assert function(body)(w).tolist() == [14, 16, 18]   # passed as an argument it is explicit

def test_pending_computation_independent_of_the_arguments_is_allowed():
  a = Tensor([1, 2, 3]).realize()
  a += 1            # an assign not yet realized, reading nothing from the arguments
  c = Tensor([2, 2, 2]).contiguous()
  @function
  def f(b: Tensor) -> Tensor: return a + b + c
  assert f(Tensor([10, 20, 30]).realize()).tolist() == [14, 25, 36]

def test_multi_device_inputs_are_explicit():
  @function
  def f(a: Tensor, b: Tensor) -> Tensor: return a + b
  devs = ("PYTHON:0", "PYTHON:1")
  a, b = Tensor([1, 2, 3, 4]).shard(devs, axis=0), Tensor([10, 20, 30, 40]).shard(devs, axis=0)
  assert f(a, b).tolist() == [11, 22, 33, 44]

def test_grad_fxn_is_refused_with_the_fix():
  with pytest.raises(NotImplementedError, match="custom backward"): function(lambda x: x, grad_fxn=lambda g, k: (g,))
