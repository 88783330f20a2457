"""nn layers against torch (the reference public tinygrad's own tests use), forward and backward: InstanceNorm, LSTMCell."""
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st, HealthCheck
from tinygrad import Tensor, nn
torch = pytest.importorskip("torch", reason="torch (CPU) is the test reference: pip install torch")

HS = settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def rnd(*shape, seed=0): return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
def close(a, b, atol=1e-5, rtol=1e-4): np.testing.assert_allclose(a, b, atol=atol, rtol=rtol)

@HS
@given(n=st.integers(1, 3), c=st.integers(1, 4), hw=st.sampled_from([(2,), (5,), (3, 4), (2, 1, 3)]), affine=st.booleans())
def test_instancenorm_like_torch(n, c, hw, affine):
  x, w, b = rnd(n, c, *hw), rnd(c, seed=1), rnd(c, seed=2)
  tn = {1: torch.nn.InstanceNorm1d, 2: torch.nn.InstanceNorm2d, 3: torch.nn.InstanceNorm3d}[len(hw)](c, affine=affine)
  m = nn.InstanceNorm(c, affine=affine)
  if affine:
    with torch.no_grad(): tn.weight[:], tn.bias[:] = torch.tensor(w), torch.tensor(b)
    m.weight, m.bias = Tensor(w, requires_grad=True), Tensor(b, requires_grad=True)
  tx, gx = torch.tensor(x, requires_grad=True), Tensor(x, requires_grad=True)
  ty, y = tn(tx), m(gx)
  up = rnd(*ty.shape, seed=3)
  ty.backward(torch.tensor(up))
  (y * Tensor(up)).sum().backward()   # before reading y: realizing first loses the graph today (the correctness issue's)
  close(y.numpy(), ty.detach().numpy(), atol=1e-4)
  close(gx.grad.numpy(), tx.grad.numpy(), atol=1e-3, rtol=1e-3)
  if affine:
    close(m.weight.grad.numpy(), tn.weight.grad.numpy(), atol=1e-4)
    close(m.bias.grad.numpy(), tn.bias.grad.numpy(), atol=1e-4)

def test_instancenorm_checks_channels():
  with pytest.raises(ValueError, match="C=3"): nn.InstanceNorm(3)(Tensor.ones(2, 4, 5))

@HS
@given(bs=st.integers(0, 3), fin=st.integers(1, 5), hid=st.integers(1, 4), bias=st.booleans(), state=st.booleans())
def test_lstmcell_like_torch(bs, fin, hid, bias, state):
  # bs 0: torch's unbatched form, x (fin,) and h, c (hid,); the zero state was (fin, hid) and h' came out (fin, hid), silently
  b = (bs,) if bs else ()
  tc = torch.nn.LSTMCell(fin, hid, bias=bias)
  m = nn.LSTMCell(fin, hid, bias=bias)
  names = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if bias else [])
  for k in names: setattr(m, k, Tensor(getattr(tc, k).detach().numpy().copy(), requires_grad=True))
  x, h0, c0 = rnd(*b, fin), rnd(*b, hid, seed=1), rnd(*b, hid, seed=2)
  tx = torch.tensor(x, requires_grad=True)
  gx = Tensor(x, requires_grad=True)
  th, tcc = tc(tx, (torch.tensor(h0), torch.tensor(c0))) if state else tc(tx)
  h, c = m(gx, (Tensor(h0), Tensor(c0))) if state else m(gx)
  uh, uc = rnd(*b, hid, seed=4), rnd(*b, hid, seed=5)
  ((th * torch.tensor(uh)).sum() + (tcc * torch.tensor(uc)).sum()).backward()
  ((h * Tensor(uh)).sum() + (c * Tensor(uc)).sum()).backward()
  close(h.numpy(), th.detach().numpy())
  close(c.numpy(), tcc.detach().numpy())
  close(gx.grad.numpy(), tx.grad.numpy(), atol=1e-4)
  for k in names: close(getattr(m, k).grad.numpy(), getattr(tc, k).grad.numpy(), atol=1e-4)

def test_lstmcell_init_range():
  m = nn.LSTMCell(3, 16)
  assert m.weight_ih.shape == (64, 3) and m.weight_hh.shape == (64, 16) and m.bias_ih.shape == (64,)
  assert np.abs(m.weight_hh.numpy()).max() <= 0.25

@pytest.mark.parametrize("h_shape,c_shape", [((1, 4), (3, 4)), ((3, 4), (1, 4)), ((3, 1), (3, 4)), ((4,), (4,))])
def test_lstmcell_state_of_another_shape_raises(h_shape, c_shape):
  # a state of one row broadcast into a batch of three (each row got the same h), an (N, 1) one into every hidden unit:
  # torch raises, so does this
  m = nn.LSTMCell(2, 4)
  with pytest.raises(ValueError, match=r"LSTMCell: hc\[\d\] has shape"): m(Tensor.ones(3, 2), (Tensor.zeros(*h_shape), Tensor.zeros(*c_shape)))

@pytest.mark.parametrize("make, x_shape", [(lambda: nn.Linear(0, 3), (2, 0)), (lambda: nn.Conv2d(0, 3, 3), (1, 0, 5, 5)),
                                           (lambda: nn.ConvTranspose2d(0, 3, 3), (1, 0, 4, 4)), (lambda: nn.ConvTranspose2d(3, 0, 3), (1, 3, 4, 4)),
                                           (lambda: nn.LSTMCell(3, 0), (2, 3))])
def test_layers_with_no_inputs_are_their_bias_like_torch(make, x_shape):
  # torch's init bound for a fan-in of 0 is 0, a zero bias (1/sqrt(0) was a ZeroDivisionError at construction); an input
  # of no channels gives the bias (ConvTranspose2d's fan-in is its out channels': a bias drawn as usual)
  m = make()
  out = m(Tensor.ones(*x_shape))
  if isinstance(out, tuple): assert out[0].shape == out[1].shape == (2, 0)
  else:
    b = m.bias.numpy().reshape(1, -1, *[1] * (len(x_shape) - 2))
    np.testing.assert_array_equal(out.numpy(), np.broadcast_to(b, out.shape))
    if "Transpose" not in type(m).__name__: assert not b.any()
