"""The scheduler lowers each kernel structure once: a model's repeated blocks (the same ops over other weights) reuse the
first block's kernel ASTs over their own buffers. The schedule must be the one a fresh lowering of every kernel gives
(SCACHE=0): the same ASTs (by identity), buffers in the same slots, reads and deps, item order; and the values numpy's."""
import numpy as np
from tinygrad import Tensor, UOp, Context
from tinygrad.engine import schedule as S
from tinygrad.uop.ops import KernelInfo

def _ln(x): return (x - x.mean(-1, keepdim=True)) * ((x - x.mean(-1, keepdim=True)).square().mean(-1, keepdim=True) + 1e-5).rsqrt()
def _ln_np(x): return (x - x.mean(-1, keepdims=True)) / np.sqrt(((x - x.mean(-1, keepdims=True)) ** 2).mean(-1, keepdims=True) + 1e-5)

def _add_one(B: UOp, A: UOp) -> UOp:
  A, B = A.flatten(), B.flatten()
  i = UOp.range(A.numel(), 0)
  return B[i].store(A[i] + 1).end(i).sink(arg=KernelInfo(name="add_one"))

def _schedules(roots: list[UOp], monkeypatch) -> list[tuple[list, list]]:
  """roots scheduled with the cache and afresh: (items, per lowered kernel (ast, bufs, reads, deps)) each."""
  out = []
  for cached in (1, 0):
    seen: list[tuple] = []
    kernel = S.KernelBuilder.kernel
    def record(kb, root, out_buf, chain=None, cache=None):
      ast = kernel(kb, root, out_buf, chain, cache)
      if (cache is not None) == bool(cached): seen.append((ast, list(kb.bufs), set(kb.reads), set(kb.deps)))
      return ast
    monkeypatch.setattr(S.KernelBuilder, "kernel", record)
    with Context(SCACHE=cached): sched, _ = S._create_schedule(S.unbind_graph(roots)[0])
    monkeypatch.setattr(S.KernelBuilder, "kernel", kernel)
    out.append((sched, seen))
  return out

def _same(a: list, b: list) -> None:
  """Two schedules item by item: the same ASTs, the inputs in the same slots, each new buffer of one where the other's is."""
  assert len(a) == len(b)
  inputs = {p for x in a for p in x.bufs} & {q for y in b for q in y.bufs}   # (each schedule's new buffers are its own)
  news: dict[UOp, UOp] = {}
  for x, y in zip(a, b):
    assert x.ast is y.ast and len(x.bufs) == len(y.bufs)
    for p, q in zip(x.bufs, y.bufs): assert p is q if p in inputs or q in inputs else news.setdefault(p, q) is q
  assert len(set(news.values())) == len(news)

def _check(roots: list[UOp], monkeypatch, min_hits: int) -> None:
  (cached, lc), (fresh, lf) = _schedules(roots, monkeypatch)
  _same(cached, fresh)
  assert len(lc) == len(lf)
  for (a1, b1, r1, d1), (a2, b2, r2, d2) in zip(lc, lf):
    assert a1 is a2 and r1 == r2 and d1 == d2 and len(b1) == len(b2)
  assert len({a for a, *_ in lc}) + min_hits <= len(lc), "the repeated blocks' kernels are not one AST each"

def test_repeated_blocks_schedule_as_a_fresh_lowering(monkeypatch):
  rng = np.random.default_rng(0)
  T, D, L = 6, 8, 4
  x0 = rng.standard_normal((T, D)).astype(np.float32)
  ws = [[rng.standard_normal((D, D)).astype(np.float32) * 0.3 for _ in range(4)] for _ in range(L)]
  caches = [Tensor.zeros(T + 2, D).contiguous().realize() for _ in range(L)]
  states = [Tensor.ones(D).contiguous().realize() for _ in range(L)]
  x, outs = Tensor(x0), []
  for (wq, wk, wv, wo), cache, st in zip(ws, caches, states):
    h = _ln(x)
    q, k, v = h @ Tensor(wq), h @ Tensor(wk), (h @ Tensor(wv)).reshape(T, 2, D // 2).permute(1, 0, 2)   # views
    att = (q @ k.T / np.sqrt(D)).softmax(-1)
    o = (att.reshape(1, T, T).expand(2, T, T) @ v).permute(1, 0, 2).reshape(T, D)
    x = x + o @ Tensor(wo)
    x = x + x.pad(((1, 0), (0, 0)))[:-1] * 0.5                 # a shift: a pad and a shrink
    x = (x.to("PYTHON") * 2).to(x.device) * 0.5                # a copy there and back
    outs.append(cache[1:T + 1].assign(k))                       # an assign into a view
    outs.append(st.assign(st * 0.5 + x.sum(0)))                 # an assign reading its own target
    outs.append(Tensor.custom_kernel(Tensor.empty(D), x[0].contiguous(), fxn=_add_one)[0] * 2)   # a custom kernel
  outs += [x, Tensor.empty(0, D) * 2]                           # (a size-0 tensor: no kernel)
  _check([t.uop for t in outs], monkeypatch, min_hits=(L - 1) * 10)
  Tensor.realize(*outs)
  xr = x0
  for i, (wq, wk, wv, wo) in enumerate(ws):
    h = _ln_np(xr)
    q, k, v = h @ wq, h @ wk, (h @ wv).reshape(T, 2, D // 2).transpose(1, 0, 2)
    s = q @ k.T / np.sqrt(D)
    att = np.exp(s - s.max(-1, keepdims=True))
    att /= att.sum(-1, keepdims=True)
    xr = xr + (att[None] @ v).transpose(1, 0, 2).reshape(T, D) @ wo
    xr = xr + np.concatenate([np.zeros((1, D), np.float32), xr[:-1]]) * 0.5
    np.testing.assert_allclose(caches[i].numpy()[1:T + 1], k, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(states[i].numpy(), 0.5 + xr.sum(0), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(outs[3 * i + 2].numpy(), (xr[0] + 1) * 2, rtol=1e-4, atol=1e-4)
  np.testing.assert_allclose(x.numpy(), xr, rtol=1e-4, atol=1e-4)

def test_repeated_blocks_over_a_symbolic_length(monkeypatch):
  from tinygrad import Variable
  rng = np.random.default_rng(1)
  x0, L = rng.standard_normal((8, 4)).astype(np.float32), 3
  ws = [rng.standard_normal((4, 4)).astype(np.float32) for _ in range(L)]
  n = Variable("n", 1, 8).bind(5)
  x = Tensor(x0)[:n]                                            # a symbolic length: the kernels take n as an argument
  for w in ws:
    x = (x @ Tensor(w)).relu() + x.exp().sum(-1, keepdim=True) * 0.1
  _check([x.uop], monkeypatch, min_hits=(L - 1) * 2)
  xr = x0[:5]
  for w in ws: xr = np.maximum(xr @ w, 0) + np.exp(xr).sum(-1, keepdims=True) * 0.1
  np.testing.assert_allclose(x.numpy(), xr, rtol=1e-4, atol=1e-4)

def test_what_the_structure_leaves_out_still_tells_kernels_apart(monkeypatch):
  # the same ops, but: two buffers vs one loaded twice (one slot); an assign from another buffer vs from its own target;
  # an assign into two different views; a realized value loaded through its own (4, 4) vs (2, 8) shape
  rng = np.random.default_rng(2)
  na, nb = rng.standard_normal((4, 4)).astype(np.float32), rng.standard_normal((4, 4)).astype(np.float32)
  a, b = Tensor(na).realize(), Tensor(nb).realize()
  c, d, e, f = [Tensor.zeros(4, 4).contiguous().realize() for _ in range(4)]
  ys = [(a @ b).exp(), (a @ a).exp(), (b @ a).exp(), c.assign(b * 2), d.assign(d * 2), e[0:2].assign(a[0:2] * 3), f[1:3].assign(b[0:2] * 3),
        (a + 1).contiguous().reshape(16) * 2, (b + 1).reshape(2, 8).contiguous().reshape(16) * 2]
  (cached, _), (fresh, _) = _schedules([y.uop for y in ys], monkeypatch)
  _same(cached, fresh)
  k = {ei.node: ei.ast for ei in cached}
  assert k[ys[0].uop] is k[ys[2].uop] is not k[ys[1].uop] and k[ys[-1].uop] is not k[ys[-2].uop]
  Tensor.realize(*ys)
  for y, ref in zip(ys, (np.exp(na @ nb), np.exp(na @ na), np.exp(nb @ na))): np.testing.assert_allclose(y.numpy(), ref, rtol=1e-4)
  np.testing.assert_allclose(c.numpy(), nb * 2)
  np.testing.assert_allclose(d.numpy(), np.zeros((4, 4)))
  np.testing.assert_allclose(e.numpy()[0:2], na[0:2] * 3)
  np.testing.assert_allclose(f.numpy()[1:3], nb[0:2] * 3)
  np.testing.assert_allclose(ys[-2].numpy(), (na.reshape(16) + 1) * 2, rtol=1e-6)
  np.testing.assert_allclose(ys[-1].numpy(), (nb.reshape(16) + 1) * 2, rtol=1e-6)
