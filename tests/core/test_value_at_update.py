"""A lazy tensor keeps the value it had when built, as a torch tensor does: the realize that updates a buffer in place
computes the live lazy tensors that read it first (docs/guide.md, "In-place updates"). Before, such a tensor read the
updated buffer when it was realized later, so a ratio read after opt.step() mixed old and new weights."""
import gc
import numpy as np, pytest
from tinygrad import Tensor, TinyJit, nn
from tinygrad.nn.optim import Adam
from tinygrad.nn.state import get_parameters

def _w(): return Tensor([1., 2., 3.]).contiguous().realize()

def test_reader_keeps_the_value_before_the_update():
  w = _w()
  t = w * 2
  w.assign(w + 1).realize()
  np.testing.assert_array_equal(t.numpy(), [2, 4, 6])
  np.testing.assert_array_equal(w.numpy(), [2, 3, 4])

def test_reader_of_a_reduce_and_a_setitem():
  w = _w()
  s, m = w.sum(), (w * w).mean()
  w[:2] = 0
  np.testing.assert_array_equal(w.numpy(), [0, 0, 3])
  assert s.item() == 6 and m.item() == pytest.approx(14 / 3)

def test_values_kept_across_steps():
  w = _w()
  hist = []
  for _ in range(3):
    hist.append(w.sum())
    w.assign(w + 1).realize()
  assert [h.item() for h in hist] == [6, 9, 12]

def test_two_tensors_of_one_graph_get_buffers_of_their_own():
  w = _w()
  a, b = w * 2, w * 2   # one (hash-consed) graph
  assert a.uop is b.uop
  w += 1
  w.realize()
  a += 1
  np.testing.assert_array_equal(a.numpy(), [3, 5, 7])
  np.testing.assert_array_equal(b.numpy(), [2, 4, 6])

def test_a_view_follows_its_base():
  w = _w()
  v = w[1:]
  w.assign(w + 1).realize()
  np.testing.assert_array_equal(v.numpy(), [3, 4])

@pytest.mark.parametrize("also", [False, True])
def test_a_view_of_a_computed_reader_follows_it(also):
  # s reads w, so w's update computes s first; its views were computed too, each into a copy of its own, and so kept the
  # old s when s itself was updated later (the program fuzz: v stayed -6 where s became -13). A pad showing padding is a value
  w = _w()
  s = w + w
  v, vv, r, p = s.flip(0), s[1:].flip(0), s.reshape(3, 1).expand(3, 2), s.pad((1, 1))
  Tensor.realize(w.assign(s * 10), *([s] if also else []))
  s.assign(s * 2 - 1)
  np.testing.assert_array_equal(s.numpy(), [3, 7, 11])
  np.testing.assert_array_equal(v.numpy(), [11, 7, 3])
  np.testing.assert_array_equal(vv.numpy(), [11, 7])
  np.testing.assert_array_equal(r.numpy(), [[3, 3], [7, 7], [11, 11]])
  np.testing.assert_array_equal(p.numpy(), [0, 2, 4, 6, 0])
  v += 100
  np.testing.assert_array_equal(s.numpy(), [103, 107, 111])
  np.testing.assert_array_equal(w.numpy(), [20, 40, 60])

@pytest.mark.parametrize("devs", [None, ("CPU:0", "CPU:1")])
@pytest.mark.parametrize("how", ["lazy", "const"])
def test_a_pad_of_a_tensor_without_a_buffer_keeps_its_value(devs, how):
  # a pad that shows padding is a value (F.pad's copy), also when its tensor has no buffer yet: an in-place update of that
  # tensor rebased the pad onto the new graph (p followed `s += 1`, `s[1:] = 0`), where a realized tensor's pad did not
  w = Tensor([1., 2., 3., 4.]) if devs is None else Tensor([1., 2., 3., 4.]).shard(devs, axis=0)
  s = w + w if how == "lazy" else (Tensor.zeros(4) if devs is None else Tensor.zeros(4).shard(devs, axis=0))
  p, v = s.pad((1, 0)), s.flip(0)
  before = [0, 0, 0, 0, 0] if how == "const" else [0, 2, 4, 6, 8]
  s += 1
  s[1:] *= 3
  np.testing.assert_array_equal(p.numpy(), before)
  np.testing.assert_array_equal(v.numpy(), s.numpy()[::-1])

def test_views_of_two_computed_readers_of_one_graph_do_not_alias():
  # a and b are one (hash-consed) graph: b gets a copy of a's value, and b's view must not become a view of a's buffer
  w = _w()
  a, b = w + w, w + w
  va, vb = a[1:], b.flip(0)
  w.assign(w * 10).realize()
  a += 1
  np.testing.assert_array_equal(va.numpy(), [5, 7])
  np.testing.assert_array_equal(vb.numpy(), [6, 4, 2])
  np.testing.assert_array_equal(b.numpy(), [2, 4, 6])

@pytest.mark.parametrize("first", ["w", "t"])
def test_a_reader_of_a_pending_update_keeps_its_value(first):
  # w += 1; t = w * 2; w += 1: t reads the first update only, whichever is realized first (torch: [4, 6, 8]); it read the
  # buffer after both when w was realized first (public tinygrad does), and [4, 6, 8] when t was
  w = _w()
  w += 1
  t = w * 2
  w += 1
  (w if first == "w" else t).realize()
  np.testing.assert_array_equal(t.numpy(), [4, 6, 8])
  np.testing.assert_array_equal(w.numpy(), [3, 4, 5])

def test_a_reader_of_a_pending_update_then_a_setitem():
  w = _w()
  w.assign(w + 1)
  c = w.cumsum(0)
  w[::2] = Tensor([9., 9.])
  np.testing.assert_array_equal(w.numpy(), [9, 3, 9])
  np.testing.assert_array_equal(c.numpy(), [2, 5, 9])

def test_a_pending_update_that_reads_a_pending_update():
  # b's update reads a's first update; a's second must not reach it (b read a's buffer after both)
  a, b = _w(), _w()
  a.assign(a * 10)
  b.assign(b + a)
  a.assign(a + 1)
  np.testing.assert_array_equal(a.numpy(), [11, 21, 31])
  np.testing.assert_array_equal(b.numpy(), [11, 22, 33])

def test_a_reader_of_a_buffer_that_a_reader_overwrites():
  # c reads b; b's pending update reads a; realizing a's update runs b's first (it reads the old a), and c before that
  a, b = _w(), _w()
  c = b.cumsum(0)
  b *= a.max() + 1
  a.assign(a.flip(0) + 1)
  np.testing.assert_array_equal(a.numpy(), [4, 3, 2])
  np.testing.assert_array_equal(c.numpy(), [1, 3, 6])
  np.testing.assert_array_equal(b.numpy(), [4, 8, 12])

def test_old_and_new_in_one_graph_through_a_live_tensor():
  w = _w()
  prev = w * 1
  w += 1
  np.testing.assert_array_equal((w - prev).numpy(), [1, 1, 1])
  np.testing.assert_array_equal(prev.numpy(), [1, 2, 3])

def test_dead_readers_cost_nothing():
  from tinygrad.helpers import GlobalCounters
  w = _w()
  t = w * 2
  del t
  gc.collect()
  GlobalCounters.reset()
  w.assign(w + 1).realize()
  assert GlobalCounters.kernel_count == 1

def test_backward_through_a_computed_reader():
  x = Tensor([1., 2., 3.], requires_grad=True)
  w = _w()
  y = (x * w).sum()
  w.assign(w + 1).realize()
  assert y.item() == 14
  # the gradient needs w's old value, which the update overwrote: it read the new w ([2, 3, 4]); as torch, it raises
  with pytest.raises(RuntimeError, match="in-place update"): y.backward()

W = np.array([[0.1, -0.2, 0.3], [-0.4, 0.5, -0.1]], dtype=np.float32)
B = np.array([0.05, -0.05], dtype=np.float32)
X = np.array([[1., 2., 3.], [4., 5., 6.], [7., 8., 9.]], dtype=np.float32)
S = [[0, 2], [1, 1], [2, 0], [0, 1], [2, 2]]

def _ppo_torch() -> list[float]:
  torch = pytest.importorskip("torch", reason="torch (the CPU wheel) is the reference: pip install torch")
  lin = torch.nn.Linear(3, 2)
  with torch.no_grad(): lin.weight[:], lin.bias[:] = torch.tensor(W), torch.tensor(B)
  opt = torch.optim.Adam(lin.parameters(), lr=0.1)
  x = torch.tensor(X)
  old = lin(x).log_softmax(-1).detach()
  out = []
  for s in S:
    s = torch.tensor(s)
    r = (lin(x[s]).log_softmax(-1) - old[s]).exp()
    opt.zero_grad(); (-r.mean()).backward(); opt.step()
    out.append(r.max().item())
  return out

@pytest.mark.parametrize("jit", [False, True])
def test_ppo_ratio_read_after_the_step_matches_torch(jit):
  # PPO: old log-probs are computed from the weights before training (lazy here), the ratio is read after opt.step()
  ref = _ppo_torch()
  lin = nn.Linear(3, 2)
  lin.weight.assign(Tensor(W)).realize(); lin.bias.assign(Tensor(B)).realize()
  opt = Adam(get_parameters(lin), lr=0.1)
  def step(x, old):
    r = (lin(x).log_softmax() - old).exp()
    opt.zero_grad(); (-r.mean()).backward(); opt.step()
    return r.max().realize()
  if jit: step = TinyJit(step)
  x = Tensor(X).realize()
  old = lin(x).log_softmax().detach()
  with Tensor.train():
    got = [step(x[Tensor(s)], old[Tensor(s)]).item() for s in S]
  np.testing.assert_allclose(got, ref, rtol=1e-5)
  assert got[0] == pytest.approx(1.0)

def test_jit_replay_does_not_write_a_tensor_built_outside_the_call():
  w = Tensor([1., 2.]).contiguous().realize()
  @TinyJit
  def f(d):
    w.assign(w + d).realize()
    return w.sum().realize()
  f(Tensor([1., 1.]).realize())          # first call: w = [2, 3]
  outside = w * 10                       # lazy, reads w: built between the first call and the capture
  f(Tensor([1., 1.]).realize())          # captured: w = [3, 4]; outside is computed before the write, not captured
  np.testing.assert_array_equal(outside.numpy(), [20, 30])
  for _ in range(3): f(Tensor([1., 1.]).realize())   # replays
  np.testing.assert_array_equal(outside.numpy(), [20, 30])
  np.testing.assert_array_equal(w.numpy(), [6, 7])

def test_a_kept_model_output_shares_the_steps_forward():
  # opt.step() computes a live output with the loss and the gradients (one forward), not in a forward of its own before
  # the update (it kept the value of the weights before the step); the implicit gradients (of the input, of the output: requires_grad None) stay lazy, uncomputed
  from tinygrad.helpers import GlobalCounters
  Tensor.manual_seed(0)
  lin1, lin2 = nn.Linear(5, 7), nn.Linear(7, 3)
  opt = Adam(get_parameters([lin1, lin2]), lr=0.1)
  x = Tensor.randn(4, 5).realize()
  def run(keep: bool) -> tuple[int, np.ndarray | None]:
    out = lin2(lin1(x).relu())
    with Tensor.train():
      opt.zero_grad(); out.square().mean().backward()
      ref = np.maximum(x.numpy() @ lin1.weight.numpy().T + lin1.bias.numpy(), 0) @ lin2.weight.numpy().T + lin2.bias.numpy()
      if not keep: del out
      gc.collect()
      GlobalCounters.reset()
      opt.step()
      n = GlobalCounters.kernel_count
    if keep:
      np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)
      assert not x.grad._is_realized()
    return n, ref
  # (a forward of its own would add 3 kernels; storing the output the fused step did not store adds its bias add)
  assert run(True)[0] <= run(False)[0] + 1

def test_a_reader_with_an_unbound_variable_stays_lazy():
  # it cannot run yet: the update must not fail on it (a bound one is computed)
  from tinygrad import Variable
  w = Tensor([1., 2., 3., 4.]).contiguous().realize()
  v = Variable("v", 1, 4)
  unbound, total = w[:v] * 2, (w[:v] * 2).sum()
  bound = w[:v.bind(2)] * 3
  w.assign(w + 1).realize()
  assert not unbound._is_realized() and not total._is_realized()
  np.testing.assert_array_equal(bound.numpy(), [3, 6])
  np.testing.assert_array_equal(w.numpy(), [2, 3, 4, 5])

@pytest.mark.parametrize("axis", [None, 0])
def test_sharded_readers_keep_their_values(axis):
  devs = ("CPU:0", "CPU:1")
  w = Tensor([1., 2., 3., 4.]).contiguous().shard(devs, axis=axis).realize()
  t, s = w * 2, w.sum()
  w += 1
  w.realize()
  np.testing.assert_array_equal(t.numpy(), [2, 4, 6, 8])
  assert s.item() == 10
  np.testing.assert_array_equal(w.numpy(), [2, 3, 4, 5])

def test_sharded_model_output_kept_across_a_step():
  devs = ("CPU:0", "CPU:1")
  Tensor.manual_seed(1)
  lin = nn.Linear(4, 3)
  for p in get_parameters(lin): p.replace(p.shard(devs)).realize()
  x = Tensor.randn(6, 4).shard(devs, axis=0).realize()
  opt = Adam(get_parameters(lin), lr=0.5)
  out = lin(x)
  ref = x.numpy() @ lin.weight.numpy().T + lin.bias.numpy()
  with Tensor.train():
    opt.zero_grad(); out.square().mean().backward(); opt.step()
  np.testing.assert_allclose(out.numpy(), ref, rtol=1e-5, atol=1e-6)
  assert not np.allclose(lin(x).numpy(), ref, atol=1e-3)   # (the weights did change)

@pytest.mark.parametrize("devs", ["CPU", ("CPU:0", "CPU:1")])
def test_a_graph_of_old_and_new_values_keeps_the_old_part(devs):
  # b was computed from a's old value, then takes a's new one (`b += a` after a's update): realizing a first computed b's
  # old part after the write, silently (0 here; torch: -6)
  def mk(v): return Tensor([v]).shard(devs) if isinstance(devs, tuple) else Tensor([v])
  a = mk(-3.).realize()
  b = a + a
  a.assign(mk(0.))
  b += a
  np.testing.assert_array_equal(a.numpy(), [0])
  np.testing.assert_array_equal(b.numpy(), [-6])

def test_jit_returned_view_across_shards_follows_each_replay():
  # a jitted flip across the shards of its input returns copies: writing into the capture call's input (a replay with
  # that buffer) remade them as that input's view, and the next replay with another input returned the old data
  devs = ("CPU:0", "CPU:1")
  f = TinyJit(lambda x: x.flip(1))
  rng = np.random.default_rng(0)
  prev = None
  for mode in ["new", "new", "same", "new"]:
    a = rng.integers(-3, 3, (3, 3)).astype(np.float32)
    if mode == "same": (x := prev).assign(Tensor(a).shard(devs, axis=1)).realize()
    else: x = Tensor(a).shard(devs, axis=1).realize()
    prev = x
    np.testing.assert_array_equal(f(x).numpy(), a[:, ::-1])

def test_a_pending_update_of_another_tensor_keeps_the_old_value_it_read():
  a = Tensor([-3.]).contiguous().realize()
  c = Tensor([1.]).contiguous().realize()
  v = a * 2
  a.assign(Tensor([0.]))
  c += v + a        # pending: reads a before and after its update
  d = Tensor([5.]).contiguous().realize()
  d += a * 3 - v    # pending, the same
  del v
  np.testing.assert_array_equal(a.numpy(), [0])
  np.testing.assert_array_equal(c.numpy(), [-5])
  np.testing.assert_array_equal(d.numpy(), [11])

@pytest.mark.parametrize("devs", ["CPU", ("CPU:0", "CPU:1")])
def test_an_overwritten_pending_update_read_elsewhere_runs_in_order(devs):
  # buf's first update is pending and read by mid; the second does not read it. Realizing the second first ran the first
  # one later, for mid, and it overwrote the second: buf ended at 3s (torch: mid 12, final 20, buf 5s)
  def mk(v): return Tensor.full((4,), v).contiguous().shard(devs) if isinstance(devs, tuple) else Tensor.full((4,), v).contiguous()
  buf = mk(0.).realize()
  buf.assign(mk(3.))
  mid = buf.sum()
  buf.assign(mk(5.))
  final = buf.sum()
  assert final.item() == 20
  assert mid.item() == 12
  np.testing.assert_array_equal(buf.numpy(), [5, 5, 5, 5])

def test_an_overwritten_pending_update_nobody_reads_does_not_run():
  from tinygrad.helpers import GlobalCounters
  buf = Tensor.zeros(4).contiguous().realize()
  buf.assign(Tensor.full((4,), 3.))
  buf.assign(Tensor.full((4,), 5.))
  GlobalCounters.reset()
  np.testing.assert_array_equal(buf.numpy(), [5, 5, 5, 5])
  assert GlobalCounters.kernel_count == 1

def test_a_reader_that_holds_a_pending_update_of_another_buffer():
  # r reads b's pending update and a; realizing a computes r first, which runs b's update: c (a reader of b) before it
  a, b, z = _w(), _w(), _w()
  c = b.cumsum(0)
  b *= b.max() + 1
  r = b * 3 + a
  a *= z.max() + 1
  a.realize()
  np.testing.assert_array_equal(c.numpy(), [1, 3, 6])
  np.testing.assert_array_equal(r.numpy(), [13, 26, 39])
  np.testing.assert_array_equal(b.numpy(), [4, 8, 12])

def test_an_old_value_part_that_is_a_pending_update_of_another_buffer():
  # b's second update reads a before and after a's update: realizing a computes b's first update as the old part,
  # so c (a reader of b) is computed before it
  a, b = _w(), _w()
  c = b.cumsum(0)
  b *= a.max() + 1
  a[:1].assign(a[2:] + 1)
  b *= a.max() + 1
  a.realize()
  np.testing.assert_array_equal(c.numpy(), [1, 3, 6])
  np.testing.assert_array_equal(a.numpy(), [4, 2, 3])
  np.testing.assert_array_equal(b.numpy(), [20, 40, 60])

@pytest.mark.parametrize("axis", [None, 0])
def test_a_reader_of_a_buffer_that_a_sharded_reader_overwrites(axis):
  def w(): return Tensor([1., 2., 3., 4.]).shard(("CPU:0", "CPU:1"), axis=axis).contiguous().realize()
  a, b = w(), w()
  c = b.cumsum(0)
  b[:2].assign(a[2:] + 1)
  a[::2] = a[1::2]
  a.realize()
  np.testing.assert_array_equal(c.numpy(), [1, 3, 6, 10])
  np.testing.assert_array_equal(b.numpy(), [4, 5, 3, 4])
  np.testing.assert_array_equal(a.numpy(), [2, 2, 4, 4])

def test_an_update_that_reads_old_and_new_values_of_its_target_through_a_dead_tensor():
  # y read x before x's first update; y is gone before the realize, so the second update's graph reads x's buffer before
  # and after the first one: it raised "cannot order the schedule"
  x = Tensor([1., 2., 3., 4., 5.]).contiguous().realize()
  def f():
    y = x + 0
    x[1:] += x[:-1]
    x[1:] += y[:-1]
  f()
  gc.collect()
  np.testing.assert_array_equal(x.numpy(), [1, 4, 7, 10, 13])

@pytest.mark.parametrize("sharded", [False, True])
def test_a_reader_of_old_and_new_values_whose_old_part_is_realized_with_the_update(sharded):
  # e3 reads e2 (w's old value) and w's update; realizing w and e2 together computed e2, but e3 kept e2's graph and read
  # it later from the updated w: [16.] (4 * 4) for 3 * 4
  w = Tensor([3.]).shard(("CPU:0", "CPU:1")) if sharded else Tensor([3.])
  w.realize()
  e2 = w * 1
  w += 1
  e3 = e2 * w
  Tensor.realize(w, e2)
  np.testing.assert_array_equal(e3.numpy(), [12.])
  np.testing.assert_array_equal(e2.numpy(), [3.])

def test_a_view_of_a_buffer_read_before_and_after_an_update_keeps_viewing_it():
  # r reads w's old values and b's update, so realizing w's assign computes a copy of w's old values for r; that copy
  # replaced w's buffer in every live graph, in w's view v too: v showed [3, 2, 1, 0] after w became [2, 22, 42, 62]
  w, b = Tensor([0., 1, 2, 3]).realize(), Tensor([0., 10, 20, 30]).realize()
  b += 1
  r = w + b
  v = w.flip(0)
  w.assign(b * 2)
  w.numpy()
  np.testing.assert_array_equal(v.numpy(), [62, 42, 22, 2])
  np.testing.assert_array_equal(r.numpy(), [1, 12, 23, 34])
  w += 1
  np.testing.assert_array_equal(v.numpy(), [63, 43, 23, 3])
