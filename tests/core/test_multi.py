"""Multi-device tensors (Tensor.shard, tinygrad/multi.py): every op on tensors sharded over two instances of one device
(CPU:0,CPU:1 and PYTHON:0,PYTHON:1), forward and backward, against torch; uneven splits; all-reduce (naive and ring);
data-parallel SGD and Adam equal to one device; state dict I/O; the errors."""
import os, subprocess, sys, pathlib
import numpy as np
import pytest
from tinygrad import Tensor, Device, nn, Context
from tinygrad.uop import Ops
from tinygrad.nn.state import get_parameters, get_state_dict, load_state_dict, safe_save, safe_load

torch = pytest.importorskip("torch", reason="torch is the reference for the sharded ops' values and gradients: pip install torch")

PAIRS = [("CPU:0", "CPU:1"), ("PYTHON:0", "PYTHON:1")]

@pytest.fixture(params=PAIRS, ids=["CPU", "PYTHON"])
def devs(request): return request.param

def _rand(*shape, seed=0): return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)

def test_device_instances_are_distinct():
  for a, b in PAIRS:
    assert Device[a] is not Device[b] and Device[a].device != Device[b].device

def test_shard_layout_and_canonical_devices(devs):
  x = Tensor(_rand(4, 6)).shard(devs, 1)
  assert x.device == tuple(Device.canonicalize(d) for d in devs) and x.shape == (4, 6)
  assert [s.shape for s in x.uop.src] == [(4, 3), (4, 3)] and x.uop.arg == 1
  assert [s.device for s in x.uop.src] == list(x.device)
  r = Tensor(_rand(4, 6)).shard(devs)
  assert r.uop.arg is None and [s.shape for s in r.uop.src] == [(4, 6), (4, 6)]

def test_one_device_in_a_tuple_is_that_device(devs):
  # public tinygrad's canonicalize_device: (d,) is d, so a tensor made with device=(d,) meets plain tensors on d (this
  # raised "tensors on different devices: ('CPU:0',) and CPU:0"), and shard((d,)) / shard_((d,)) move to d
  d, a = Device.canonicalize(devs[0]), _rand(2, 3)
  t = Tensor(a, device=(d,))
  assert t.device == d and t.uop.op is not Ops.MULTI
  np.testing.assert_allclose((t + Tensor(a, device=d)).numpy(), a * 2)
  assert Tensor.empty(2, device=(d,)).device == d and Tensor.zeros(2, device=[d]).device == d
  s = Tensor(a).shard((d,), axis=0)
  assert s.device == d and s.uop.op is not Ops.MULTI
  np.testing.assert_array_equal(s.numpy(), a)
  assert Tensor(a).shard_((d,), axis=1).device == d

def test_uneven_split_gives_the_remainder_to_the_last_shard(devs):
  a = _rand(5, 3)
  x = Tensor(a).shard(devs, 0)
  assert [s.shape[0] for s in x.uop.src] == [3, 2]
  np.testing.assert_array_equal(x.numpy(), a)
  np.testing.assert_allclose((x * 2).sum(0).numpy(), (a * 2).sum(0), rtol=1e-6)
  with pytest.raises(ValueError, match="leaves a shard empty"): Tensor(_rand(1, 3)).shard(devs, 0)

def test_realize_numpy_tolist_to(devs):
  a = _rand(4, 2)
  for axis in (None, 0, 1):
    x = Tensor(a).shard(devs, axis).realize()
    assert x._is_realized()
    np.testing.assert_array_equal(x.numpy(), a)
    assert x.tolist() == a.tolist()
    g = x.to(devs[1])
    assert g.device == Device.canonicalize(devs[1])
    np.testing.assert_array_equal(g.numpy(), a)
  x = Tensor(a).shard(devs, 0)
  np.testing.assert_array_equal(x.to(devs[0]).shard(devs, 1).numpy(), a)   # resharded onto another axis, through one device
  with pytest.raises(RuntimeError, match="can't shard a multi-device tensor"): x.shard(devs, 1)   # as public tinygrad
  assert x.shard(devs, 0) is x and x.shard_like(x) is x
  np.testing.assert_array_equal(Tensor(a).to(devs).numpy(), a)  # to() a tuple replicates
  c = x.clone().realize()
  assert c.uop.arg == 0 and all(cs is not xs for cs, xs in zip(c.uop.src, x.uop.src))

def _ops(devs):
  # (name, axis of the sharded input, op on tinygrad, op on torch); each op runs on x (4, 6) and, where it takes one, a second operand
  w = _rand(6, 5, seed=1)
  b = _rand(4, 6, seed=2)
  return [
    ("add_same_sharding", 0, lambda x: x + Tensor(b).shard(devs, 0), lambda x: x + torch.tensor(b)),
    ("mul_replicated", 0, lambda x: x * Tensor(b).shard(devs), lambda x: x * torch.tensor(b)),
    ("sub_other_axis", 0, lambda x: x - Tensor(b).shard(devs, 1), lambda x: x - torch.tensor(b)),
    ("scalar_and_unary", 1, lambda x: (x * 3 + 1).exp().log().relu(), lambda x: (x * 3 + 1).exp().log().relu()),
    ("where_cmp", 1, lambda x: (x > 0).where(x, x * 0.5), lambda x: torch.where(x > 0, x, x * 0.5)),
    ("reshape_keeps_axis", 0, lambda x: x.reshape(4, 2, 3) * 2, lambda x: x.reshape(4, 2, 3) * 2),
    ("permute", 0, lambda x: x.permute(1, 0) + 1, lambda x: x.permute(1, 0) + 1),
    ("expand", 0, lambda x: x.reshape(4, 1, 6).expand(4, 3, 6) * 2, lambda x: x.reshape(4, 1, 6).expand(4, 3, 6) * 2),
    ("pad_other_axis", 0, lambda x: x.pad(((0, 0), (1, 2))), lambda x: torch.nn.functional.pad(x, (1, 2, 0, 0))),
    ("pad_sharded_axis", 0, lambda x: x.pad(((1, 2), (0, 0))), lambda x: torch.nn.functional.pad(x, (0, 0, 1, 2))),
    ("shrink_sharded_axis", 0, lambda x: x[1:3], lambda x: x[1:3]),
    ("flip_sharded_axis", 0, lambda x: x.flip(0) * 2, lambda x: x.flip(0) * 2),
    ("index_int_and_step", 1, lambda x: x[2, ::2], lambda x: x[2, ::2]),
    ("gather", 0, lambda x: x.gather(1, Tensor([[0, 5], [1, 1], [2, 4], [3, 0]]).shard(devs, 0)),
     lambda x: x.gather(1, torch.tensor([[0, 5], [1, 1], [2, 4], [3, 0]]))),
    ("sum_sharded_axis", 0, lambda x: x.sum(0), lambda x: x.sum(0)),
    ("sum_other_axis", 0, lambda x: x.sum(1), lambda x: x.sum(1)),
    ("sum_all", 1, lambda x: x.sum(), lambda x: x.sum()),
    ("max_sharded_axis", 1, lambda x: x.max(1), lambda x: x.amax(1)),
    ("mean_keepdim", 0, lambda x: x.mean(0, keepdim=True), lambda x: x.mean(0, keepdim=True)),
    ("softmax_sharded_axis", 1, lambda x: x.softmax(1), lambda x: x.softmax(1)),
    ("matmul_lhs_rows", 0, lambda x: x @ Tensor(w).shard(devs), lambda x: x @ torch.tensor(w)),
    ("matmul_contracted_axis", 1, lambda x: x @ Tensor(w).shard(devs, 0), lambda x: x @ torch.tensor(w)),
    ("matmul_rhs_sharded", None, lambda x: x @ Tensor(w).shard(devs, 1), lambda x: x @ torch.tensor(w)),
    ("cat_sharded_axis", 0, lambda x: Tensor.cat(x, x * 2, dim=0), lambda x: torch.cat([x, x * 2], 0)),
    ("cat_other_axis", 0, lambda x: Tensor.cat(x, x * 2, dim=1), lambda x: torch.cat([x, x * 2], 1)),
    ("stack", 1, lambda x: Tensor.stack(x, x + 1, dim=0), lambda x: torch.stack([x, x + 1], 0)),
  ]

@pytest.mark.parametrize("i", range(26), ids=[o[0] for o in _ops(PAIRS[0])])
def test_op_forward_and_backward(devs, i):
  name, axis, f, ft = _ops(devs)[i]
  a = _rand(4, 6, seed=3)
  x = Tensor(a, requires_grad=True)
  xs = x.shard(devs, axis) if axis is not None else x.shard(devs)
  out = f(xs)
  assert isinstance(out.device, tuple), f"{name}: the result left the devices ({out.device})"
  tx = torch.tensor(a, requires_grad=True)
  tout = ft(tx)
  np.testing.assert_allclose(out.numpy(), tout.detach().numpy(), rtol=1e-5, atol=1e-5, err_msg=name)
  c = _rand(*tout.shape, seed=4)
  (out * Tensor(c).shard(devs)).sum().backward()
  (tout * torch.tensor(c)).sum().backward()
  np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=1e-5, atol=1e-5, err_msg=f"{name} (gradient)")

def test_sharded_and_replicated_params_get_full_gradients(devs):
  a, w = _rand(6, 4), _rand(4, 3, seed=1)
  X = Tensor(a).shard(devs, 0)
  W = Tensor(w).shard(devs)   # replicated: each device's part of the gradient is all-reduced
  W.requires_grad = True
  V = Tensor(w.T.copy()).shard(devs, 0)   # sharded on its rows
  V.requires_grad = True
  ((X @ W).relu() @ V).sum().backward()
  ta, tw, tv = torch.tensor(a), torch.tensor(w, requires_grad=True), torch.tensor(w.T.copy(), requires_grad=True)
  ((ta @ tw).relu() @ tv).sum().backward()
  assert W.grad.uop.arg is None and V.grad.uop.arg == 0
  np.testing.assert_allclose(W.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(V.grad.numpy(), tv.grad.numpy(), rtol=1e-5, atol=1e-5)
  for s in W.grad.realize().uop.src[1:]: np.testing.assert_array_equal(Tensor(s).numpy(), Tensor(W.grad.uop.src[0]).numpy())
  gw, gv = ((X @ W).relu() @ V).sum().gradient(W, V)   # Tensor.gradient: the same, as new tensors
  np.testing.assert_allclose(gw.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(gv.numpy(), tv.grad.numpy(), rtol=1e-5, atol=1e-5)

def test_assign_into_sharded_tensor(devs):
  a, b = _rand(4, 3), _rand(4, 3, seed=1)
  x = Tensor(a).shard(devs, 0).realize()
  bufs = list(x.uop.src)
  x.assign(Tensor(b).shard(devs, 0)).realize()
  assert list(x.uop.src) == bufs   # written in place, shard by shard
  np.testing.assert_array_equal(x.numpy(), b)
  x += 1
  x.assign(x * 2)   # a second pending assign before realizing
  np.testing.assert_allclose(x.numpy(), (b + 1) * 2, rtol=1e-6)
  x.assign(Tensor(a).shard(devs)).realize()   # a replicated value: each shard takes its part
  np.testing.assert_array_equal(x.numpy(), a)
  x[:, 1:3].assign(Tensor.full((4, 2), -1.0).shard(devs, 0)).realize()   # a view that keeps each shard on its device
  want = a.copy()
  want[:, 1:3] = -1
  np.testing.assert_array_equal(x.numpy(), want)
  x[1:3, 0] = 7.0   # setitem, also across the shards' boundary
  want[1:3, 0] = 7
  np.testing.assert_array_equal(x.numpy(), want)
  x[1:3].assign(Tensor.zeros(2, 3).shard(devs, 0))   # a view across the shards' boundary: written through the whole tensor
  want[1:3] = 0
  np.testing.assert_array_equal(x.numpy(), want)

def test_all_reduce_ring_equals_naive_on_three_devices():
  devs = ("CPU:0", "CPU:1", "CPU:2")
  a = _rand(7, 5)
  for ring, a2a in ((0, 0), (2, 0), (0, 2)):
    with Context(RING=ring, ALL2ALL=a2a):
      s = Tensor(a).shard(devs, 0).sum(0).realize()
    assert s.uop.arg is None
    np.testing.assert_allclose(s.numpy(), a.sum(0), rtol=1e-5, atol=1e-6)
    parts = [Tensor(u).numpy() for u in s.uop.src]
    for p in parts[1:]: np.testing.assert_array_equal(p, parts[0])   # every replica bit for bit the same
  with Context(RING=2): np.testing.assert_array_equal(Tensor(a).shard(devs, 1).max(1).numpy(), a.max(1))
  # a partial of 4 elements in 3 chunks of ceil(4/3) = 2 left the last chunk empty: shard_bounds' "cannot split an axis of
  # size 4 over 3 devices" for a sum the user sharded on another axis; too small to chunk, it is summed naively
  for ring, a2a in ((2, 0), (0, 2)):
    with Context(RING=ring, ALL2ALL=a2a):
      np.testing.assert_allclose(Tensor(a[:, :4]).shard(devs, 0).sum(0).numpy(), a[:, :4].sum(0), rtol=1e-5, atol=1e-6)

def test_gathering_shards_keeps_negative_zero_and_nan_bits(devs):
  # the pieces of a sharded tensor were padded into place and added: an element -0.0 became 0.0 (-0.0 + the other
  # pieces' 0 padding) in .numpy(), cat, pad and a ring all-reduce's gathered chunks
  bits = np.array([0x80000000, 0x3F800000, 0x7FC00001, 0xFFC12345, 0x80000000, 0x40000000], np.uint32).reshape(3, 2)
  a = bits.view(np.float32)
  for d in (devs, ("CPU:0", "CPU:1", "CPU:2")):
    s = Tensor(a).shard(d, 0)
    for name, got, want in (("numpy", s, a), ("cat0", s.cat(s, dim=0), np.concatenate([a, a], 0)), ("cat1", s.cat(s, dim=1), np.concatenate([a, a], 1)),
                            ("pad", s.pad(((0, 0), (0, 1)), value=-0.0), np.pad(a, ((0, 0), (0, 1)), constant_values=-0.0))):
      np.testing.assert_array_equal(got.numpy().view(np.uint32), want.view(np.uint32), err_msg=f"{d} {name}")
  z = np.full((3, 6), -0.0, np.float32)
  with Context(RING=2):
    got = (Tensor(z).shard(("CPU:0", "CPU:1", "CPU:2"), 0) * 1).sum(0).numpy()
  with Context(RING=0):
    naive = (Tensor(z).shard(("CPU:0", "CPU:1", "CPU:2"), 0) * 1).sum(0).numpy()
  np.testing.assert_array_equal(np.signbit(got), np.signbit(naive))   # (the ring's chunks are placed, as the naive sum's whole)

def test_a_sum_across_shards_starts_from_positive_zero(devs):
  # each device's sum over its one row was no reduce (it kept -0.0), and -0.0 + -0.0 across devices stayed -0.0: torch's 0.0
  z = np.full((2, 3), -0.0, np.float32)
  for ring in (0, 2):
    with Context(RING=ring):
      assert not np.signbit(Tensor(z).shard(devs, 0).sum(0).numpy()).any(), ring
      assert not np.signbit(Tensor(z).shard(devs, 0).sum().numpy()), ring
  assert not np.signbit(Tensor(z[:, :1]).shard(devs, 0).sum(1).numpy()).any()

def test_picks_across_shards_keep_negative_zero(devs):
  # a gather/index/masked_select/nearest interpolate over a sharded axis added each shard's pick: the 0.0 of the shards that
  # did not hold the element turned a picked -0.0 into 0.0 (one device keeps it, as torch); the gradient reaches that shard
  a = np.array([[-0.0, 1.0, -0.0, 2.0], [3.0, -0.0, -0.0, -0.0], [-0.0, 5.0, 6.0, -0.0]], np.float32)
  m = np.array([[1, 0, 1, 1], [0, 1, 1, 0], [1, 0, 0, 1]], bool)
  ta = torch.from_numpy(a)
  for ax in (0, 1):
    x = Tensor(a).shard(devs, ax)
    cases = {"nearest": (x.reshape(1, 1, 3, 4).interpolate((5, 7), mode="nearest"), F_interp(ta.reshape(1, 1, 3, 4), (5, 7))),
             "gather": (x.gather(ax, Tensor([[2, 0, 1, 2]] if ax == 0 else [[3], [2], [0]]).shard(devs)),
                        ta.gather(ax, torch.tensor([[2, 0, 1, 2]] if ax == 0 else [[3], [2], [0]]))),
             "index": (x[Tensor([2, 1, 0]).shard(devs)], ta[torch.tensor([2, 1, 0])])}
    # (masked_select flattens: sharded on axis 0 only)
    if ax == 0: cases["masked_select"] = (x.masked_select(Tensor(m).shard(devs, ax)), ta.masked_select(torch.from_numpy(m)))
    for name, (got, want) in cases.items():
      np.testing.assert_array_equal(got.numpy().view(np.uint32), want.numpy().view(np.uint32), err_msg=f"{name} axis {ax}")
  w, tw = Tensor(a, requires_grad=True), ta.clone().requires_grad_()
  idx, k = [[2, 0, 1, 2], [2, 2, 2, 2]], [[1.0, 2.0, 3.0, 4.0]] * 2
  (w.shard(devs, 0).gather(0, Tensor(idx).shard(devs)) * Tensor(k).shard(devs)).sum().backward()
  (tw.gather(0, torch.tensor(idx)) * torch.tensor(k)).sum().backward()
  np.testing.assert_array_equal(w.grad.numpy(), tw.grad.numpy())

def F_interp(t, size): return torch.nn.functional.interpolate(t, size, mode="nearest")

@pytest.mark.parametrize("n_dev", [2, 3])
def test_a_reader_computed_before_an_update_is_its_value_in_other_graphs(n_dev):
  # n is computed before x's update (it read x's old value); s holds n's shards in its graph and computed them again,
  # after the write: s was [0, 0] for [1, 2]. Found by probe29's in-place fuzz
  devs = tuple(f"CPU:{i}" for i in range(n_dev))
  for axis, vals in ((None, [1.0, 2.0]), (0, [1.0, 2.0, 3.0, 4.0, 5.0, 6.0])):
    x = Tensor(vals).shard(devs, axis).realize()
    n = -x
    x += x
    s = x * 1 + n
    np.testing.assert_array_equal(s.numpy(), vals)
    np.testing.assert_array_equal(n.numpy(), [-v for v in vals])
  # a write through a strided view across the shards, then an update that reads a reader of the old values
  x = Tensor([-3.0, -2.0, -1.0]).shard(devs[:2], axis=0).realize()
  n = -x
  v2 = x[0:3:2]
  v2[0::2] = -1
  n2 = -v2
  x -= n
  np.testing.assert_array_equal(x.numpy(), [-4.0, -4.0, -2.0])
  np.testing.assert_array_equal(n2.numpy(), [1.0, 1.0])

def test_a_view_of_a_realized_view_follows_it_after_its_update(devs):
  # e1, a view of a lazy sharded tensor, realized into a copy of its own, kept the op that made it from e0, and the views
  # made from e1 replayed it too: e4 = e1.flip(0) followed e1's update as flip(flip(e1)), [-3, -2] for [-2, -3]. Found by
  # probe29's in-place fuzz on three devices
  e0 = Tensor([-3.0, -2.0]).shard(devs) + 0
  e1 = e0.flip(0)
  e1.realize()
  e4 = e1.flip(0)
  e1.assign(e1[1:].cat(e1[:1]))
  assert e1.tolist() == [-3.0, -2.0] and e4.tolist() == [-2.0, -3.0] and e0.tolist() == [-3.0, -2.0]

def test_errors_name_the_sharding(devs):
  x = Tensor(_rand(4, 2)).shard(devs, 0)
  with pytest.raises(ValueError, match="different devices"): (x + Tensor(_rand(4, 2))).realize()
  with pytest.raises(ValueError, match=r"different devices.*shard_like"): x + Tensor(_rand(4, 2)).shard(("CPU:2", "CPU:3"), 0)
  from tinygrad.multi import lower
  with pytest.raises(ValueError, match="sharded over different devices"): lower(Ops.ADD, x.dtype, (x.uop, Tensor(_rand(4, 2)).shard(("CPU:2", "CPU:3"), 0).uop), None, None)
  with pytest.raises(ValueError, match="distinct devices"): Tensor(_rand(4, 2)).shard((devs[0], devs[0]))
  from tinygrad.uop.ops import UOp
  with pytest.raises(NotImplementedError, match=r"Ops.KERNEL is not supported on a tensor sharded over .* on axis 0"): UOp(Ops.KERNEL, src=(x.uop,))
  # the diagonal of a plane sharded on its column axis steps across the shards: named as diagonal's (it was a reshape's
  # error, a reshape the program never called); sharded on its row axis, or read with the dims swapped, it is a view
  a = _rand(4, 4)
  with pytest.raises(RuntimeError, match="diagonal: this tensor is sharded .* on axis 1, the diagonal's dim2"): Tensor(a).shard(devs, 1).diagonal()
  np.testing.assert_array_equal(Tensor(a).shard(devs, 1).diagonal(dim1=1, dim2=0).numpy(), a.diagonal())
  np.testing.assert_array_equal(Tensor(a).shard(devs, 0).diagonal().numpy(), a.diagonal())

class _MLP:
  def __init__(self):
    self.l1, self.l2 = nn.Linear(8, 16), nn.Linear(16, 4)
  def __call__(self, x: Tensor) -> Tensor: return self.l2(self.l1(x).relu())

def data_parallel_weights(opt_cls, devs, steps=5):
  """The MLP's weights after `steps` steps of `opt_cls` on one device (devs None) or with the batch sharded over devs."""
  Tensor.manual_seed(0)
  m = _MLP()
  if devs:
    for p in get_parameters(m): p.shard_(devs)
  opt = opt_cls(get_parameters(m), lr=0.01)
  rng = np.random.default_rng(0)
  with Tensor.train():
    for _ in range(steps):
      x, y = Tensor(rng.standard_normal((6, 8)).astype(np.float32)), Tensor(rng.integers(0, 4, 6))
      if devs: x, y = x.shard(devs, 0), y.shard(devs, 0)
      opt.zero_grad()
      m(x).sparse_categorical_crossentropy(y).backward()
      opt.step()
  return [p.numpy() for p in get_parameters(m)]

@pytest.mark.parametrize("opt", ["SGD", "Adam"])
def test_data_parallel_training_equals_one_device(devs, opt):
  cls = getattr(nn.optim, opt)
  one, two = data_parallel_weights(cls, None), data_parallel_weights(cls, devs)
  for a, b in zip(one, two): np.testing.assert_allclose(b, a, atol=1e-5, rtol=0)

def test_data_parallel_training_on_the_nv_mocks_two_gpus():
  pytest.importorskip("tinygrad_nv", reason="the NV plugin (pip install ./plugins/tinygrad_nv) runs its mock driver with NV_MOCK=1")
  code = ("import sys; sys.path.insert(0, sys.argv[1]); import numpy as np; from tinygrad import nn; from test_multi import data_parallel_weights as w\n"
          "for o in (nn.optim.SGD, nn.optim.Adam):\n"
          "  for a, b in zip(w(o, None), w(o, ('NV:0', 'NV:1'))): np.testing.assert_allclose(b, a, atol=1e-5, rtol=0)\n"
          "print('ok')")
  env = {**os.environ, "NV_MOCK": "1"}
  r = subprocess.run([sys.executable, "-c", code, str(pathlib.Path(__file__).parent)], env=env, capture_output=True, text=True, timeout=600)
  assert r.returncode == 0 and "ok" in r.stdout, r.stdout + r.stderr

def test_state_dict_save_gathers_and_load_keeps_sharding(devs, tmp_path):
  Tensor.manual_seed(1)
  m = _MLP()
  ref = {k: v.numpy() for k, v in get_state_dict(m).items()}
  m.l1.weight.shard_(devs, 0)
  m.l2.weight.shard_(devs)
  safe_save(get_state_dict(m), str(tmp_path / "m.safetensors"))
  loaded = safe_load(str(tmp_path / "m.safetensors"))
  for k, v in ref.items(): np.testing.assert_array_equal(loaded[k].numpy(), v)
  m2 = _MLP()
  m2.l1.weight.shard_(devs, 0)
  load_state_dict(m2, loaded)
  assert m2.l1.weight.uop.op is Ops.MULTI and m2.l1.weight.uop.arg == 0
  for k, v in get_state_dict(m2).items(): np.testing.assert_array_equal(v.numpy(), ref[k])

def test_peer_copy_hook_carries_the_copies_when_the_allocator_has_one(monkeypatch):
  # the optional plugin hook (docs/plugins.md, section 9): both ends of one allocator class with `_transfer` -> it is called
  alloc_cls = type(Device["CPU:1"].allocator)
  calls: list[int] = []
  def _transfer(self, dest, src, nbytes, src_dev=None, dest_dev=None):
    calls.append(nbytes)
    dest_dev.copyin(dest, src_dev._as_buffer(src)[:nbytes])
  a = _rand(4, 3)
  host = Tensor(a).shard(("CPU:0", "CPU:1"), 0).sum(0).numpy()   # without the hook: through the host
  assert not calls
  monkeypatch.setattr(alloc_cls, "_transfer", _transfer, raising=False)
  np.testing.assert_array_equal(Tensor(a).shard(("CPU:0", "CPU:1"), 0).sum(0).numpy(), host)
  assert calls and all(n > 0 for n in calls)

def test_tinyjit_replays_with_sharded_inputs():
  from tinygrad import TinyJit
  devs = ("CPU:0", "CPU:1")
  w = _rand(4, 3, seed=1)
  W = Tensor(w).shard(devs).realize()
  f = TinyJit(lambda x: (x @ W).sum(0).realize())
  for i in range(4):
    a = _rand(6, 4, seed=10 + i)
    np.testing.assert_allclose(f(Tensor(a).shard(devs, 0).realize()).numpy(), (a @ w).sum(0), rtol=1e-5, atol=1e-5)
  assert f.cnt == 4 and f.steps
  # the message names the layouts: it read "captured with inputs [(6, 4) dtypes.float ('CPU', 'CPU:1')] but called with
  # [(6, 4) dtypes.float ('CPU', 'CPU:1')]", the two the same
  with pytest.raises(Exception, match=r"captured with inputs .*sharded on axis 0 .* called with .*sharded on axis 1"):
    f(Tensor(_rand(6, 4)).shard(devs, 1).realize())

@pytest.mark.parametrize("how", ["assign", "iadd", "setitem"])
@pytest.mark.parametrize("axis", [0, None], ids=["sharded", "replicated"])
def test_tinyjit_replays_an_unrealized_assign_into_sharded_state(axis, how):
  # the function leaves its write into the state pending: TinyJit realizes a call's pending assigns at its end, but one
  # into a multi-device tensor (an ASSIGN per shard) was never registered as pending, so the capture left it out and every
  # replay kept the state the capture call wrote
  from tinygrad import TinyJit
  devs = ("CPU:0", "CPU:1")
  state = Tensor.zeros(4, 2).contiguous().shard(devs, axis).realize()
  want = np.zeros((4, 2), np.float32)
  @TinyJit
  def f(x):
    if how == "assign": state.assign(x * 2 - 1)
    elif how == "iadd":
      s = state
      s += x
    else: state[:, 1:] = x[:, :1]
    return x.sum()
  for i in range(4):
    a = _rand(4, 2, seed=20 + i)
    f(Tensor(a).shard(devs, axis).realize())
    if how == "assign": want = a * 2 - 1
    elif how == "iadd": want += a
    else: want[:, 1:] = a[:, :1]
    np.testing.assert_allclose(state.numpy(), want, rtol=1e-6, err_msg=f"call {i}")

@pytest.mark.parametrize("of", ["input", "computed"])
def test_tinyjit_replays_a_returned_strided_view_of_a_replicated_tensor_after_it_was_read(of):
  # out.numpy() computed the view's first shard into a buffer on the way and handed that buffer to the view itself (the
  # rule that lets live graphs reuse a realize's intermediates missed that the reused node was the shard, a reshape, and
  # so that a view held it): the capture's returned view then showed that call's values in every replay
  from tinygrad import TinyJit
  devs = ("CPU:0", "CPU:1")
  @TinyJit
  def f(x):
    v = (x if of == "input" else (x * 2).realize())[::2]
    return v.realize()
  for i in range(4):
    a = _rand(5, seed=30 + i)
    np.testing.assert_allclose(f(Tensor(a).shard(devs).realize()).numpy(), (a if of == "input" else a * 2)[::2], rtol=1e-6, err_msg=f"call {i}")

def test_tinyjit_refuses_a_write_through_an_input_view_across_shards():
  # x = big[2:] of a tensor split on that axis is copies of its shards, and writing it writes big: the capture wrote the
  # capture call's big, and every replay left the new big (and the returned x) as they were
  from tinygrad import TinyJit
  from tinygrad.engine.jit import JitError
  devs = ("CPU:0", "CPU:1", "CPU:2")
  @TinyJit
  def f(x):
    x.assign(x * 2 - 1)
    return x
  a = _rand(5, seed=40)
  big = Tensor(a).shard(devs, 0).realize()
  f(big[2:])
  np.testing.assert_allclose(big.numpy(), np.concatenate([a[:2], a[2:] * 2 - 1]), rtol=1e-6)
  with pytest.raises(JitError, match="a view across the shards"): f(Tensor(a).shard(devs, 0).realize()[2:])
  # (written and not returned: the first call raised "jit input is not realized into a buffer", the view being remade lazily
  # from its base)
  h = TinyJit(lambda x, y: x.assign(y * 2).sum().realize())
  big = Tensor(a).shard(devs, 0).realize()
  h(big[2:], Tensor(a[:3]).shard(devs).realize())
  np.testing.assert_allclose(big.numpy(), np.concatenate([a[:2], a[:3] * 2]), rtol=1e-6)
  with pytest.raises(JitError, match="a view across the shards"): h(Tensor(a).shard(devs, 0).realize()[2:], Tensor(a[:3]).shard(devs).realize())
  g = TinyJit(lambda x: (x * 2).realize())   # reading such a view replays
  for i in range(4):
    b = _rand(5, seed=41 + i)
    np.testing.assert_allclose(g(Tensor(b).shard(devs, 0).realize()[2:]).numpy(), b[2:] * 2, rtol=1e-6, err_msg=f"call {i}")

def test_a_broadcast_replica_meets_a_shard_at_the_shards_size():
  # a weight broadcast over a sharded batch is expanded to each shard's rows, not expanded to the whole batch and cut:
  # its gradient then sums only the shard's rows
  devs = ("CPU:0", "CPU:1")
  y = Tensor(_rand(6, 4)).shard(devs, 0) * Tensor(_rand(1, 4)).shard(devs)
  for s in y.uop.src: assert not any(n.op in (Ops.SHRINK, Ops.PAD) for n in s.toposort(gate=lambda n: n.op is not Ops.COPY))

@pytest.mark.parametrize("axis", [0, None], ids=["sharded", "replicated"])
@pytest.mark.parametrize("jit", [False, True], ids=["eager", "jit"])
def test_a_slice_assign_is_not_changed_by_a_later_write_to_its_value(axis, jit):
  # out[:, i:i+1].assign(ones) then ones += 1: the slice keeps the value ones had (numpy, one device). The assign used to
  # stay queued on the multi-device base while realizing the view ran nothing, so it read ones after its update (and
  # under TinyJit lost the writes)
  from tinygrad import TinyJit, Variable
  devs = ("CPU:0", "CPU:1")
  out = Tensor.zeros(4, 6).contiguous().realize().shard(devs, axis).realize()
  ones = Tensor.ones(4, 1).shard(devs, axis).contiguous().realize()
  def step(vi):
    out[:, vi:vi+1].assign(ones).realize()
    ones.assign(ones + 1).realize()
  f, v = TinyJit(step) if jit else step, Variable("i", 0, 5)
  want = np.zeros((4, 6), np.float32)
  for i in range(1, 5):
    f(v.bind(i) if jit else i)
    want[:, i] = i
  np.testing.assert_array_equal(out.numpy(), want)
  np.testing.assert_array_equal(ones.numpy(), np.full((4, 1), 5, np.float32))

def test_reshape_keeps_the_shard_axis_or_raises_as_public_tinygrad():
  devs = ("CPU:0", "CPU:1")
  a = _rand(4, 8)
  t = Tensor(a).shard(devs, 0)
  for shape, axis in (((2, 16), 0), ((2, 2, 8), 0), ((4, 2, 4), 0)):
    r = t.reshape(shape)
    assert r.uop.axis == axis
    np.testing.assert_array_equal(r.numpy(), a.reshape(shape))
  with pytest.raises(RuntimeError, match="moves items between the shards"): Tensor(_rand(4, 3)).shard(devs, 0).reshape(3, 4)
  with pytest.raises(RuntimeError, match="moves items between the shards"): Tensor(_rand(5, 4)).shard(devs, 1).reshape(10, 2)
  # a symbolic reshape keeps the axis too
  from tinygrad import Variable
  rows = Variable("rows", 1, 4).bind(3)
  b = _rand(4, 2)
  x = Tensor(b).shard(devs, 1)[:rows]
  y = x.reshape(rows, 1, 2)
  assert y.uop.axis == 2
  np.testing.assert_array_equal(y.shrink(((0, 3), None, None)).numpy(), b[:3].reshape(3, 1, 2))

@pytest.mark.parametrize("axis", [None, 0, 1])
def test_like_constructors_keep_the_sharding(axis):
  devs = ("CPU:0", "CPU:1")
  t = Tensor(_rand(6, 4)).shard(devs, axis)
  for like in (t.rand_like(), t.randn_like(), t.empty_like(), t.zeros_like(), t.full_like(2.0)):
    assert like.shape == t.shape and like.device == t.device and like.uop.axis == axis
    assert [s.shape for s in like.uop.src] == [s.shape for s in t.uop.src]
  r = t.rand_like().numpy()
  assert r.shape == (6, 4) and ((0 <= r) & (r < 1)).all() and len(np.unique(r)) > 12
  if axis is None: np.testing.assert_array_equal(Tensor(t.rand_like().uop.src[0]).numpy().shape, (6, 4))
  np.testing.assert_array_equal(t.full_like(2.0).numpy(), np.full((6, 4), 2.0, np.float32))
  assert t.empty_like().uop.has_buffer_identity()
  with pytest.raises(RuntimeError, match="take no device"): t.rand_like(device=devs)
  with pytest.raises(ValueError, match="drawn on one device"): Tensor.rand(4, device=devs)

@pytest.mark.parametrize("axis", [0, 1])
def test_rand_like_of_a_sharded_tensor_draws_other_numbers_on_each_shard(axis):
  # every device keys its generator alike and counts its own calls: drawn shard by shard, the shards were the same numbers
  # wherever the devices' counters agreed (after manual_seed: a data-parallel dropout dropped the same rows on every device)
  devs = ("CPU:0", "CPU:1", "CPU:2")
  t = Tensor.zeros(6, 6).contiguous().shard(devs, axis)
  for draw in ("rand_like", "randn_like"):
    Tensor.manual_seed(3)
    r = getattr(t, draw)().numpy()
    assert len(np.unique(r)) == 36, f"{draw}: the shards repeat each other"
    Tensor.manual_seed(3)   # while the counters agree: the numbers of one device's draw of the whole tensor
    np.testing.assert_allclose(r, getattr(Tensor, draw[:-5])(6, 6, device=devs[0]).numpy(), rtol=1e-6, atol=1e-6)
  Tensor.manual_seed(3)
  with Tensor.train(): d = Tensor.ones(6, 16).contiguous().shard(devs, 0).dropout(0.5).numpy()
  assert not (np.array_equal(d[:2], d[2:4]) and np.array_equal(d[2:4], d[4:]))

def test_uop_axis_bounds_and_shard():
  devs = ("CPU:0", "CPU:1")
  u = Tensor(_rand(5, 2)).realize().uop
  assert u.axis is None and u.shard(devs).axis is None and u.shard(devs, 0).axis == 0
  assert u.shard(devs, 0).bounds == ((0, 3), (3, 5)) and u.shard(devs, -1).axis == 1
  np.testing.assert_array_equal(Tensor(u.shard(devs, 0)).numpy(), Tensor(u).numpy())

def test_allreduce_cast_sends_half_partials():
  # ALLREDUCE_CAST=1: a float sum of half values all-reduces its partial sums as half (the copies move half the bytes)
  from tinygrad.dtype import dtypes
  from tinygrad.engine.schedule import create_schedule
  devs = ("CPU:0", "CPU:1")
  a = np.arange(8 * 3).reshape(8, 3).astype(np.float16)
  h = Tensor(a).shard(devs, 0).realize()
  for cast in (0, 1):
    with Context(ALLREDUCE_CAST=cast):
      out = h.float().sum(0)
      copies = [ei for ei in create_schedule([s for s in out.uop.src])[0] if ei.ast.op is Ops.COPY]
      assert copies and all(ei.ast.dtype == (dtypes.half if cast else dtypes.float) for ei in copies)
      np.testing.assert_allclose(out.numpy(), a.astype(np.float32).sum(0), rtol=1e-3)
  # a product's partials were sent as half too: 300**2 per device is 90000, inf in half, so the 8.1e9 product read inf
  p = np.full((4, 2), 300, np.float16)
  with Context(ALLREDUCE_CAST=1):
    np.testing.assert_allclose(Tensor(p).shard(devs, 0).float().prod(0).numpy(), [300.0 ** 4] * 2, rtol=1e-6)
    np.testing.assert_array_equal(Tensor(a).shard(devs, 0).float().max(0).numpy(), a.astype(np.float32).max(0))   # (exact in half)
    # an int sum of half values too: 2049 ones per device were sent as 2048 in half, so 4098 read 4096
    np.testing.assert_array_equal(Tensor(np.ones((4098, 1), np.float16)).shard(devs, 0).cast(dtypes.int64).sum(0).numpy(), [4098])

def test_scache_0_schedules_afresh(count_calls):
  import tinygrad.engine.schedule as sched
  calls = count_calls(sched, "_create_schedule")
  x = Tensor(_rand(4)).realize()
  for scache, want in ((1, 1), (0, 3)):
    before = calls["n"]
    with Context(SCACHE=scache):
      for _ in range(3): (x * 2 + 1).realize()
    assert calls["n"] - before <= want if scache else calls["n"] - before == want

def _mesh_2x2(a: np.ndarray):
  # public tinygrad's 2-D sharding: a DEVICE range over 4 devices, axis 0 split by rng // 2 and axis 1 by rng % 2
  from tinygrad.uop.ops import UOp, AxisType
  devs = tuple(f"CPU:{i}" for i in range(4))
  rng = UOp.range(4, -1, AxisType.DEVICE)
  u = Tensor(a).realize().uop.copy_to_device(devs)._shard(0, rng // 2)._shard(1, rng % 2).unshard((0, 1), (rng // 2, rng % 2))
  return Tensor(u), devs

def test_2d_sharding_on_a_mesh_against_numpy():
  a, w = _rand(4, 6), _rand(6, 4, seed=1)
  t, devs = _mesh_2x2(a)
  assert t.shape == (4, 6) and [s.shape for s in t.uop.src] == [(2, 3)] * 4 and t.uop.arg == ((0, (0, 0, 1, 1)), (1, (0, 1, 0, 1)))
  for got, want in ((t.contiguous(), a), (t + 1, a + 1), (t.sum(), a.sum()), (t.sum(0), a.sum(0)), (t.sum(1), a.sum(1)),
                    (t.max(1), a.max(1)), (t.permute(1, 0), a.T), (t.reshape(2, 2, 6), a.reshape(2, 2, 6)),
                    (t * Tensor(a).shard(devs), a * a), (t @ _mesh_2x2(w)[0], a @ w), (t[:, 1:5], a[:, 1:5])):
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-5)
  assert t.sum(0).uop.arg == ((0, (0, 1, 0, 1)),)   # the reduced axis leaves its devices holding copies of each block
  sums = [Tensor(s).numpy() for s in t.sum().realize().uop.src]
  assert all((x == sums[0]).all() for x in sums)    # every device the same bits
  with pytest.raises(RuntimeError, match="uneven"):
    from tinygrad.uop.ops import UOp, AxisType
    Tensor(_rand(3, 4)).realize().uop.copy_to_device(devs)._shard(0, UOp.range(4, -1, AxisType.DEVICE) // 2)

def test_picks_on_a_mesh_keep_negative_zero():
  # a mesh summed each device group's partial picks (as the 1-D path once did): the other blocks' 0.0 turned a picked -0.0
  # into 0.0 in an index or gather over a split axis; each device now takes its group's partial that holds the picked term
  a = np.where(_rand(4, 6) > 0, -0.0, _rand(4, 6, seed=3)).astype(np.float32)
  t, devs = _mesh_2x2(a)
  ta = torch.from_numpy(a)
  i0, i1, g1 = [3, 0, 2, 1, 3], [5, 0, 2, 4], [[5, 1, 3], [0, 0, 4], [2, 5, 1], [3, 3, 0]]
  for name, got, want in (("index axis 0", t[Tensor(i0).to(devs)], ta[torch.tensor(i0)]),
                          ("index axis 1", t[:, Tensor(i1).to(devs)], ta[:, torch.tensor(i1)]),
                          ("gather axis 1", t.gather(1, Tensor(g1).to(devs)), ta.gather(1, torch.tensor(g1)))):
    assert np.signbit(want.numpy()).any(), name
    np.testing.assert_array_equal(got.numpy().view(np.uint32), want.numpy().view(np.uint32), err_msg=name)
  w, tw = _mesh_2x2(a)[0], ta.clone().requires_grad_()
  w.requires_grad = True
  k = _rand(4, 3, seed=4)
  (w.gather(1, Tensor(g1).to(devs)) * Tensor(k).to(devs)).sum().backward()
  (tw.gather(1, torch.tensor(g1)) * torch.from_numpy(k)).sum().backward()
  np.testing.assert_allclose(w.grad.numpy(), tw.grad.numpy(), rtol=1e-6)

def test_2d_sharding_gradients_against_torch():
  a, w = _rand(4, 4), _rand(4, 4, seed=1)
  A, W = _mesh_2x2(a)[0], _mesh_2x2(w)[0]
  A.requires_grad, W.requires_grad = True, True
  c = _rand(4, seed=2)
  (((A @ W).relu() * 2).sum(0) * Tensor(c).shard(_mesh_2x2(a)[1])).sum().backward()
  ta, tw = torch.tensor(a, requires_grad=True), torch.tensor(w, requires_grad=True)
  (((ta @ tw).relu() * 2).sum(0) * torch.tensor(c)).sum().backward()
  np.testing.assert_allclose(A.grad.numpy(), ta.grad.numpy(), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(W.grad.numpy(), tw.grad.numpy(), rtol=1e-5, atol=1e-5)

def test_a_constant_joins_a_tensor_on_other_devices():
  # public tinygrad's device-less constants: Tensor(UOp.const(1.0)) and Tensor(2.0) broadcast onto any device(s)
  from tinygrad import dtypes
  from tinygrad.uop.ops import UOp
  a = _rand(4)
  s = Tensor(a).shard(("CPU:0", "CPU:1"), axis=0)
  np.testing.assert_allclose((s + Tensor(UOp.const(1.0).cast(dtypes.float))).numpy(), a + 1)
  np.testing.assert_allclose((Tensor(2.0).reshape(1).expand(4) * s).numpy(), a * 2)
  np.testing.assert_allclose((Tensor(3.0) - Tensor(a, device="PYTHON")).numpy(), 3 - a)
  assert UOp.const(3).dtype == dtypes.int and UOp.const(2.5, dtypes.half).dtype == dtypes.half and UOp.const(dtypes.int8, 7).arg == 7
  with pytest.raises(ValueError, match="different devices"): s + Tensor(a)   # data is not moved silently

def test_a_graph_of_constants_joins_a_multi_device_tensor():
  # public tinygrad's elementwise ops compute a tensor that reads no data (Tensor.arange) on the other operand's devices:
  # examples/llama3.py's Int8Embedding compares its arange with token ids on the shard devices (--shard with int8 weights);
  # that raised "tensors on different devices"
  ids = Tensor([[3, 1]]).shard(("CPU:0", "CPU:1"), axis=None)
  np.testing.assert_array_equal((Tensor.arange(4).unsqueeze(-1) == ids).numpy(), np.arange(4)[:, None] == np.array([[3, 1]]))
  for axis in (0, 1):
    y = Tensor(_rand(2, 2)).shard(("CPU:0", "CPU:1"), axis=axis)
    out = Tensor.arange(4).reshape(2, 2) * y
    assert out.device == y.device and out.uop.arg == axis
    np.testing.assert_allclose(out.numpy(), np.arange(4).reshape(2, 2) * y.numpy())
    np.testing.assert_allclose((y - Tensor.full((2, 1), 3.0)).numpy(), y.numpy() - 3)
    with pytest.raises(ValueError, match="different devices"): y + Tensor(_rand(2, 2))   # data is still not moved silently

@pytest.mark.parametrize("axis", [None, 0])
def test_a_buffer_false_constant_stays_a_constant_when_sharded(axis):
  # Tensor.ones(n, buffer=False) (public tinygrad's): realize() gives it no buffer, and sharding a constant makes the
  # constant on each device instead of copying it (no data to move)
  import gc
  from tinygrad import GlobalCounters
  devs = ("CPU:1", "CPU:2", "CPU:3")
  while gc.collect(): pass   # (an earlier test's buffers may take several passes: a buffer's node is in a cycle of its own)
  base = GlobalCounters.mem_used
  x = Tensor.ones(6, buffer=False).realize()
  x.shard_(devs, axis).realize()
  gc.collect()
  assert GlobalCounters.mem_used == base and not any(n.op is Ops.COPY for s in x.uop.src for n in s.toposort())
  np.testing.assert_array_equal(x.numpy(), np.ones(6, np.float32))
  np.testing.assert_array_equal((x * 2).numpy(), np.full(6, 2.0, np.float32))
  assert Tensor.ones(3).realize()._is_realized()   # the default still realizes into a buffer

@pytest.mark.parametrize("how", ["shard", "to", "shard_contiguous"])
def test_sharding_a_temporary_keeps_no_buffer_on_the_default_device(how):
  # the contiguous source of a shard or copy is freed after the realize: the graph kept for autograd is the lazy one, not
  # one that a realize's handed-over intermediate buffers were substituted into (it kept 40 KB of a 40 KB shard)
  import gc
  from tinygrad import GlobalCounters
  ds = ("CPU:1", "CPU:2")
  gc.collect()
  base = GlobalCounters.mem_used
  src = Tensor.arange(10000).float().reshape(100, 100).contiguous()
  x = {"shard": lambda: src.shard(ds, axis=0), "to": lambda: src.to(ds), "shard_contiguous": lambda: src.shard(ds, axis=0).contiguous()}[how]()
  del src
  x.realize()
  gc.collect()
  assert GlobalCounters.mem_used - base == 40000 * (2 if how == "to" else 1)
  np.testing.assert_array_equal(x.numpy(), np.arange(10000, dtype=np.float32).reshape(100, 100))

_TIES = np.array([[1, 3, 3, 0, 3], [3, 2, 1, 3, 0], [0, 0, 0, 0, 0], [3, 1, 3, 3, 3], [np.nan, 1, 2, 3, 4], [1, 2, 3, 4, np.nan],
                  [np.inf, 1, np.inf, 2, np.inf], [-np.inf] * 5, [2, 2, 1, 2, 2]], np.float32)
@pytest.mark.parametrize("flags", [{}, {"RING": 2}, {"ALLREDUCE_CAST": 1}], ids=["naive", "ring", "cast"])
@pytest.mark.parametrize("dt", ["float32", "float16"])
def test_a_max_over_the_sharded_axis_splits_tied_gradients_like_one_device(flags, dt):
  # the cross-device combine is a chain of binary MAXes, which halve the gradient at each tie: ties split over 3 shards got
  # 1/4, 1/4, 1/2 (and a one-wide shard, whose local max .r() dropped, got all of it) where one device gives 1/3 each
  fs = [lambda x: x.max(1), lambda x: x.min(0), lambda x: x.max(), lambda x: x.max(1, keepdim=True)]
  for f, axis, devs in [(f, a, d) for f in fs for a in (0, 1) for d in (("CPU", "CPU:1", "CPU:2"), ("PYTHON", "PYTHON:1"))]:
    x = Tensor(_TIES, requires_grad=True)
    y = f(x.cast(dt))
    c = np.arange(1, y.numel() + 1, dtype=np.float32).reshape(y.shape)
    (y.float() * Tensor(c)).sum().backward()
    want, want_g = y.numpy(), x.grad.numpy()
    with Context(**flags):
      xs = Tensor(_TIES, requires_grad=True)
      ys = f(xs.shard(devs, axis).cast(dt))
      (ys.float() * Tensor(c).shard(devs)).sum().backward()
      np.testing.assert_array_equal(ys.numpy(), want)
      np.testing.assert_allclose(xs.grad.numpy(), want_g, atol=1e-3, err_msg=f"axis {axis} on {devs}")

def test_a_max_over_a_sharded_axis_of_a_mesh_splits_tied_gradients_like_one_device():
  # the mesh's combine of its blocks' maxes halved the gradient at each tie too: x.max() of a 2x2 mesh gave 1/16 and 1/4
  a = np.array([[1, 3, 3, 3], [3, 2, 3, 3], [0, 0, 0, 0], [3, 1, 3, 3]], np.float32)
  for f in (lambda x: x.max(1), lambda x: x.max(0), lambda x: x.max(), lambda x: x.min(1, keepdim=True)):
    x = Tensor(a, requires_grad=True)
    f(x).sum().backward()
    m = _mesh_2x2(a)[0]
    m.requires_grad = True
    f(m).sum().backward()
    np.testing.assert_allclose(m.grad.numpy(), x.grad.numpy(), atol=1e-6)

@pytest.mark.parametrize("read", ["numpy", "tolist", "item", "to", "to_expr"])
def test_reading_one_replica_runs_every_shards_pending_assign(read):
  # numpy() of a replicated tensor copies device 0's replica: it ran only device 0's pending assign, and the other devices'
  # assigns, still pending, gathered their value (w is split on axis 0) from device 0's buffer after it was overwritten:
  # the next t.assign(t.flip(0) + w) gave rows [200,205,210,215,310,305,300] where one device gives [200,...,230]
  devs = ("CPU", "CPU:1", "CPU:2")
  a, w = np.arange(35, dtype=np.float32).reshape(7, 5), np.full((7, 5), 100, np.float32)
  t, want = Tensor(a).shard(devs).contiguous().realize(), a
  for _ in range(3):
    t.assign(t.flip(0) + Tensor(w).shard(devs, 0))
    want = want[::-1] + w
    {"numpy": lambda: t.numpy(), "tolist": lambda: t.tolist(), "item": lambda: t[0, 0].item(), "to": lambda: t.to("CPU:1").realize(),
     "to_expr": lambda: (t[1:].to("CPU") * 2).realize()}[read]()
  assert t.uop.arg is None   # still replicated
  for s in t.uop.src: np.testing.assert_array_equal(Tensor(s).numpy(), want)
