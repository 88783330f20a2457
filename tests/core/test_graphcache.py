"""Graph templates (tinygrad/mixin/graphcache.py): a templated method gives the graph a direct build gives, for every key
its arguments make, and falls back to building directly where a template would be wrong."""
import math
import numpy as np
import pytest
import torch
from tinygrad import Tensor, dtypes
from tinygrad.helpers import Context
from tinygrad.mixin import graphcache

def direct(name):
  return getattr(Tensor, name).__wrapped__   # the method as written, building its graph through Tensor ops

UNARY = ("exp", "tanh", "gelu", "quick_gelu", "erf", "sigmoid", "silu", "swish", "mish", "softplus", "elu", "celu", "selu", "hardswish",
         "sinh", "cosh", "atan", "asinh", "acosh", "atanh", "logsigmoid", "relu", "leaky_relu", "relu6", "hardtanh", "hardsigmoid",
         "softsign", "softmax", "log_softmax", "logsumexp", "mean", "var", "std", "layernorm")

@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("shape", [(1,), (3, 5), (2, 1, 7)])
def test_same_graph_as_direct(name, shape):
  # over a realized tensor, the same nodes; over a lazy one, the same values (a direct build may fold a step the generic
  # graph keeps: a copy `x * 1` a buffer needs and a computed value does not)
  for _ in range(2):   # the first call builds the template, the second copies it
    x = (Tensor.randn(*shape) * 3).realize()
    assert getattr(x, name)().uop is direct(name)(x).uop
    lazy = x * 0.5 - 1
    np.testing.assert_array_equal(getattr(lazy, name)().numpy(), direct(name)(lazy).numpy())

@pytest.mark.parametrize("name,kwargs", [("softmax", {"axis": 0}), ("softmax", {"axis": -1}), ("log_softmax", {"axis": 1}),
                                         ("logsumexp", {"axis": 1, "keepdim": True}), ("layernorm", {"eps": 1e-3}),
                                         ("gelu", {"approximate": "none"}), ("softplus", {"beta": 2, "threshold": 5.0}),
                                         ("elu", {"alpha": 0.5}), ("softmax", {"axis": 1, "dtype": dtypes.float16})])
def test_same_graph_with_arguments(name, kwargs):
  for _ in range(2):
    x = Tensor.randn(4, 6).realize()
    assert getattr(x, name)(**kwargs).uop is direct(name)(x, **kwargs).uop

def test_unary_list_covers_the_templates():
  assert set(UNARY) <= set(graphcache.CACHED)

def test_nn_ops_same_graph():
  x, w, b = Tensor.randn(2, 4, 9, 9).realize(), Tensor.randn(6, 4, 3, 3).realize(), Tensor.randn(6).realize()
  logits, labels = Tensor.randn(5, 7).realize(), Tensor([0, 3, 6, 2, 2]).realize()
  cases = [("conv2d", (x, w, b), {"padding": 1}), ("conv2d", (x, w), {"stride": 2, "dilation": (1, 2)}), ("conv2d", (x, w, None), {}),
           ("conv_transpose2d", (x, w.permute(1, 0, 2, 3)), {"stride": 2}), ("max_pool2d", (x,), {"kernel_size": 3, "stride": 2}),
           ("avg_pool2d", (x,), {"kernel_size": (2, 3), "padding": 1}), ("linear", (logits, Tensor.randn(7, 3), Tensor.randn(3)), {}),
           ("batchnorm", (x, Tensor.randn(4), None, Tensor.randn(4), Tensor.rand(4) + 1), {}),
           ("sparse_categorical_crossentropy", (logits, labels), {"label_smoothing": 0.1}),
           ("cross_entropy", (logits, labels), {"reduction": "sum"}), ("nll_loss", (logits.log_softmax(), labels), {}),
           ("binary_crossentropy_logits", (logits, logits.sigmoid()), {}), ("var", (x,), {"axis": (0, 2), "correction": 0})]
  for name, (t, *rest), kw in cases:
    for _ in range(2): assert getattr(t, name)(*rest, **kw).uop is direct(name)(t, *rest, **kw).uop, name

def test_argument_structure_is_part_of_the_key():
  # matmul packs an operand that is a transposed view (nn.Linear's weight.T) and not a contiguous one of the same shape: a
  # placeholder without the argument's movement ops gave the linear of weight.T the graph of a contiguous weight (ViT's
  # MLP then fused gelu into its down-projection: 23 -> 140 ms a call)
  x, b = Tensor.randn(1, 197, 768).realize(), Tensor.randn(192).realize()
  wt, w = Tensor.randn(192, 768).realize(), Tensor.randn(768, 192).realize()
  for weight in (wt.T, w, wt.T, w, wt.T[:, ::-1], w.flip(0)):
    assert x.linear(weight, b).uop is direct("linear")(x, weight, b).uop

def test_attention_same_graph():
  q, k, v = Tensor.randn(2, 3, 5, 8).realize(), Tensor.randn(2, 3, 7, 8).realize(), Tensor.randn(2, 3, 7, 4).realize()
  m = (Tensor.randn(5, 7) > 0).realize()
  for kw in ({}, {"is_causal": True}, {"attn_mask": m}, {"scale": 0.5}):
    for _ in range(2): assert q.scaled_dot_product_attention(k, v, **kw).uop is direct("scaled_dot_product_attention")(q, k, v, **kw).uop
  # the same tensor as query, key and value: three placeholders, each given it
  for _ in range(2): assert q.scaled_dot_product_attention(q, q).uop is direct("scaled_dot_product_attention")(q, q, q).uop

def test_keys_keep_apart_what_differs():
  x = Tensor(np.linspace(-3, 3, 24, dtype=np.float32).reshape(4, 6))
  xt = torch.tensor(x.numpy())
  # the same shape with other arguments: each its own template (1 and 1.0 are equal dict keys, -0.0 and 0.0 too)
  np.testing.assert_allclose(x.softmax(0).numpy(), torch.softmax(xt, 0).numpy(), rtol=1e-6)
  np.testing.assert_allclose(x.softmax(1).numpy(), torch.softmax(xt, 1).numpy(), rtol=1e-6)
  np.testing.assert_allclose(x.softplus(1).numpy(), torch.nn.functional.softplus(xt, 1).numpy(), rtol=1e-6)
  np.testing.assert_allclose(x.softplus(2.0).numpy(), torch.nn.functional.softplus(xt, 2.0).numpy(), rtol=1e-6)
  assert x.elu(0.0).uop is direct("elu")(x, 0.0).uop and x.elu(-0.0).uop is direct("elu")(x, -0.0).uop
  # another dtype of the same shape
  xh = x.cast(dtypes.float16)
  assert x.tanh().dtype == dtypes.float32 and xh.tanh().dtype == dtypes.float16
  np.testing.assert_allclose(xh.tanh().numpy().astype(np.float32), np.tanh(x.numpy()), atol=2e-3)
  # an int tensor: the float result of its own template
  xi = Tensor([[-2, 0, 3]])
  np.testing.assert_allclose(xi.sigmoid().numpy(), torch.sigmoid(torch.tensor([[-2., 0., 3.]])).numpy(), rtol=1e-6)

def test_views_and_lazy_arguments():
  base = Tensor(np.arange(30, dtype=np.float32).reshape(5, 6) / 10).realize()
  v = base[1:4, ::2]   # a strided view
  for _ in range(2): np.testing.assert_allclose(v.gelu().numpy(), torch.nn.functional.gelu(torch.tensor(v.numpy()), approximate="tanh").numpy(), rtol=1e-5, atol=1e-7)
  lazy = base * 2 - 1
  for _ in range(2): np.testing.assert_allclose(lazy.tanh().numpy(), np.tanh(lazy.numpy()), rtol=2e-6, atol=1e-7)
  c = Tensor.full((3, 4), 0.5)   # a constant: built directly (its graph folds)
  assert c.sigmoid().uop is direct("sigmoid")(c).uop
  np.testing.assert_allclose(c.sigmoid().numpy(), np.full((3, 4), 1 / (1 + math.exp(-0.5)), np.float32), rtol=1e-6)

def test_gradients_through_templates():
  xn = np.random.default_rng(0).standard_normal((3, 5)).astype(np.float32)
  for _ in range(2):
    x = Tensor(xn, requires_grad=True)
    (x.gelu() * x.softmax(-1) + x.layernorm().tanh()).sum().backward()
    xt = torch.tensor(xn, requires_grad=True)
    (torch.nn.functional.gelu(xt, approximate="tanh") * torch.softmax(xt, -1) + torch.tanh(torch.nn.functional.layer_norm(xt, (5,)))).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), xt.grad.numpy(), rtol=1e-4, atol=1e-5)

def test_flags_are_part_of_the_key():
  # a flag the graph reads (MATMUL_PACK: attention's q @ k.T packs k) gives its own template
  q, k = Tensor.randn(1, 1, 32, 64).realize(), Tensor.randn(1, 1, 256, 64).realize()
  sdpa = direct("scaled_dot_product_attention")
  for pack in (1, 0, 1):
    with Context(MATMUL_PACK=pack):
      for _ in range(2): assert q.scaled_dot_product_attention(k, k).uop is sdpa(q, k, k).uop

def test_flag_set_directly_is_part_of_the_key():
  # `FLAG.value = v` (no Context) changes the key too: the flags' tuple is memoized by ContextVar.version
  from tinygrad.helpers import MATMUL_PACK
  q, k = Tensor.randn(1, 1, 32, 64).realize(), Tensor.randn(1, 1, 256, 64).realize()
  sdpa, old = direct("scaled_dot_product_attention"), MATMUL_PACK.value
  try:
    for pack in (1, 0, 1, 0):
      MATMUL_PACK.value = pack
      for _ in range(2): assert q.scaled_dot_product_attention(k, k).uop is sdpa(q, k, k).uop
  finally: MATMUL_PACK.value = old

def test_dropout_in_training_draws_every_call():
  q = Tensor.ones(1, 1, 4, 8)
  with Tensor.train():
    outs = [q.scaled_dot_product_attention(q, q, dropout_p=0.5).numpy() for _ in range(4)]
  assert any(not np.array_equal(outs[0], o) for o in outs[1:]), "dropout reused one random mask"

def test_random_draw_is_never_a_template():
  m = lambda self: self + Tensor.rand(*self.shape)
  f = graphcache.cached_graph(m)
  x = Tensor.zeros(16).contiguous().realize()
  Tensor.manual_seed(5)
  a, b = f(x).numpy(), f(x).numpy()
  assert not np.array_equal(a, b)
  # each call draws once, as the method built directly does (the first call's build is that call's graph)
  Tensor.manual_seed(5)
  np.testing.assert_equal(m(x).numpy(), a)
  np.testing.assert_equal(m(x).numpy(), b)

def test_view_of_argument_is_never_a_template():
  # a method returning a view of its argument returns that view (writes through it reach the argument), never a copy
  f = graphcache.cached_graph(lambda self: self.reshape(2, 3))
  for _ in range(2):
    x = Tensor.zeros(6).contiguous().realize()
    v = f(x)
    v += 1
    np.testing.assert_equal(x.numpy(), np.ones(6, np.float32))

def test_argument_buffer_read_whole_is_never_a_template():
  # a graph that reads its argument's buffer other than through its (reshaped) name would read the placeholder later
  f = graphcache.cached_graph(lambda self: Tensor(self.uop.base if self.uop.base is not self.uop else self.uop) * 2 + self.sum())
  for _ in range(2):
    x = Tensor.arange(6).float().reshape(2, 3).contiguous().realize()
    np.testing.assert_allclose(f(x).numpy(), np.arange(6, dtype=np.float32) * 2 + 15)   # (the base: 1-d)

def test_unhashable_and_symbolic_arguments_build_directly():
  from tinygrad import Variable
  calls = []
  def m(self, w): calls.append(1); return self * len(w)
  f = graphcache.cached_graph(m)
  x = Tensor.ones(3)
  for _ in range(2): np.testing.assert_equal(f(x, object.__new__(type("W", (), {"__len__": lambda s: 2}))).numpy(), [2, 2, 2])
  assert len(calls) == 2
  n = Variable("n", 1, 8).bind(3)
  y = Tensor.ones(8)[:n]
  assert y.softmax().shape == (n,)

@pytest.mark.parametrize("name", ["exp", "softmax", "gelu"])
def test_template_hands_on_the_shapes_and_devices_of_this_call(name):
  # a template's nodes give each new graph their shapes and devices: each must be the one this call's graph has, found
  # again from scratch (a node's own rule over its sources'), for every key (other shapes, views, dtypes, devices)
  from tinygrad.uop.ops import _shape, _device
  for x in (Tensor.rand(4, 16).realize(), Tensor.rand(3, 5).realize(), Tensor.rand(16, 4).realize().T, Tensor.rand(2, 7, 3).realize()[1:],
            Tensor.rand(4, 6, dtype=dtypes.float16).realize(), Tensor.rand(4, 16, device="PYTHON").realize()):
    for _ in range(2):   # the first call builds the template, the second applies it
      out = getattr(x, name)().uop
      nodes = list(out.toposort(gate=lambda u: "_shape" in u.__dict__ or "_device" in u.__dict__))
      for n in nodes:
        if "_shape" in n.__dict__: assert n.__dict__["_shape"] == _shape(n), (x.shape, n.op)
        if "_device" in n.__dict__: assert n.__dict__["_device"] == _device(n), (x.device, n.op)
      assert out.shape == x.shape and out.device == x.device
