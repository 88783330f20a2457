"""TinyJit: replay gives the same values as running the function, with no scheduling after capture, and clear errors."""
import numpy as np, pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, TinyJit, dtypes
from tinygrad.engine.jit import JitError
import tinygrad.engine.schedule as schedule_mod
import tinygrad.engine.realize as realize_mod
from tinygrad.engine.buffers import base_buffer

def test_replay_matches_and_does_not_schedule(count_calls):
  @TinyJit
  def f(a, b): return (a * b + 1).sum(0)
  calls = count_calls(realize_mod, "create_schedule")
  for i in range(5):
    a, b = Tensor.rand(4, 3).realize(), Tensor.rand(4, 3).realize()
    before = calls["n"]
    out = f(a, b).numpy()
    np.testing.assert_allclose(out, (a.numpy() * b.numpy() + 1).sum(0), rtol=1e-6)
    if i >= 2: assert calls["n"] == before, f"call {i} scheduled {calls['n'] - before} times after capture"
  assert f.cnt == 5 and len(f.steps) >= 1

def test_shape_change_is_an_error():
  @TinyJit
  def f(a): return a + 1
  for _ in range(3): f(Tensor.rand(3).realize())
  with pytest.raises(JitError, match=r"captured with inputs \[\(3,\)"): f(Tensor.rand(4).realize())
  f.reset()
  assert f(Tensor.ones(4).contiguous().realize()).tolist() == [2.0] * 4

def test_reading_data_while_capturing_is_an_error():
  @TinyJit
  def g(a): return a * a.sum().item()
  g(Tensor.rand(3).realize())
  with pytest.raises(JitError, match="would not change on replay"): g(Tensor.rand(3).realize())

def test_data_of_each_replays_output_keeps_its_values():
  # a replay writes its outputs into the same buffers: data() was a view of that memory on CPU, so the outputs of five calls
  # read [4, 8, 8, 8, 8] where they were [0, 2, 4, 6, 8] (numpy() copied)
  @TinyJit
  def f(x): return (x * 2).realize()
  ds = [f(Tensor([float(i)] * 3, device="CPU").realize()).data() for i in range(5)]
  assert [d.tolist() for d in ds] == [[2.0 * i] * 3 for i in range(5)]

def test_jitted_training_step_is_bit_identical():
  from tinygrad import nn
  from tinygrad.nn.optim import SGD
  def make():
    Tensor.manual_seed(0)
    return nn.Linear(3, 2)
  def step(model, opt, x, y):
    opt.zero_grad()
    loss = ((model(x) - y) ** 2).mean()
    loss.backward()
    opt.step()
    return loss
  xs = [Tensor.rand(8, 3).realize() for _ in range(5)]
  ys = [Tensor.rand(8, 2).realize() for _ in range(5)]
  m1, m2 = make(), make()
  o1, o2 = SGD([m1.weight, m1.bias], lr=0.1), SGD([m2.weight, m2.bias], lr=0.1)
  jstep = TinyJit(lambda x, y: step(m2, o2, x, y))
  with Tensor.train():
    for x, y in zip(xs, ys):
      l1 = step(m1, o1, x, y).numpy()
      l2 = jstep(x, y).numpy()
      assert l1.tobytes() == l2.tobytes()
  assert m1.weight.numpy().tobytes() == m2.weight.numpy().tobytes()

def test_changed_int_argument_is_an_error():
  @TinyJit
  def f(a, k): return a * k
  x = Tensor([1.0, 2.0]).realize()
  for _ in range(3): assert f(x, 3).tolist() == [3.0, 6.0]   # unchanged: replays
  with pytest.raises(JitError, match=r"argument 1: captured 3, now 4.*Tensor.*Variable"): f(x, 4)

def test_a_zero_of_the_other_sign_is_a_changed_argument():
  # 0.0 == -0.0 in Python and numpy, so a replay with -0.0 took the captured 0.0: 1 / (x * s) gave inf where the function
  # gives -inf; likewise the zeros of a numpy array argument
  import numpy as np
  @TinyJit
  def f(a, s, arr): return (1 / (a * s * Tensor(arr))).realize()
  x = Tensor([1.0, 2.0]).realize()
  for _ in range(3): assert f(x, 0.0, np.array([1.0, 1.0])).tolist() == [float("inf")] * 2
  with pytest.raises(JitError, match=r"argument 1: captured 0.0, now -0.0"): f(x, -0.0, np.array([1.0, 1.0]))
  with pytest.raises(JitError, match=r"argument 2"): f(x, 0.0, np.array([1.0, 0.0]) * np.array([1.0, -1.0]) + np.array([0.0, -0.0]))
  assert f(x, 0.0, np.array([1.0, 1.0])).tolist() == [float("inf")] * 2   # (the same values replay)
  f.reset()
  for _ in range(3): f(x, np.float32(0.0), np.array([1.0, 1.0]))
  with pytest.raises(JitError, match=r"argument 1: captured np.float32\(0.0\), now np.float32\(-0.0\)"): f(x, np.float32(-0.0), np.array([1.0, 1.0]))

def _grad_loop(where_zero: str, calls: int = 6):
  # a jitted forward and backward, the optimizer step outside it: each call's .grad must be that call's gradient
  import numpy as np
  from tinygrad.nn.optim import SGD
  rng = np.random.default_rng(0)
  w0, xs = rng.standard_normal((3, 2)).astype(np.float32), [rng.standard_normal((4, 3)).astype(np.float32) for _ in range(calls)]
  ws = [Tensor(w0.copy(), requires_grad=True) for _ in range(2)]
  opts = [SGD([w], lr=0.1) for w in ws]
  def fb(x, w, opt, zero):
    if zero: opt.zero_grad()
    loss = (x @ w).tanh().sum()
    loss.backward()
    return loss.realize()
  jfb = TinyJit(fb)
  for x in xs:
    grads = []
    for f, w, opt in ((fb, ws[0], opts[0]), (jfb, ws[1], opts[1])):
      if where_zero == "outside": opt.zero_grad()
      f(Tensor(x), w, opt, where_zero == "inside")
      grads.append(w.grad.numpy())
      opt.step()
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6)
  np.testing.assert_allclose(ws[1].numpy(), ws[0].numpy(), rtol=1e-6)

@pytest.mark.parametrize("where_zero", ["inside", "outside"])
def test_gradients_of_a_jitted_backward_are_each_calls(where_zero):
  # the capture left w.grad a lazy graph of the capture call's input, and a replay (no Python: backward() does not run)
  # left it there, so every later step read the capture call's gradient
  _grad_loop(where_zero)

def test_gradients_added_to_across_jitted_calls_raise():
  # eager backward() adds to the .grad from the last call; a capture's kernels read that old gradient and every replay
  # added to it again (micro-batch accumulation gave the capture call's sum)
  w = Tensor([1.0, 2.0], requires_grad=True)
  @TinyJit
  def micro(x):
    (x * w).sum().backward()
  micro(Tensor([1.0, 1.0]))
  with pytest.raises(JitError, match="adds to the .grad"): micro(Tensor([1.0, 1.0]))
  # captured with .grad None (cleared outside): a call with a gradient held would add to it
  @TinyJit
  def fb(x):
    (x * w).sum().backward()
  for _ in range(3):
    w.grad = None
    fb(Tensor([2.0, 3.0]))
  assert w.grad.tolist() == [2.0, 3.0]
  with pytest.raises(JitError, match="holds a gradient"): fb(Tensor([2.0, 3.0]))

def test_state_replaced_by_a_new_tensor_in_the_function_raises():
  # `self.h = f(self.h)` in a jitted step: the capture read the tensor self.h was then, which a replay (no Python) kept
  # reading, so every replay computed from the capture call's state (an RNN without recurrence), silently
  import numpy as np
  W = np.array([[0.5, 0.1], [0.2, 0.3]], np.float32)
  class RNN:
    def __init__(self): self.h, self.W = Tensor.zeros(1, 2).contiguous().realize(), Tensor(W)
    def replaced(self, x: Tensor) -> Tensor:
      self.h = (self.h @ self.W + x).tanh()
      return self.h.realize()
    def in_place(self, x: Tensor) -> Tensor:
      self.h.assign((self.h @ self.W + x).tanh())
      return self.h.realize()
  m = RNN()
  f = TinyJit(m.replaced)
  for _ in range(2): f(Tensor([[0.1, 0.2]]))
  with pytest.raises(JitError, match="no tensor holds now"): f(Tensor([[0.1, 0.2]]))
  m, h = RNN(), np.zeros((1, 2), np.float32)
  f = TinyJit(m.in_place)
  for i in range(6):
    x = np.full((1, 2), 0.1 * i, np.float32)
    h = np.tanh(h @ W + x)
    np.testing.assert_allclose(f(Tensor(x)).numpy(), h, rtol=1e-5)

def test_returned_view_at_a_bound_offset_is_the_replays():
  # a jitted step returning a row of its state at a bound position (`cache[sp]`: a view whose offset, not its shape, holds
  # the Variable): only returned tensors of symbolic shape were bound to a replay's values, so every replay returned the
  # row at the capture call's sp ([2, -1] for sp = 1..3; also for a row of a buffer the step computed, `(st + x)[sp]`)
  from tinygrad import Variable
  cache = Tensor.zeros(4, 2).contiguous().realize()
  @TinyJit
  def step(x: Tensor, sp):
    cache[sp:sp+1].assign(x).realize()
    return cache[sp], (cache * 2).realize()[sp], cache.T[:, sp], cache[:sp+1]
  for p in range(4):
    row, twice, col, rows = step(Tensor([[p + 1.0, -p]]), Variable("sp", 0, 3).bind(p))
    assert row.tolist() == [p + 1.0, -p] and twice.tolist() == [2 * p + 2.0, -2 * p] and col.tolist() == [p + 1.0, -p]
    assert rows.numpy()[:, 0].tolist() == [i + 1.0 for i in range(p + 1)]

def test_state_replaced_between_replays_raises():
  # a KV cache made anew for the next prompt (`self.cache = Tensor.zeros(...)`, or del and made again by the model) after
  # some replays: only the first replay checked the state it read, so later replays went on with the old cache while the
  # (un-jitted) prefill wrote the new one: a decoder attended over the last prompt's keys (logits off by ~2), silently
  from tinygrad import Variable
  W = np.array([[0.5, -1.0], [2.0, 0.25]], np.float32)
  class Dec:
    def __init__(self): self.w, self.cache = Tensor(W), Tensor.zeros(6, 2).contiguous().realize()
    def step(self, x: Tensor, sp) -> Tensor:
      self.cache[sp:sp+1].assign(x @ self.w).realize()
      return self.cache[:sp+1].sum(0).realize()   # (attention over the cache: a sum of its rows so far)
  def run(d: Dec, f, xs, first=0):
    for p in range(first, len(xs)):
      np.testing.assert_allclose(f(Tensor(xs[p:p+1]), Variable("sp", 0, 5).bind(p)).numpy(), (xs[:p+1] @ W).sum(0), rtol=1e-6)
  d, xs = Dec(), np.arange(10, dtype=np.float32).reshape(5, 2)
  f = TinyJit(d.step)
  run(d, f, xs)
  d.cache.assign(Tensor.zeros(6, 2)).realize()   # a reset in place: replays read it
  d.cache[0:1].assign(Tensor(xs[:1] + 1) @ d.w).realize()   # a prefill outside the jit
  run(d, f, xs + 1, first=1)
  d.cache = Tensor.zeros(6, 2).contiguous().realize()   # a reset by a new tensor: the capture holds the old one
  d.cache[0:1].assign(Tensor(xs[:1]) @ d.w).realize()
  with pytest.raises(JitError, match="no tensor holds now"): run(d, f, xs, first=1)
  d2 = Dec()
  f2 = TinyJit(d2.step)
  run(d2, f2, xs)
  d2.cache.replace(Tensor.zeros(6, 2).contiguous().realize())   # the same tensor, on a new buffer
  with pytest.raises(JitError, match="no tensor holds now"): run(d2, f2, xs, first=1)

def test_lazy_state_realized_between_replays_is_not_replaced():
  # a table the first call makes and leaves lazy, whose graph reads a realized buffer (tinygrad.llm's freqs_cis: a realized
  # arange): each replay computes it from that buffer. Realized later (by another jit's first call, in tinygrad.llm's
  # generate), no graph reads the buffer any more, and the check at every replay took that for a replaced tensor: JitError
  # "no tensor holds now" at the next replay (tinygrad.llm's second generate raised it). The same tensor holds its value.
  # A table replaced by a new tensor still raises (checked at the first replay only, the replays computed the old one)
  class M:
    def __call__(self, x: Tensor) -> Tensor:
      if not hasattr(self, "table"): self.table = Tensor(np.arange(4, dtype=np.float32)) * 2
      return (x + self.table).realize()
  m = M()
  f = TinyJit(m)
  for i in range(4): assert f(Tensor.full((4,), float(i))).tolist() == [i + 2.0 * j for j in range(4)]
  assert not m.table._is_realized()   # (still lazy: the replays compute it)
  m.table.realize()
  for i in range(4, 7): assert f(Tensor.full((4,), float(i))).tolist() == [i + 2.0 * j for j in range(4)]
  m.table = Tensor(np.arange(4, dtype=np.float32)) * 3   # replaced by a new tensor: the replay would compute the old one
  with pytest.raises(JitError, match="no tensor holds now"): f(Tensor.full((4,), 7.0))

def test_view_of_symbolic_shape_as_input_replays_each_calls_view():
  # a prompt chunk passed as a view of the token buffer, `toks[:, sp:sp+n]` with n a bound Variable (a symbolic shape):
  # the capture kept it a view (its kernels read the token buffer at the capture call's offset) while each replay passed a
  # copy of its own view, read at that offset: [[9, 10, 11, 12, 13, 0, 0, 0, 0]] for toks[:, 4:13] of 1..30. The view's
  # base is the call's input, never state the capture holds: each prompt's token tensor is a new one (as tinygrad.llm's
  # generate makes it), the last one freed, while every replay checks the state it holds (the cache) is still held
  from tinygrad import Variable
  cache = Tensor.zeros(30).contiguous().realize()
  @TinyJit
  def f(x: Tensor, sp) -> Tensor:
    cache[sp:sp+1].assign(x.sum().float().reshape(1)).realize()
    return (x * 2).realize()
  for prompt in range(2):
    toks = np.arange(1, 31, dtype=np.int32).reshape(1, 30) + 100 * prompt
    t = Tensor(toks).realize()
    for sp, n in [(4, 5), (4, 3), (4, 9), (20, 1)]:
      vsp, vn = Variable("sp", 0, 20).bind(sp), Variable("n", 1, 10).bind(n)
      assert f(t[:, vsp:vsp+vn], vsp).tolist() == (toks[:, sp:sp+n] * 2).tolist()
      assert cache.numpy()[sp] == toks[0, sp:sp+n].sum()

def test_tensors_the_function_keeps_are_each_calls():
  # a tensor the function makes and keeps (self.scaled = x * 3, not returned) was left a graph of the capture call's input:
  # after every replay it read the capture call's values
  import numpy as np
  W = Tensor([[1.0, 2.0], [3.0, 4.0]]).realize()
  class M:
    def step(self, x: Tensor) -> Tensor:
      self.logits, self.scaled = x @ W, x * 3
      return (self.logits.sum() + self.scaled.sum()).realize()
  m = M()
  f = TinyJit(m.step)
  for i in range(5):
    x = np.array([[i, 1.0]], np.float32)
    f(Tensor(x))
    np.testing.assert_allclose(m.logits.numpy(), x @ W.numpy())
    np.testing.assert_allclose(m.scaled.numpy(), x * 3)

def test_changed_keyword_and_nested_arguments_are_errors():
  @TinyJit
  def f(a, scale=1.0, opts=None): return a * scale + (opts or [0])[0]
  x = Tensor([1.0]).realize()
  for _ in range(3): f(x, scale=2.0, opts=[1])
  with pytest.raises(JitError, match=r"argument 'scale': captured 2.0, now 5.0"): f(x, scale=5.0, opts=[1])
  with pytest.raises(JitError, match=r"argument 'opts'\[0\]: captured 1, now 2"): f(x, scale=2.0, opts=[2])
  with pytest.raises(JitError, match=r"argument 'opts'"): f(x, scale=2.0, opts=None)
  assert f(x, scale=2.0, opts=[1]).tolist() == [3.0]

def test_keyword_arguments_bind_by_name():
  # the tensors replay in the order they were found: keywords were taken in sorted name order, so g(a=y, b=x) of a
  # g(b, a) captured as g(x, y) replayed with a and b swapped (4 for -4), and f(x, c=y) replayed a capture of f(x, b=y)
  # (-4 for 51). Keywords now bind as their parameters' positions, and other names raise
  @TinyJit
  def g(b, a): return (b - a).realize()
  @TinyJit
  def f(a, b=None, c=None, **kw): return (a - (0 if b is None else b) + (0 if c is None else c * 10) + sum(kw.values())).realize()
  x, y = Tensor([1.0, 1.0]).realize(), Tensor([5.0, 5.0]).realize()
  for _ in range(3): g(x, y)
  assert g(a=y, b=x).tolist() == g(x, a=y).tolist() == [-4.0, -4.0]
  for _ in range(3): f(x, b=y, q=x)
  assert f(x, y, q=x).tolist() == [-3.0, -3.0]
  with pytest.raises(JitError, match=r"captured the arguments \['a', 'b', 'q'\], now the arguments \['a', 'c', 'q'\]"): f(x, c=y, q=x)
  with pytest.raises(JitError, match=r"now the arguments \['a', 'b', 'r'\]"): f(x, b=y, r=x)

def test_backward_after_a_replay_overwrote_what_the_graph_read_raises():
  # a loss realized before a replay of a jitted optimizer step (or of a function writing its input) read the old weights:
  # its backward read the buffers the replay overwrote (3*w_new**2 for 3*w_old**2), as after a plain step it raises
  from tinygrad.nn import optim
  w = Tensor([1.0, 2.0, 3.0], requires_grad=True)
  opt = optim.SGD([w], lr=0.1)
  @TinyJit
  def step():
    opt.zero_grad()
    (w * w).sum().backward()
    opt.step()
  for _ in range(3): step()
  loss = (w * w * w).sum().realize()
  step()
  with pytest.raises(RuntimeError, match="in-place update"): loss.backward()
  @TinyJit
  def inc(a):
    a += 1
    return a.realize()
  for _ in range(3): inc(Tensor([0.0, 0.0]).contiguous().realize())
  y = Tensor([1.0, 2.0], requires_grad=True).realize()
  ly = (y * y).sum().realize()
  inc(y)
  with pytest.raises(RuntimeError, match="in-place update"): ly.backward()
  w.grad = None
  (w * w).sum().backward()   # (a graph built after the replay reads its values)
  np.testing.assert_allclose(w.grad.numpy(), 2 * w.numpy(), rtol=1e-6)

def test_static_arguments_are_not_checked():
  seen = []
  def g(a, tag, n): 
    seen.append(tag)
    return a + 1
  f = TinyJit(g, static=("tag", 2))
  x = Tensor([1.0]).realize()
  for i in range(4): assert f(x, tag=f"step {i}", n=i).tolist() == [2.0]
  assert len(seen) == 2   # replays did not run the Python code

def test_changed_plain_object_argument_replays_like_public_tinygrad():
  # hlb_cifar10 passes a fresh OptimizerGroup each step: objects are not compared, the replay runs what was captured
  class Holder:
    def __init__(self, w): self.w = w
  w = Tensor([2.0, 3.0]).realize()
  @TinyJit
  def step(x, holder, k): return (x * holder.w * k).realize()
  x = Tensor([1.0, 1.0]).realize()
  outs = [step(x, Holder(w), 2).tolist() for _ in range(4)]   # a new object every call
  assert outs == [[4.0, 6.0]] * 4 and step.cnt == 4
  with pytest.raises(JitError, match=r"argument 2: captured 2, now 3"): step(x, Holder(w), 3)   # a Python scalar still raises
  with pytest.raises(JitError, match=r"argument 2"): step(x, Holder(w), np.float32(2.5))   # a numpy value too

def test_numpy_array_argument_is_compared_by_its_items():
  # an array is baked in like a scalar: a new array of the same items replays, other items raise (a new array raised
  # ValueError from its ==), and so does the captured array changed in place (it replayed the old items)
  @TinyJit
  def f(x, arr): return x + Tensor(arr)
  x = Tensor([1.0, 1.0]).realize()
  for _ in range(3): assert f(x, np.array([2.0, np.nan], np.float32)).tolist()[0] == 3.0
  with pytest.raises(JitError, match=r"argument 1: captured array"): f(x, np.array([5.0, np.nan], np.float32))
  with pytest.raises(JitError, match=r"argument 1"): f(x, np.array([2.0, np.nan]))   # (float64: another dtype)
  buf = np.array([1.0, 2.0], np.float32)
  @TinyJit
  def g(x, arr): return x + Tensor(arr)
  for _ in range(3): assert g(x, buf).tolist() == [2.0, 3.0]
  buf[0] = 7.0
  with pytest.raises(JitError, match=r"argument 1: captured array\(\[1., 2.\]"): g(x, buf)

def test_captured_describes_the_capture():
  @TinyJit
  def f(a, b, scale=1.0): return (a + b * scale).realize()
  a, b = Tensor.ones(2, 3).realize(), Tensor.ones(3, dtype=dtypes.float32).realize()
  assert f.captured is None
  f(a, b)
  assert f.captured is None
  out = f(a, b)
  cap = f.captured
  assert cap is not None and cap.ret is out and len(cap.jit_cache) >= 1
  assert cap.expected_names == [0, 1]
  assert [(i[0], i[2], i[3]) for i in cap.expected_input_info] == [((2, 3), dtypes.float32, a.device), ((3,), dtypes.float32, b.device)]
  f.reset()
  assert f.captured is None


def test_captured_linear_lists_the_capture_as_public_tinygrad_does():
  # public tinygrad's `captured.linear` (its tests count a capture's kernels with it): one CALL per kernel or copy, over
  # the kernel's SINK (a COPY node for a copy) and the step's buffers, output first; running it recomputes the capture call
  from tinygrad.uop import Ops
  from tinygrad.engine.buffers import buffer_of
  from tinygrad import Device
  other = "PYTHON:1" if Device.DEFAULT.startswith("PYTHON") else "PYTHON"   # a copy to another device (DEV=PYTHON too)
  @TinyJit
  def f(a, b): return (a @ b).relu().realize(), (a.sum(0) + 1).realize(), a.to(other).realize()
  a, b = Tensor([[1., -2.], [3., 4.]]).realize(), Tensor([[1., 0.], [0., 1.]]).realize()
  for _ in range(3): out = f(a, b)
  cap = f.captured
  lin = cap.linear
  assert lin.op is Ops.LINEAR and lin is cap.linear and len(lin.src) == len(cap.jit_cache) >= 3
  assert sorted(c.src[0].op for c in lin.src) == sorted([Ops.SINK] * (len(lin.src) - 1) + [Ops.COPY])
  for c, step in zip(lin.src, cap.jit_cache):
    assert c.op is Ops.CALL and [buffer_of(u) for u in c.src[1:]] == step.bufs
  outs = {buffer_of(c.src[1]) for c in lin.src}
  assert all(o.uop.base.buffer in outs for o in out)   # (each returned tensor is a step's output)
  for o in out: o.assign(o.zeros_like()).realize()   # the outputs overwritten, then the listed steps run: the capture call's values
  realize_mod.run_linear(lin)
  np.testing.assert_array_equal(out[0].numpy(), [[1., 0.], [3., 4.]])
  np.testing.assert_array_equal(out[1].numpy(), [5., 3.])
  np.testing.assert_array_equal(out[2].numpy(), [[1., -2.], [3., 4.]])
def test_replay_reads_each_kind_of_input_tensor():
  # a replay takes a realized input's buffer directly and realizes the others first: a realized buffer, a reshape of one
  # (same buffer), a lazy tensor, a permuted view and a sliced view of realized tensors (new buffers), in a list and a dict
  @TinyJit
  def f(a, rest, extra=None): return (a * 2 + rest[0].reshape(2, 3) - rest[1] + extra["v"]).realize()
  rng = np.random.default_rng(0)
  for i in range(5):
    a, b, c, d = (rng.standard_normal(s).astype(np.float32) for s in ((2, 3), (6,), (3, 2), (2, 5)))
    ta, tb = Tensor(a).realize(), Tensor(b).realize()
    tc, td = Tensor(c).realize(), Tensor(d).realize()
    kinds = [(ta, tb.reshape(6), tc.T, td[:, 1:4]), (Tensor(a), tb, tc.permute(1, 0), td.shrink(((0, 2), (1, 4))))][i % 2]
    out = f(kinds[0], [kinds[1], kinds[2]], extra={"v": kinds[3]})
    np.testing.assert_allclose(out.numpy(), a * 2 + b.reshape(2, 3) - c.T + d[:, 1:4], rtol=1e-6, err_msg=f"call {i}")
  assert f.cnt == 5

def test_an_empty_input_tensor_replays_and_its_shape_is_checked():
  # an input with no elements has no buffer (realized, a constant): the call raised JitError "jit input is not realized
  # into a buffer (Ops.EXPAND)"; it is baked in like a plain value, with the other inputs read each call
  @TinyJit
  def f(e, b): return ((e * 2).sum(0) + b).realize()
  for i in range(4):
    e = [Tensor.zeros(0, 3).contiguous().realize(), Tensor.empty(0, 3)][i % 2]
    np.testing.assert_array_equal(f(e, Tensor([float(i)] * 3)).numpy(), [i, i, i], err_msg=f"call {i}")
  with pytest.raises(JitError, match=r"empty tensor \(0, 4\)"): f(Tensor.empty(0, 4), Tensor([1.0] * 3))

def test_a_view_passed_twice_replays():
  # one view of a bigger tensor passed as two arguments: the capture read it through one copy (one buffer for both), each
  # replay made a copy per argument and raised "captured with input buffers 0 and 1 the same buffer"
  f = TinyJit(lambda x, y: (x + y * 2).realize())
  for i in range(4):
    a = np.arange(6, dtype=np.float32) + i
    v = Tensor(a).realize()[1:4]
    np.testing.assert_array_equal(f(v, v).numpy(), a[1:4] * 3, err_msg=f"call {i}")

def _kernels(fn, *args) -> tuple[np.ndarray, int]:
  from tinygrad.helpers import GlobalCounters
  GlobalCounters.reset()
  out = fn(*args).numpy()
  return out, GlobalCounters.kernel_count

def test_prune_skips_kernels_that_read_no_input_and_stays_right():
  # public tinygrad's TinyJit(fn, prune=True) and @TinyJit(prune=True): the weight's transform (no input, no state) ran in
  # the capture call and is not replayed; a replay gives what the unpruned jit gives
  rng = np.random.default_rng(0)
  w = Tensor(rng.standard_normal((8, 8)).astype(np.float32)).realize()
  def step(x): return (x @ (w * 2 + 1).contiguous()).realize()
  pruned, plain, decorated = TinyJit(step, prune=True), TinyJit(step), TinyJit(prune=True)(step)
  for i in range(5):
    x = Tensor(rng.standard_normal((4, 8)).astype(np.float32))
    (a, ka), (b, kb), (c, _) = _kernels(pruned, x), _kernels(plain, x), _kernels(decorated, x)
    np.testing.assert_allclose(a, x.numpy() @ (w.numpy() * 2 + 1), rtol=1e-5)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    if i >= 2: assert (ka, kb) == (1, 2)   # (replays: the matmul alone)

def test_prune_keeps_kernels_whose_result_a_replay_changes():
  # kernels that read no input but reset a buffer a replayed kernel accumulates into, or read state a replayed kernel
  # updates, are replayed: pruning them would carry one call's state into the next (public tinygrad prunes these)
  count = Tensor.zeros(1).contiguous().realize()
  def step(x):
    acc = Tensor.zeros(3).contiguous()
    acc += x
    before = (count * 10).contiguous()
    count.assign(count + 1)
    return (acc + before).realize()
  pruned = TinyJit(step, prune=True)
  for i in range(5):
    x = Tensor([1.0, 2.0, 3.0]) * (i + 1)
    np.testing.assert_allclose(pruned(x).numpy(), np.array([1.0, 2.0, 3.0]) * (i + 1) + 10 * i)
  assert count.item() == 5

def test_prune_keeps_kernels_of_a_variable():
  from tinygrad import Variable
  @TinyJit(prune=True)
  def f(x, n): return (x + Tensor.arange(8)[:n].sum()).realize()
  for i in range(1, 6):
    v = Variable("n", 1, 8).bind(i)
    np.testing.assert_allclose(f(Tensor([1.0]), v).numpy(), [1.0 + sum(range(i))])

def test_prune_keeps_kernels_writing_what_the_caller_can_write():
  # an output (or state) computed from state alone, that the caller writes between calls: public tinygrad 0.14 skips its
  # kernel, and every replay after `b.assign(...)` returned [9, 9, 9], not 2*state (test_jit_fuzz's pruned fuzz found it)
  state, other = Tensor([1.0, 2.0, 3.0]).realize(), Tensor.zeros(3).contiguous().realize()
  @TinyJit(prune=True)
  def f(x):
    other.assign(state + 1)
    return (x + 1).realize(), (state * 2).realize()
  for i in range(5):
    a, b = f(Tensor([float(i)] * 3))
    assert a.tolist() == [i + 1.0] * 3 and b.tolist() == [2.0, 4.0, 6.0] and other.tolist() == [2.0, 3.0, 4.0], f"call {i}"
    b.assign(Tensor([9.0, 9.0, 9.0])).realize()
    other.assign(Tensor([7.0, 7.0, 7.0])).realize()

def test_training_on_bound_slices_of_a_data_tensor_replays():
  # hlb_cifar10's loop: the batch is x[i:i+bs] with i a bound Variable, and backward gives x (a float tensor in the graph)
  # a lazy .grad that accumulates one step's bind per step: a graph binding i to two values, which no realize can compute.
  # A replay computes the lazy tensors reading the weights it overwrites first; that one it must leave (it raised
  # VariableBindError at the first replay). Values as public tinygrad 0.14 gives them.
  from tinygrad import Variable, Context
  from tinygrad.nn.optim import SGD
  x = Tensor(np.arange(32, dtype=np.float32).reshape(8, 4))
  w = Tensor.ones(4).contiguous().realize()
  opt = SGD([w], lr=0.01)
  vi = Variable("i", 0, 6)
  @TinyJit
  def step(xb):
    loss = (xb * w).sum()
    opt.zero_grad()
    loss.backward()
    return loss.realize(*opt.schedule_step())
  with Context(TRAINING=1): losses = [step(x[vi.bind(i):vi.bind(i)+2]).item() for i in (0, 2, 4, 6, 0)]
  np.testing.assert_allclose(losses, [28.0, 85.36, 108.8, 67.6, -7.52], rtol=1e-5)
  np.testing.assert_allclose(w.numpy(), [-0.16, -0.26, -0.36, -0.46], rtol=1e-5)

def test_captured_from_another_process_is_refused_with_the_reason():
  with pytest.raises(NotImplementedError, match="pickle"): TinyJit(lambda x: x, captured=object())

def test_free_intermediates_frees_memory_and_the_next_replay_is_right():
  # public tinygrad's captured.free_intermediates(): the capture's scratch buffers go; the outputs, the inputs and state a
  # live tensor holds (a weight the function updates) stay, and the next replay allocates the scratch again
  from tinygrad.helpers import GlobalCounters
  rng = np.random.default_rng(1)
  wn = rng.standard_normal((64, 64)).astype(np.float32)
  w = Tensor(wn).realize()
  @TinyJit
  def f(x):
    h = (x @ w).relu().contiguous()   # (a buffer of its own: scratch)
    out = (h * 2).sum(1).realize()
    w.assign(w * 0.5)
    return out
  for i in range(4):
    xn = rng.standard_normal((32, 64)).astype(np.float32)
    out = f(Tensor(xn)).numpy()
    np.testing.assert_allclose(out, (np.maximum(xn @ wn, 0) * 2).sum(1), rtol=1e-4, atol=1e-4)
    wn = wn * 0.5
    if i == 3: assert GlobalCounters.mem_used == before   # (the replay allocated the scratch again: it does not write freed memory)
    if i == 2:
      before = GlobalCounters.mem_used
      f.captured.free_intermediates()
      assert GlobalCounters.mem_used <= before - 32 * 64 * 4   # (at least h's buffer)
  np.testing.assert_allclose(w.numpy(), wn, rtol=1e-6)

def test_jitbeam_searches_the_captured_kernels_only(monkeypatch):
  # public tinygrad's JITBEAM: the kernels a TinyJit captures are searched with that width, the first call's are not
  import tinygrad.codegen.search as search
  from tinygrad.helpers import Context
  calls: list[int] = []
  monkeypatch.setattr(search, "beam_search", lambda ast, dev, amt, *a, **k: calls.append(amt) or [])
  @TinyJit
  def f(a, b): return (a @ b + 1).realize()
  rng = np.random.default_rng(3)
  with Context(JITBEAM=2, BEAM=0, CACHELEVEL=1):   # (no program cache: a cached program is not searched again)
    for i in range(4):
      a, b = (rng.standard_normal((5, 7)).astype(np.float32), rng.standard_normal((7, 3)).astype(np.float32))
      np.testing.assert_allclose(f(Tensor(a), Tensor(b)).numpy(), a @ b + 1, rtol=1e-5, atol=1e-5)
      assert calls == ([] if i == 0 else [2])   # (the capture's kernel: once)

def test_a_dict_argument_binds_by_key_whatever_its_order():
  # {"b": y, "a": x} at a replay reads x where the capture read "a" (public tinygrad binds in the order given: y as "a");
  # other keys raise
  @TinyJit
  def f(d): return (d["a"] * 10 + d["b"]).realize()
  for i in range(5):
    a, b = Tensor([float(i)]), Tensor([100.0])
    np.testing.assert_equal(f({"a": a, "b": b} if i % 2 else {"b": b, "a": a}).numpy(), [10.0 * i + 100])
  with pytest.raises(JitError, match="keys"): f({"a": Tensor([1.0]), "c": Tensor([2.0])})

def test_a_lazy_input_is_realized_at_every_call():
  # the function sees realized inputs at every call, a lazy one's too: the view of x it realizes stays a view, which sees
  # the write into x (called directly with a lazy x, the view would be realized into a copy of the old values)
  state = Tensor.zeros(3).contiguous().realize()
  def fn(x):
    fx = x.flip(0)
    Tensor.realize(state, fx)
    x.assign(x * 2 - 1).realize()
    state.assign(state + fx)
    return x
  f, want = TinyJit(fn), np.zeros(3, np.float32)
  for call in range(5):
    v = np.array([1, 2, 3], np.float32) * (call + 1)
    x = Tensor(v) * 1 if call % 2 else Tensor(v).realize()
    np.testing.assert_equal(f(x).numpy(), v * 2 - 1)
    want += (v * 2 - 1)[::-1]
    np.testing.assert_equal(state.numpy(), want)

@pytest.mark.parametrize("case", ["whole", "iadd", "view", "arange", "sharded", "sharded view"])
def test_lazy_state_written_by_the_function_is_updated_by_every_replay(case):
  # the function's own state not yet realized (`w = Tensor.zeros(4).contiguous()`) took each write as a graph of its own
  # (nothing else can see an unrealized tensor's buffer), so the capture baked zeros + x into the kernel: every replay gave
  # 2 and w stayed 2 (plain calls: 1, 2, 3, 4; public tinygrad too). Found by probe42 writing lazy state under TinyJit
  devs = ("CPU:0", "CPU:1")
  def make():
    w = Tensor.arange(4).float() if case == "arange" else Tensor.zeros(4).contiguous()
    return w.shard(devs, 0) if case.startswith("sharded") else w
  def update(w: Tensor, x: Tensor) -> None:
    if case == "iadd": w += x
    elif case.endswith("view"): w[1:3].assign(w[1:3] * 2 + x[:2])
    else: w.assign(w * 2 + x)
  x = Tensor.ones(4).contiguous().realize()
  if case.startswith("sharded"): x = x.shard(devs, 0).realize()
  got, want = [], []
  for jit in (False, True):
    w = make()
    def fn(x: Tensor) -> Tensor:
      update(w, x)
      return (w * 1).contiguous()
    f = TinyJit(fn) if jit else fn
    (got if jit else want).append([f(x).tolist() for _ in range(4)] + [w.tolist()])
  assert got == want

@pytest.mark.parametrize("case", ["arange", "full", "expr", "view", "sharded", "replicated"])
@pytest.mark.parametrize("change", ["assign", "iadd", "setitem"])
def test_lazy_state_the_function_reads_follows_later_writes(case, change):
  # state the function only reads, still lazy at its first call (`b = Tensor.arange(4).float()`), was computed inside the
  # captured kernels, and a later write into it (into a lazy tensor: a new graph of its own) never reached a replay: f(x)
  # = x + b stayed [1, 2, 3, 4] after b += 1 (public tinygrad 0.14 too). Found by probe42 probing JIT replays of in-place updates
  devs = ("CPU:0", "CPU:1")
  def make() -> Tensor:
    if case == "full": return Tensor.full((4,), 2.0)
    if case == "expr": return Tensor.zeros(4).contiguous().realize() + 1
    if case == "view": return Tensor.arange(8).float().contiguous().realize()[2:6]
    b = Tensor.arange(4).float()
    return b.shard(devs, 0) if case == "sharded" else b.shard(devs) if case == "replicated" else b
  x = Tensor.ones(4).contiguous().realize()
  if case in ("sharded", "replicated"): x = x.shard(devs, 0 if case == "sharded" else None).realize()
  got, want = [], []
  for jit in (False, True):
    b = make()
    def fn(x: Tensor) -> Tensor: return (x + b).contiguous()
    f = TinyJit(fn) if jit else fn
    outs = [f(x).tolist() for _ in range(3)]
    if change == "assign": b.assign(b * 0 + 10)
    elif change == "iadd": b += 1
    else: b[1] = 5.0
    (got if jit else want).append(outs + [f(x).tolist() for _ in range(2)] + [b.tolist()])
  assert got == want

def test_a_lazy_tensor_keeps_its_value_across_a_replay():
  # a lazy tensor built before a call that updates what it reads (an input, the function's own state, a returned buffer)
  # keeps the value it had when built, as without the JIT: the replay computes it first
  w = Tensor([10.0, 20.0, 30.0]).contiguous().realize()
  @TinyJit
  def f(t):
    t.assign(t * 2 + 1)
    w.assign(w + t)
    return (t * 1).contiguous()
  t, out = Tensor([1.0, 2.0, 3.0]).contiguous().realize(), None
  for i in range(5):
    s, sw, so = t * 2, w - 1, (out * 3 if out is not None else None)
    want_s, want_w, want_o = [2 * v for v in t.tolist()], [v - 1 for v in w.tolist()], (None if out is None else [3 * v for v in out.tolist()])
    out = f(t)
    assert s.tolist() == want_s and sw.tolist() == want_w, i
    if so is not None: assert so.tolist() == want_o, i
  # a view of an input is no lazy value: it shows the update, as torch's views do
  v = t[1:]
  f(t)
  assert v.tolist() == t.tolist()[1:]

@pytest.mark.parametrize("update", ["add", "setitem", "zero"])
def test_an_update_made_before_the_capture_call_is_not_captured(update):
  # an assign into the function's state made outside it and not run yet was realized inside the capture, so it was captured
  # and every replay applied it again (public tinygrad's too): w.assign(w + 100) before call 2 gave w 304 after 4 calls, not 104
  w = Tensor.zeros(4).contiguous().realize()
  @TinyJit
  def f(x):
    w.assign(w + 1)
    return (x + w).contiguous()
  x = Tensor.ones(4).contiguous().realize()
  f(x)
  if update == "add": w.assign(w + 100)
  elif update == "setitem": w[1:3] = 100
  else: w.assign(w * 0)
  want = {"add": [101] * 4, "setitem": [1, 100, 100, 1], "zero": [0] * 4}[update]
  outs = [f(x).numpy() for _ in range(3)]
  np.testing.assert_array_equal(w.numpy(), np.array(want) + 3)
  np.testing.assert_array_equal(outs[-1], np.array(want) + 4)

def test_an_update_made_outside_into_a_buffer_the_function_only_reads_runs_before_the_replay():
  # buf.assign(batch) before each call, into a buffer the function reads and never writes: the replay read the old value,
  # and the next call's assign replaced this one before it ran (public tinygrad's too): outputs 1, 11, 11, 11, 11
  buf = Tensor.zeros(4).contiguous().realize()
  @TinyJit
  def f(x): return (x + buf).contiguous()
  x, outs = Tensor.ones(4).contiguous().realize(), []
  for i in range(5):
    if i == 3: buf[1:3] = 500.0   # (an update of a part of it too)
    else: buf.assign(Tensor.full((4,), float(i * 10)).contiguous())
    outs.append(f(x).tolist())
  assert outs == [[1.0] * 4, [11.0] * 4, [21.0] * 4, [21.0, 501.0, 501.0, 21.0], [41.0] * 4]

def test_a_replay_looks_for_lazy_readers_only_when_graphs_changed(monkeypatch):
  from tinygrad.engine import jit
  looks: list[int] = []
  orig = jit._lazy_readers
  monkeypatch.setattr(jit, "_lazy_readers", lambda written: looks.append(1) or orig(written))
  @TinyJit
  def f(t): t.assign(t + 1).realize()
  t = Tensor([1.0]).contiguous().realize()
  for _ in range(3): f(t)
  n = len(looks)
  for _ in range(5): f(t)   # nothing built between the calls: no look
  assert len(looks) == n and t.item() == 9.0
  s = t * 2                 # a new lazy tensor: the next replay looks (and computes it first)
  f(t)
  assert len(looks) == n + 1 and s.item() == 18.0 and t.item() == 10.0

def test_kernels_run_with_capturing_off_are_not_replayed():
  # public tinygrad's `with Context(CAPTURING=0):` inside a jitted function: what it runs is left out of the capture
  from tinygrad import Context
  count = Tensor([0.]).contiguous().realize()
  @TinyJit
  def f(a):
    with Context(CAPTURING=0): count.assign(count + 1).realize()
    return (a * 2).realize()
  for i in range(5): np.testing.assert_array_equal(f(Tensor([float(i)])).numpy(), [2. * i])
  assert len(f.captured.linear.src) == 1 and f.captured.linear.src[0].src[0].op.name == "SINK"
  assert count.item() == 2   # the first call and the capture ran it; the replays did not

# ---- the capture's memory plan: intermediates share buffers (public tinygrad plans its captured kernels' memory too) ----

def _places(f: TinyJit) -> set[tuple[int, int]]:
  # the memory the captured steps use: (buffer, byte offset), a plan's view (BufferView) by the buffer it is placed in
  return {(id(b.base), b.offset) if hasattr(b, "base") else (id(b), 0) for s in f.steps for b in s.bufs}

@pytest.mark.parametrize("arena", [True, False])
def test_intermediates_share_memory_only_after_their_last_reader(arena, monkeypatch):
  # a [0, 1], b [1, 2], c [2, 3] (the steps using them; e and the output are held by the output's autograd graph): c takes
  # a's memory, b does not (b's kernel reads a while it writes b: its flip would read values b already overwrote). Five
  # places: the input, two shared, e and the output. Placed in one buffer (an allocator with _offset), or sharing whole ones
  from tinygrad import Device
  if not arena: monkeypatch.delattr(type(Device[Device.DEFAULT].allocator), "_offset", raising=False)
  @TinyJit
  def f(x):
    a = (x + 1).contiguous().realize()
    b = (a.flip(0) * 2).contiguous().realize()
    c = (b.flip(0) + 3).contiguous().realize()
    e = (c.flip(0) * c).contiguous().realize()
    return (e + 1).realize()
  rng = np.random.default_rng(5)
  for _ in range(5):
    xn = rng.standard_normal(64).astype(np.float32)
    c = ((xn + 1)[::-1] * 2)[::-1] + 3
    np.testing.assert_array_equal(f(Tensor(xn)).numpy(), c[::-1] * c + 1)
  assert len(_places(f)) == 5

def test_a_value_updated_in_place_by_a_later_realize_keeps_one_life():
  # a is computed by a realize whose plan shares memory (t's for a), then a later realize writes part of it in place and a
  # third reads it all: one value over the three. Named by the first realize and unnamed by the others (their plans were
  # empty), it was two values with lives of their own, placed apart: the update wrote a[:2] into other memory and the read
  # saw garbage for a[2:]
  @TinyJit
  def f(x, y):
    t = (x + 1).contiguous()
    u = (t.flip(0) * 2).contiguous()
    a = (u.flip(0) + 3).contiguous().realize()
    a[0:2].assign(y).realize()
    return (a * 2).realize()
  rng = np.random.default_rng(9)
  for _ in range(5):
    xn, yn = rng.standard_normal(64).astype(np.float32), rng.standard_normal(2).astype(np.float32)
    want = (xn + 1) * 2 + 3
    want[:2] = yn
    np.testing.assert_array_equal(f(Tensor(xn), Tensor(yn)).numpy(), want * 2)

class _Net:
  # convs, a batchnorm and a linear layer: activations of several sizes, saved by the forward for the backward
  def __init__(self):
    from tinygrad import nn
    self.c1, self.bn, self.c2, self.l = nn.Conv2d(3, 8, 3), nn.BatchNorm(8), nn.Conv2d(8, 16, 3, stride=2), nn.Linear(144, 10)
  def __call__(self, x: Tensor) -> Tensor: return self.l(self.c2(self.bn(self.c1(x)).relu()).relu().flatten(1))

def _train_step(opt_name: str):
  from tinygrad import nn
  from tinygrad.nn.state import get_parameters
  Tensor.manual_seed(7)
  net = _Net()
  params = get_parameters(net)
  opt = nn.optim.SGD(params, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.1) if opt_name == "sgd" else nn.optim.Adam(params, lr=0.01)
  def step(x: Tensor, y: Tensor) -> Tensor:
    loss = net(x).sparse_categorical_crossentropy(y)
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.realize()
  return net, step

@pytest.mark.parametrize("opt_name,jit", [("sgd", 1), ("adam", 2)])
def test_jitted_training_step_with_shared_intermediates_is_bit_identical(opt_name, jit):
  # the plan shares the activations the backward reads (a buffer reused one kernel early fails this: found by making it so)
  from tinygrad.helpers import Context
  from tinygrad.nn.state import get_parameters
  rng = np.random.default_rng(0)
  data = [(rng.standard_normal((4, 3, 10, 10)).astype(np.float32), rng.integers(0, 10, 4).astype(np.int32)) for _ in range(6)]
  with Context(TRAINING=1, JIT=jit):
    ref_net, ref_step = _train_step(opt_name)
    net, step = _train_step(opt_name)
    jstep = TinyJit(step)
    for i, (x, y) in enumerate(data):
      want, got = ref_step(Tensor(x), Tensor(y)).numpy(), jstep(Tensor(x), Tensor(y)).numpy()
      assert want.tobytes() == got.tobytes(), f"step {i}: loss {got} != {want}"
      for a, b in zip(get_parameters(ref_net), get_parameters(net)): assert a.numpy().tobytes() == b.numpy().tobytes(), f"step {i}"

def test_jitted_training_step_memory():
  # what a jitted training step keeps allocated after its capture and a replay (weights, optimizer state, gradients and the
  # capture's buffers): 99 KB with the plan, 146 KB without (NO_MEMORY_PLANNER=1); the bound leaves ~15% headroom
  import gc
  from tinygrad.helpers import Context, GlobalCounters
  rng = np.random.default_rng(0)
  used = {}
  for off in (0, 1):
    gc.collect()
    base = GlobalCounters.mem_used
    with Context(TRAINING=1, NO_MEMORY_PLANNER=off):
      _, step = _train_step("sgd")
      jstep = TinyJit(step)
      for _ in range(3): jstep(Tensor(rng.standard_normal((4, 3, 10, 10)).astype(np.float32)), Tensor(rng.integers(0, 10, 4).astype(np.int32)))
      used[off] = GlobalCounters.mem_used - base
    del jstep, step
  assert used[0] < 115_000 and used[0] < used[1] * 0.8, used

def _fake_steps(prog: list[tuple[int, list[int]]], sizes: list[int], share: dict[int, int], old: frozenset = frozenset()):
  """ExecSteps of a program without kernels: step i writes value prog[i][0] and reads the values prog[i][1] (its own: what
  it wrote); value v is sizes[v] bytes, in a Buffer of its own or in value share[v]'s (as a realize's plan puts one after
  another), each with a BUFFER UOp of its own (ExecStep.values), new in its realize but those in `old` (state)."""
  from types import SimpleNamespace
  from tinygrad.device import Buffer
  from tinygrad.engine.realize import CompiledRunner, ExecStep
  from tinygrad.engine.buffers import new_buffer
  from tinygrad import Device
  vals = [new_buffer(Device.DEFAULT, n // 4, dtypes.float32) for n in sizes]
  bufs: dict[int, Buffer] = {}
  for v, n in enumerate(sizes): bufs[v] = bufs[share[v]] if v in share else Buffer(Device.DEFAULT, n // 4, dtypes.float32)
  steps = []
  for w, reads in prog:
    runner = CompiledRunner.__new__(CompiledRunner)
    runner.p = SimpleNamespace(outs=[0], ins=list(range(1, 1 + len(reads))))
    steps.append(ExecStep(runner, [bufs[w]] + [bufs[r] for r in reads], {}, [vals[v] for v in [w, *reads]], [v not in old for v in [w, *reads]]))
  return steps, bufs

def _memory(b) -> tuple[int, int, int]:
  # (buffer, first byte, end) of a Buffer or a plan's view
  return (id(b.base), b.offset, b.offset + b.nbytes) if hasattr(b, "base") else (id(b), 0, b.nbytes)

def test_plan_gives_each_value_of_a_shared_buffer_its_own_life():
  # A [0, 1] and B [3, 4] are one Buffer (a realize's plan reused A's for B), C [1, 2] and D [2, 3] between them. As one
  # life [0, 4], A-and-B met C and D: 5 KB. Apart, A takes D's bytes and B C's: 4 KB
  from tinygrad.engine.jit import _plan_memory
  A, C, D, B, OUT = range(5)
  prog = [(A, []), (C, [A]), (D, [C]), (B, [D]), (OUT, [B])]
  steps, bufs = _fake_steps(prog, [1024, 2048, 2048, 1024, 1024], {B: A})
  planned = _plan_memory(steps, [], {id(bufs[OUT])})
  where = {w: _memory(s.bufs[0]) for (w, _), s in zip(prog, planned)}
  assert where[OUT] == (id(bufs[OUT]), 0, 1024)   # (held: stays)
  assert max(e for _, _, e in (where[v] for v in (A, B, C, D))) == 4096 and where[A] != where[B]

def test_plan_keeps_every_value_of_a_buffer_that_stays():
  # A [0, 1] and B [2, 3] share a Buffer (a realize's plan), B's kernel reads B, which is no new value (state: B stays in
  # its buffer). A moved out took memory beside a buffer that stays allocated anyway (stable diffusion's UNet: 22.9 -> 28.2 MB)
  from tinygrad.engine.jit import _plan_memory
  A, C, B, OUT = range(4)
  steps, bufs = _fake_steps([(A, []), (C, [A]), (B, [C, B]), (OUT, [B])], [1024, 1024, 1024, 1024], {B: A}, frozenset({B}))
  planned = _plan_memory(steps, [], {id(bufs[OUT])})
  assert planned[0].bufs[0] is bufs[A] and planned[2].bufs[0] is bufs[B]

def test_plan_moves_a_new_value_whose_kernel_reads_what_it_wrote():
  # a softmax kernel stores its max and sum and reads them back: its output is new (what the memory held before does not
  # matter), so it shares memory like any value (stable diffusion's two 8.4 MB attention weights stayed apart: 21.0 -> 18.7 MB)
  from tinygrad.engine.jit import _plan_memory
  A, C, B, OUT = range(4)
  steps, bufs = _fake_steps([(A, [A]), (C, [A]), (B, [C, B]), (OUT, [B])], [1024, 1024, 1024, 1024], {})
  planned = _plan_memory(steps, [], {id(bufs[OUT])})
  assert _memory(planned[0].bufs[0]) == _memory(planned[2].bufs[0])   # (A [0, 1] and B [2, 3]: one place)

def test_plan_follows_a_later_realize_reading_a_shared_buffer_by_its_first_values_name():
  # A [0, 1] and B [2, ...] share a Buffer (a realize's plan), and a later realize of the call reads B there under A's UOp,
  # not new: a realize names a Buffer by its first value's UOp. Keyed by that name, A lived to step 3 and B was put apart,
  # so step 3 read A's memory (mamba's jitted decode step: tokens 13 57 13 where JIT=0 gives 10 17 61)
  from tinygrad.engine.jit import _plan_memory
  A, C, B, OUT = range(4)
  steps, bufs = _fake_steps([(A, []), (C, [A]), (B, [C]), (OUT, [B])], [1024, 1024, 1024, 1024], {B: A})
  steps[3].values[1], steps[3].new[1] = steps[0].values[0], False
  planned = _plan_memory(steps, [], {id(bufs[OUT])})
  assert _memory(planned[3].bufs[1]) == _memory(planned[2].bufs[0])

@settings(max_examples=150, deadline=None)
@given(st.data())
def test_plan_never_lets_a_read_see_another_value(data):
  # random programs (each step writes a value and reads live ones; some values share a Buffer as a realize's plan shares
  # them: one's last use before the other's first) run on a byte-level model of the planned memory: every read must see
  # the value the step reads, in both kinds of plan
  from tinygrad import Device
  from tinygrad.engine.jit import _plan_memory
  n = data.draw(st.integers(2, 12))
  sizes = [data.draw(st.sampled_from([256, 512, 1024, 2048])) for _ in range(n)]
  # (a step may read its own value: what it wrote, a new value's kernel reading back its max and sum)
  prog = [(i, sorted(set(data.draw(st.lists(st.integers(0, i), max_size=3))))) for i in range(n)]
  last = {v: max([i for i, (_, rs) in enumerate(prog) if v in rs] + [v]) for v in range(n)}
  share: dict[int, int] = {}
  for v in range(n):
    owner = data.draw(st.sampled_from([None] + [u for u in range(v) if sizes[u] == sizes[v] and u not in share and
                                                all(last[w] < v for w in [u] + [k for k, o in share.items() if o == u])]))
    if owner is not None: share[v] = owner
  held_values = [v for v in range(n) if data.draw(st.booleans())]   # (outputs, state: they stay, with their Buffer's values)
  # a later realize reads a shared Buffer's value under its first value's UOp, not new (as a realize's plan names it)
  renamed = [(i, j) for i, (w, reads) in enumerate(prog) for j, r in enumerate(reads, 1) if r != w and r in share and data.draw(st.booleans())]
  for arena in (True, False):
    steps, bufs = _fake_steps(prog, sizes, share)
    for i, j in renamed: steps[i].values[j], steps[i].new[j] = steps[share[prog[i][1][j - 1]]].values[0], False
    alloc = type(Device[Device.DEFAULT].allocator)
    saved = alloc.__dict__.get("_offset")
    if not arena and saved is not None: delattr(alloc, "_offset")   # (whole buffers shared)
    try: planned = _plan_memory(steps, [], {id(bufs[v]) for v in held_values})
    finally:
      if not arena and saved is not None: alloc._offset = saved
    keep = {id(bufs[v]) for v in held_values}
    assert all(p is b for s0, s in zip(steps, planned) for b, p in zip(s0.bufs, s.bufs) if id(b) in keep)   # (held: untouched)
    mem: dict[tuple[int, int], int] = {}
    for (w, reads), s in zip(prog, planned):
      # (a kernel reads and writes at once: the memory of what it writes is apart from all it reads)
      ranges = [_memory(b) for r, b in zip(reads, s.bufs[1:]) if r != w]
      out = _memory(s.bufs[0])
      assert all(out[0] != b[0] or out[2] <= b[1] or b[2] <= out[1] for b in ranges), f"step {w} writes what it reads"
      for r, b in zip(reads, s.bufs[1:]):
        if r == w:
          assert _memory(b) == out   # (its own value: the same memory)
          continue
        base, lo, hi = _memory(b)
        assert all(mem.get((base, x)) == r for x in range(lo, hi, 256)), f"value {r} read at step {w} was overwritten"
      base, lo, hi = _memory(s.bufs[0])
      for x in range(lo, hi, 256): mem[(base, x)] = w

def test_constant_state_read_on_other_devices_stays_constant():
  # examples/llama3.py's Int8Embedding under TinyJit with sharded weights: its `self.arange` (a lazy Tensor.arange on the
  # default device) is compared with token ids on two devices. The first call realized it as the function's state, a buffer
  # on one device, and the capture call then raised "tensors on different devices" (bb6c90b; upstream_programs' llama3)
  devs = ("CPU", "CPU:1")
  arange = Tensor.arange(6).unsqueeze(-1)
  w = Tensor(np.arange(24, dtype=np.float32).reshape(6, 4)).shard(devs, axis=-1).realize()
  def emb(idx: Tensor) -> Tensor:
    big = idx.shape + (6, 4)
    return (arange.expand(big) == idx.reshape(idx.shape + (1, 1)).expand(big)).mul(w).sum(-2).realize()
  f = TinyJit(emb)
  for i in range(5):
    ids = np.array([[i % 6, (3 * i + 1) % 6]], np.int32)
    np.testing.assert_equal(f(Tensor(ids, device=devs)).numpy(), np.arange(24, dtype=np.float32).reshape(6, 4)[ids])
  assert base_buffer(arange.uop) is None   # (still its graph of constants)
  # a write into it would not reach the replays (its capture computes it in the kernels): the next call raises
  arange += 1
  with pytest.raises(JitError, match="tensor of constants"): f(Tensor(np.array([[1, 2]], np.int32), device=devs))

def test_dropout_rate_changed_after_the_capture_raises():
  # the capture bakes nn.Dropout's p in: `drop.p = 0.9` after it replayed dropping half the elements without a word
  from tinygrad import nn
  drop, x = nn.Dropout(0.5), Tensor.ones(4000).contiguous().realize()
  prev = Tensor.training
  try:
    Tensor.training = True
    f = TinyJit(lambda x: (drop(x) != 0).sum())
    for _ in range(3): assert 1700 < f(x).item() < 2300
    drop.p = 0.9
    with pytest.raises(JitError, match=r"Dropout\.p = 0\.5, now it is 0\.9.*\.reset\(\)"): f(x)
    f.reset()
    for _ in range(3): assert f(x).item() < 600
  finally: Tensor.training = prev

def test_hyperparameter_of_the_first_of_two_layers_of_one_class_is_checked():
  # each layer's (and optimizer's) attribute is its own check: keyed by class name, the second Dropout's read replaced the
  # first's, and `first.p = 0.9` replayed dropping at 0.5 without a word
  from tinygrad import nn
  first, second, x = nn.Dropout(0.5), nn.Dropout(0.5), Tensor.ones(4000).contiguous().realize()
  prev = Tensor.training
  try:
    Tensor.training = True
    f = TinyJit(lambda x: (second(first(x)) != 0).sum())
    for _ in range(3): assert 700 < f(x).item() < 1300
    first.p = 0.9
    with pytest.raises(JitError, match=r"Dropout\.p = 0\.5, now it is 0\.9"): f(x)
  finally: Tensor.training = prev

def test_batchnorm_momentum_changed_after_the_capture_raises():
  # the capture bakes BatchNorm's momentum in: `bn.momentum = 0.5` after it replayed updating the running mean at 0.1
  from tinygrad import nn
  bn, x = nn.BatchNorm(2), Tensor(np.arange(8, dtype=np.float32).reshape(4, 2)).realize()
  prev = Tensor.training
  try:
    Tensor.training = True
    f = TinyJit(lambda x: bn(x).realize(bn.running_mean, bn.running_var))
    for _ in range(3): f(x)
    bn.momentum = 0.5
    before = bn.running_mean.numpy()
    with pytest.raises(JitError, match=r"BatchNorm\.momentum = 0\.1, now it is 0\.5"): f(x)
    f.reset()
    f(x)
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.5 * before + 0.5 * np.array([3.0, 4.0]), rtol=1e-6)
  finally: Tensor.training = prev

def test_replay_with_the_last_calls_tensors_sees_every_change_to_them():
  # a call passing the last replay's tensors again (their UOps unchanged) skips the scan of its arguments: each way of
  # changing such a tensor between calls must still give the function's value, and a changed shape must still raise
  jf = TinyJit(lambda a, b: (a * 2 + b).realize())
  a, b = Tensor.arange(4).float().contiguous().realize(), Tensor.ones(4).contiguous().realize()
  want = lambda: a.numpy() * 2 + b.numpy()
  for _ in range(4): np.testing.assert_equal(jf(a, b).numpy(), want())
  a.assign(a + 10).realize()
  np.testing.assert_equal(jf(a, b).numpy(), want())
  a.assign(a * 3)   # lazy: the call realizes it first
  np.testing.assert_equal(jf(a, b).numpy(), [60., 66., 72., 78.] + np.ones(4))
  b[1:3] = Tensor([5., 6.])
  np.testing.assert_equal(jf(a, b).numpy(), want())
  a += 1
  np.testing.assert_equal(jf(a, b).numpy(), want())
  np.testing.assert_equal(jf(b, a).numpy(), b.numpy() * 2 + a.numpy())
  np.testing.assert_equal(jf(a, a).numpy(), a.numpy() * 3)
  a.replace(Tensor.ones(4, dtype=dtypes.int32).contiguous().realize())   # the same tensor, another dtype
  with pytest.raises(JitError, match="captured with inputs"): jf(a, b)

def test_replay_does_not_keep_the_last_calls_inputs_alive():
  import gc, weakref
  jf = TinyJit(lambda x: (x + 1).realize())
  for _ in range(3): jf(Tensor.rand(1000).realize())
  x = Tensor.rand(1000).realize()
  jf(x)
  buf = weakref.ref(base_buffer(x.uop).buffer)
  del x
  gc.collect()
  assert buf() is None, "the jit held the last call's input buffer"
