"""After a realize, every live tensor's graph reads what it computed: an update that ran is its target's buffer (it must
never run twice), a kept result its buffer. The graphs are rewritten in one walk over their union (substitute_all), so
tensors that share nodes, or are one hash-consed graph, must each get their own graph right."""
import numpy as np
from tinygrad import Tensor
from tinygrad.helpers import GlobalCounters
from tinygrad.uop import Ops

def _ops(t: Tensor) -> set:
  return {u.op for u in t.uop.toposort()}

def test_graphs_sharing_an_update_that_ran_read_its_buffer():
  w0 = np.array([1.0, 2.0, 3.0], dtype=np.float32)
  w = Tensor(w0).contiguous().realize()
  w.assign(w * 2)                  # pending: w's graph is the update
  shared = w + 1
  a, b = shared * 3, shared.exp()  # both over `shared`, over the update
  c, d = a + b, a + b              # one hash-consed graph, two tensors
  assert c.uop is d.uop
  e = (w + 1).exp() * 0 + 5        # over the update too, built apart from the others
  a.realize()                      # runs the update once
  for t in (w, b, c, d, e, shared): assert Ops.ASSIGN not in _ops(t)
  new = w0 * 2
  np.testing.assert_allclose(w.numpy(), new)
  np.testing.assert_allclose(a.numpy(), (new + 1) * 3, rtol=1e-6)
  np.testing.assert_allclose(b.numpy(), np.exp(new + 1), rtol=1e-6)
  np.testing.assert_allclose(c.numpy(), (new + 1) * 3 + np.exp(new + 1), rtol=1e-6)
  np.testing.assert_allclose(d.numpy(), (new + 1) * 3 + np.exp(new + 1), rtol=1e-6)
  np.testing.assert_allclose(e.numpy(), 5)
  np.testing.assert_allclose(w.numpy(), new)   # (realizing the others applied nothing again)

def test_an_update_read_by_other_live_tensors_is_applied_once():
  x0 = np.arange(6, dtype=np.float32).reshape(2, 3)
  x = Tensor(x0).contiguous().realize()
  before = x + 0                   # reads x's buffer: the realize that runs the update computes it first (torch's value)
  x += 1                           # pending in-place update
  views = [x[i] * (i + 2) for i in range(2)]   # views of the update
  total = x.sum()
  views[0].realize()
  GlobalCounters.reset()
  np.testing.assert_allclose(views[1].numpy(), (x0[1] + 1) * 3)
  np.testing.assert_allclose(total.numpy(), (x0 + 1).sum())
  np.testing.assert_allclose(before.numpy(), x0)
  np.testing.assert_allclose(x.numpy(), x0 + 1)
  np.testing.assert_allclose(views[0].numpy(), (x0[0] + 1) * 2)
  x += 1                           # a second update reads the first one's result, once
  np.testing.assert_allclose(x.numpy(), x0 + 2)

def test_many_live_tensors_over_a_chain_of_updates():
  # a chain of updates with a read after each, realized from the middle: each read keeps the value w had when it was
  # built, as in torch (an update that a live tensor reads runs at the next assign, and that tensor is computed before the
  # write after it), and no update runs twice
  w = Tensor(np.ones(4, dtype=np.float32)).contiguous().realize()
  reads = []
  for i in range(20):
    w.assign(w + 1)
    reads.append(w * (i + 1))
  reads[9].realize()
  for r in reads[:10]: assert Ops.ASSIGN not in _ops(r)
  for i, r in enumerate(reads): np.testing.assert_allclose(r.numpy(), (i + 2) * (i + 1) * np.ones(4))
  np.testing.assert_allclose(w.numpy(), 21 * np.ones(4))

def test_one_graph_twice_with_an_update_it_reads():
  # e2 is e1's graph (hash-consed): realized after the update had run (in the list after e1, or not in it at all), it read
  # the new b (e2 was [22, 24, 26]); each of the two keeps the old value, in a buffer of its own. On one device and on
  # three (each shard realized the same way)
  for devs in (None, ("CPU:0", "CPU:1", "CPU:2")):
    for order in ("b e1 e2", "e1 e2 b", "b e1", "e1 b"):
      b = Tensor([1.0, 2.0, 3.0]) if devs is None else Tensor([1.0, 2.0, 3.0]).shard(devs, axis=0)
      b.realize()
      e1, e2 = b * 2, b * 2
      b.assign(b + 10)
      Tensor.realize(*[{"b": b, "e1": e1, "e2": e2}[n] for n in order.split()])
      e1 += 100
      assert (b.tolist(), e1.tolist(), e2.tolist()) == ([11.0, 12.0, 13.0], [102.0, 104.0, 106.0], [2.0, 4.0, 6.0]), (devs, order)

def test_walks_over_live_lazy_tensors_skip_realized_ones_and_find_rebound_ones():
  # an update's realize walks the lazy tensors from an index, not every live one (a model's weights): realized tensors
  # leave it, and one rebound to a graph again (an assign, replace, a view of a rebound base) is back in it
  from tinygrad import tensor as T
  held = [Tensor.empty(4).realize() for _ in range(500)]
  w = Tensor([1.0, 2.0, 3.0, 4.0]).contiguous().realize()
  r = Tensor([5.0, 6.0, 7.0, 8.0]).contiguous().realize()
  lazy = {id(t) for t in T.lazy_tensors()}
  assert not any(id(h) in lazy for h in held) and id(w) not in lazy
  assert len(T.maybe_lazy) < 400       # (dropped from the index by the walk, not only skipped)
  before = w * 10                      # reads w's value now: the update below must compute it first
  w.assign(w + 1)                      # a realized tensor becomes lazy again
  r.replace(Tensor([1.0, 1.0, 1.0, 1.0]) * 3)
  lazy = {id(t) for t in T.lazy_tensors()}
  assert id(w) in lazy and id(r) in lazy and id(before) in lazy
  w.realize()
  np.testing.assert_allclose(before.numpy(), [10, 20, 30, 40])
  np.testing.assert_allclose(w.numpy(), [2, 3, 4, 5])
  np.testing.assert_allclose(r.numpy(), [3, 3, 3, 3])
  assert id(w) not in {id(t) for t in T.lazy_tensors()}
  v = w[1:3]                           # a view of a realized tensor: in the index while it views a buffer
  w.assign(w * 2)
  after = v + 0                        # a graph built over the pending update through the view
  w.realize()
  np.testing.assert_allclose(after.numpy(), [6, 8])
  np.testing.assert_allclose(v.numpy(), [6, 8])

def test_an_update_does_not_walk_live_lazy_graphs_that_cannot_read_it():
  # each random draw is an update of the generator's state: building a model (a lazy random init per layer) walked every
  # earlier layer's init graph at each draw, in the readers' search and in the rewrite of the live graphs (80 nn.Linear
  # took 12 s, 0.14 2.4 s). Counted: the nodes those walks see do not grow with the lazy graphs that read other buffers
  import sys
  from tinygrad.uop import ops as U
  def nodes_walked(n_live: int) -> int:
    live = [Tensor.rand(8, 8) * 2 + 1 for _ in range(n_live)]   # lazy graphs reading their own draws' buffers
    seen = [0]
    def prof(frame, event, arg):
      if event == "call" and frame.f_code.co_name in ("leaf", "_rebuild"): seen[0] += 1
    sys.setprofile(prof)
    try: Tensor.rand(4).realize()
    finally: sys.setprofile(None)
    assert all(t.shape == (8, 8) for t in live)
    return seen[0]
  few, many = nodes_walked(1), nodes_walked(40)
  assert many <= few + 50, (few, many)
  # a graph that does read the updated buffer is still found, and keeps its value (the readers' rule)
  w = Tensor([1.0, 2.0]).contiguous().realize()
  others = [Tensor.rand(8) + 1 for _ in range(20)]
  before = w * 3
  w += 1
  w.realize()
  np.testing.assert_allclose(before.numpy(), [3, 6])
  assert U.buffers_reached(others[0].uop) is not None and len(others) == 20
