"""Random whole programs against numpy on every device: hypothesis draws a list of instructions (movement ops, elementwise
ops with broadcasting, reduces, cumsum, where, contiguous and realize boundaries) that an interpreter applies to numpy arrays
and tensors side by side, so fusion, scheduling and codegen meet shapes and chains no single-op test builds."""
from __future__ import annotations
from typing import Any, Callable
import numpy as np
from hypothesis import given, strategies as st
from tinygrad import Tensor
from tinygrad.conformance.plugin import examples

# bounded functions (a long chain stays finite): name -> (numpy, tinygrad)
UNARY: dict[str, tuple[Callable[[Any], Any], Callable[[Tensor], Tensor]]] = {
  "neg": (np.negative, lambda t: -t), "relu": (lambda a: np.maximum(a, 0), lambda t: t.relu()), "abs": (np.abs, lambda t: t.abs()),
  "tanh": (np.tanh, lambda t: t.tanh()), "sigmoid": (lambda a: 1 / (1 + np.exp(-a)), lambda t: t.sigmoid()),
  "sin": (np.sin, lambda t: t.sin()), "sqrt1": (lambda a: np.sqrt(np.abs(a) + 1), lambda t: (t.abs() + 1).sqrt()),
  "log1": (lambda a: np.log(np.abs(a) + 1), lambda t: (t.abs() + 1).log()),
  "square": (lambda a: np.square(a) * np.float32(0.25), lambda t: t.square() * 0.25),
}
BINARY: dict[str, tuple[Callable[[Any, Any], Any], Callable[[Tensor, Tensor], Tensor]]] = {
  "add": (np.add, lambda x, y: x + y), "sub": (np.subtract, lambda x, y: x - y), "mul": (np.multiply, lambda x, y: x * y),
  "max": (np.maximum, lambda x, y: x.maximum(y)), "min": (np.minimum, lambda x, y: x.minimum(y)),
  "where": (lambda a, b: np.where(a > 0, a, b), lambda x, y: (x > 0).where(x, y)),
}
OPS = ["unary", "binary", "permute", "flip", "reshape", "pad", "shrink", "expand", "sum", "max", "mean", "cumsum", "contiguous", "realize"]

def apply(stack: list[tuple[np.ndarray, Tensor]], op: str, i: int, j: int, k: int) -> tuple[np.ndarray, Tensor] | None:
  """The instruction applied to stack entry i (j: a second operand, k: the op's parameter); None when it does not apply."""
  a, t = stack[i % len(stack)]
  nd = a.ndim
  if op == "unary":
    fu, tu = list(UNARY.values())[k % len(UNARY)]
    return fu(a).astype(np.float32), tu(t)
  if op == "binary":
    b, u = stack[j % len(stack)]
    try: np.broadcast_shapes(a.shape, b.shape)
    except ValueError: b, u = b.sum().reshape(()), u.sum()   # not broadcastable: the other operand as a scalar
    fb, tb = list(BINARY.values())[k % len(BINARY)]
    return fb(a, b).astype(np.float32), tb(t, u)
  if nd == 0:
    if op == "expand": return np.broadcast_to(a, (k % 3 + 1,)), t.reshape(1).expand(k % 3 + 1)
    return None
  ax = k % nd
  if op == "permute":
    perm = [int(p) for p in np.random.default_rng(k).permutation(nd)]
    return a.transpose(perm), t.permute(perm)
  if op == "flip": return np.flip(a, ax), t.flip(ax)
  if op == "reshape":
    if nd > 1: return a.reshape(-1), t.reshape(-1)
    divs = [d for d in range(2, a.size) if a.size % d == 0]
    if not divs: return (a.reshape(1, -1), t.reshape(1, -1)) if a.size else None
    d = divs[k % len(divs)]
    return a.reshape(d, -1), t.reshape(d, -1)
  if op == "pad":
    p = [(0, 0)] * nd
    p[ax] = (k % 2, (k // 2) % 3)
    return np.pad(a, p), t.pad(tuple(p))
  if op == "shrink":
    side = a.shape[ax]
    lo = k % (side + 1)
    hi = lo + (k // 7) % (side - lo + 1)
    sl = tuple(slice(lo, hi) if d == ax else slice(None) for d in range(nd))
    return a[sl], t[sl]
  if op == "expand":
    n = k % 3 + 1
    return np.broadcast_to(a[None], (n,) + a.shape), t.unsqueeze(0).expand(n, *a.shape)
  if op in ("sum", "max", "mean"):
    keep = bool(k & 8)
    if a.shape[ax] == 0 and op != "sum": return None   # max/mean over nothing: an error in both
    fr: Callable[..., Any] = getattr(np, op)
    return fr(a, axis=ax, keepdims=keep).astype(np.float32), getattr(t, op)(axis=ax, keepdim=keep)
  if op == "cumsum": return np.cumsum(a, axis=ax).astype(np.float32), t.cumsum(ax)
  if op == "contiguous": return a, t.contiguous()
  if op == "realize": return a, t.realize()
  raise ValueError(op)

@st.composite
def programs(draw):
  # mostly small sides, sometimes ones the heuristics vectorize, pad or split across threads (kept under 4096 elements)
  side = lambda n: st.one_of(st.integers(0 if n == 0 else 1, 5), st.sampled_from([7, 16, 17, 33, 64]))
  shapes = [tuple(draw(st.lists(side(n), min_size=0, max_size=3).filter(lambda s: int(np.prod(s)) <= 4096))) for n in range(2)]
  instrs = draw(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 7), st.integers(0, 7), st.integers(0, 63)), min_size=1, max_size=8))
  return shapes, instrs, draw(st.integers(0, 2**16))

def run_program(shapes, instrs, seed: int, device: str) -> None:
  rng = np.random.default_rng(seed)
  stack = [(a, Tensor(a, device=device)) for a in (rng.uniform(-2, 2, s).astype(np.float32) for s in shapes)]
  done = []
  for n, (op, i, j, k) in enumerate(instrs):
    out = apply(stack, op, i, j, k)
    if out is None: continue
    if out[0].size > 4096: continue   # keep programs small
    stack.append(out)
    done.append((op, i, j, k))
  for n, (a, t) in enumerate(stack[len(shapes):]):
    got = t.numpy()
    assert got.shape == a.shape, f"entry {n}: shape {got.shape} != numpy's {a.shape} after {done}"
    np.testing.assert_allclose(got, a, rtol=2e-4, atol=2e-4 * max(1.0, float(np.abs(a).max(initial=0))), equal_nan=True,
                               err_msg=f"entry {n} after {done}")

class TestRandomExpressionPrograms:
  capability = "random programs"
  @given(programs())
  @examples(25)
  def test_random_program_matches_numpy(self, device, prog):
    run_program(*prog, device)
