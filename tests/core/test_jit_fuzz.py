"""Whole random jitted programs: a function of input tensors and captured state tensors (optimizer-like buffers updated
in place by assign, += and slice assignment; views of inputs, elementwise ops, casts, reduces, matmul, where, a bound
Variable as a size and as a value), float32 and int32, shapes with 1 and odd sizes, wrapped in TinyJit and called five
times with new input values: new tensors, the same buffers updated in place, views of bigger tensors, one tensor passed
twice. Each call's outputs, the state and the inputs after each call must equal the same function run without the JIT on
a copy of the state (allclose: the eager run may fuse its kernels differently), and the graph replay must be bit-identical
to the kernel-by-kernel one (JIT=2). The eager programs themselves are checked against numpy in test_program_fuzz.py."""
import numpy as np, pytest
from hypothesis import given, settings, example, strategies as st
from tinygrad import Tensor, TinyJit, Variable, dtypes
from tinygrad.helpers import Context
from test_program_fuzz import _check, _slice

VMAX = 4   # a program's Variable n is bound to 1..VMAX; a tensor sliced by it has a first axis of at least VMAX
STEPS = ["view"] * 3 + ["elementwise"] * 4 + ["reduce"] * 2 + ["matmul", "var", "write_state", "write_state", "write_state",
         "write_input", "realize"]
# how a call passes an input: a new tensor, the last call's buffer updated in place, a view of a bigger tensor. A replay
# reads a view input's base buffer: an input is a view (of one form) in every call or in none (docs/guide.md, TinyJit)
MODES = ["new", "same"]

@st.composite
def jit_programs(draw, max_steps: int = 8, dims=(1, 2, 3, 5)):
  shape = st.lists(st.sampled_from(dims), min_size=1, max_size=2).map(tuple)
  use_var = draw(st.booleans())
  def base(): return draw(shape), draw(st.sampled_from(["float32", "int32"]))
  inputs, state = [base() for _ in range(draw(st.integers(1, 2)))], [base() for _ in range(draw(st.integers(1, 2)))]
  if use_var: inputs[0] = ((VMAX + 1,) + inputs[0][0][1:], inputs[0][1])   # x[:n] needs n <= its first dim
  alias = len(inputs) == 2 and inputs[0] == inputs[1] and draw(st.booleans())   # the same tensor passed twice, every call
  steps = [(draw(st.sampled_from(STEPS)), draw(st.integers(0, 2**16)), draw(st.integers(0, 2**16)), draw(st.integers(-3, 3)))
           for _ in range(draw(st.integers(1, max_steps)))]
  slices = [tuple(_slice(draw, 5) for _ in range(2)) for _ in steps]
  outs = draw(st.lists(st.integers(0, 2**16), min_size=1, max_size=3))
  views = [draw(st.booleans()) for _ in inputs]
  modes = [["view" if v else draw(st.sampled_from(MODES)) for v in views] for _ in range(5)]
  return inputs, state, use_var, alias, steps, slices, outs, modes

def _fit(v: Tensor, t: Tensor) -> Tensor:
  """`v` made a value for `t` (its shape and dtype): broadcast where it can be, else its sum broadcast; cast to t's dtype."""
  try: ok = np.broadcast_shapes(v.shape, t.shape) == t.shape
  except (ValueError, TypeError): ok = False
  if not ok: v = v.sum()
  return v.expand(t.shape).cast(t.dtype) if v.dtype != t.dtype else v.expand(t.shape)

def make_fn(prog, state: list[Tensor]):
  """The program as a function of its inputs (and the bound Variable n when it has one), closing over `state`."""
  _, _, use_var, _, steps, slices, outs, _ = prog
  def fn(*args):
    ins, n = (args[:-1], args[-1]) if use_var else (args, None)
    pool: list[Tensor] = list(ins) + list(state)
    for (kind, k1, k2, c), sl in zip(steps, slices):
      t, u = pool[k1 % len(pool)], pool[k2 % len(pool)]
      if kind == "view" and t.ndim:
        v = ["slice", "flip", "permute", "reshape", "expand"][k2 % 5]
        if v == "slice":
          idx = tuple(sl[i] for i in range(t.ndim))
          if 0 not in np.empty(t.shape)[idx].shape: pool.append(t[idx])   # (no empty tensors: a sum of one is 0, a max raises)
        elif v == "flip": pool.append(t.flip(k1 % t.ndim))
        elif v == "permute": pool.append(t.permute(tuple(reversed(range(t.ndim)))))
        elif v == "reshape": pool.append(t.reshape(-1, 1) if k1 % 2 else t.reshape(-1))
        else: pool.append(t.reshape((1,) + t.shape).expand((2,) + t.shape))
      elif kind == "elementwise":
        try: np.broadcast_shapes(t.shape, u.shape)
        except ValueError: u = u.sum()
        op = ["add", "sub", "mul", "maximum", "where", "cast", "neg", "relu", "div"][(k1 >> 4) % 9]
        if op == "add": pool.append(t + u)
        elif op == "sub": pool.append(t - u * c)
        elif op == "mul": pool.append(t * u.clip(-2, 2))
        elif op == "maximum": pool.append(t.maximum(u))
        elif op == "where": pool.append((t > u).where(t, u * 2))
        elif op == "cast": pool.append(t.cast(dtypes.float32 if dtypes.is_int(t.dtype) else dtypes.int32))
        elif op == "neg": pool.append(-t)
        elif op == "relu": pool.append(t.relu())
        else: pool.append(t / 4 if dtypes.is_float(t.dtype) else t // (c or 2))
      elif kind == "reduce" and t.ndim:
        ax, op = k2 % t.ndim, ["sum", "max", "mean"][(k2 >> 3) % 3]
        pool.append(getattr(t, op)(ax, keepdim=bool(k2 & 4)))
      elif kind == "matmul" and 1 <= t.ndim <= 2:
        pool.append(t @ t.T if t.ndim == 2 else t.dot(t))   # (m, k) @ (k, m), or a dot product
      elif kind == "var" and n is not None:
        x = pool[0]   # the first input: its first axis is VMAX + 1 long
        pool.append(x[:n].sum(0) if k2 % 2 else x[:n].max(0) * 2 + Tensor(n).cast(x.dtype))   # n as a size, and as a value
      elif kind in ("write_state", "write_input"):
        target = state[k1 % len(state)] if kind == "write_state" else ins[k1 % len(ins)]
        how = ["assign", "iadd", "setitem", "setitem_var"][k2 % 4]
        if how == "assign": target.assign(_fit(u * 2 - 1, target))
        elif how == "iadd" or target.ndim == 0: target += _fit(u, target)
        elif how == "setitem_var" and n is not None and target.shape[0] >= VMAX: target[n - 1:n] += _fit(u.sum(), target[0:1])
        else:
          idx = sl[0]
          sub = np.empty(target.shape)[idx].shape
          if 0 not in sub: target[idx] = _fit(u, target[idx])
      elif kind == "realize": Tensor.realize(*pool[k1 % len(pool):])
    return tuple(pool[o % len(pool)] for o in outs)
  return fn

def _values(shape: tuple, dt: str, rng) -> np.ndarray:
  return rng.integers(-4, 5, shape).astype(dt) if dt == "int32" else rng.standard_normal(shape).astype(dt)

def run_jit_program(prog, device: str | None = None, jit: int = 1, calls: int = 5):
  """Calls the jitted program `calls` times and the same function eagerly; checks each call's outputs, state and inputs.
  Returns every value the jitted calls produced (as numpy arrays), in order."""
  inputs, state_specs, use_var, alias, _, _, _, modes = prog
  rng = np.random.default_rng(len(prog[4]))
  init = [_values(s, dt, rng) for s, dt in state_specs]
  jstate = [Tensor(a.copy(), device=device).realize() for a in init]
  rstate = [Tensor(a.copy(), device=device).realize() for a in init]
  with Context(JIT=jit): jf = TinyJit(make_fn(prog, jstate))
  rf = make_fn(prog, rstate)
  prev: list[Tensor | None] = [None] * len(inputs)
  seen = []
  for call in range(calls):
    vals = [_values(s, dt, rng) for s, dt in inputs]
    if alias: vals[1] = vals[0]
    jin, bases = [], []
    for i, ((s, dt), mode, a) in enumerate(zip(inputs, modes[call], vals)):
      if alias and i == 1:
        jin.append(jin[0])
        bases.append(None)
        continue
      if mode == "same" and prev[i] is not None:
        x = prev[i]
        x.assign(Tensor(a, device=device)).realize()
        bases.append(None)
      elif mode == "view":   # a[...] at an offset of a bigger realized tensor (two junk rows before, one after)
        big = np.concatenate([_values((2,) + s[1:], dt, rng), a, _values((1,) + s[1:], dt, rng)])
        bt = Tensor(big, device=device).realize()
        x = bt[2:2 + s[0]]
        bases.append((bt, big))
      else:
        x = Tensor(a, device=device).realize()
        bases.append(None)
      jin.append(x)
    prev = list(jin)
    rin = [Tensor(a.copy(), device=device).realize() for a in vals]
    if alias: rin[1] = rin[0]
    extra = [Variable("n", 1, VMAX).bind(1 + (call * 3 + len(inputs)) % VMAX)] if use_var else []
    with Context(JIT=jit): got = jf(*jin, *extra)
    want = rf(*rin, *extra)
    Tensor.realize(*want)
    what = f"call {call} ({'capture' if call == 1 else 'replay' if call > 1 else 'first run'})"
    for j, (g, w) in enumerate(zip(got, want)):
      wn = w.numpy()
      _check(g, wn, f"{what}: output {j}")
      seen.append(g.numpy())
    for j, (g, w) in enumerate(zip(jstate, rstate)):
      _check(g, w.numpy(), f"{what}: state {j}")
      seen.append(g.numpy())
    for j, (g, w, b) in enumerate(zip(jin, rin, bases)):
      _check(g, w.numpy(), f"{what}: input {j}")
      if b is not None:   # an input written through a view writes into the tensor it views
        bt, big = b
        big = big.copy()
        big[2:2 + w.shape[0]] = w.numpy()
        _check(bt, big, f"{what}: the tensor input {j} is a view of")
  return seen

def check_program(prog, device: str | None = None):
  graph = run_jit_program(prog, device, jit=1)
  each = run_jit_program(prog, device, jit=2)
  for i, (g, e) in enumerate(zip(graph, each)):
    assert g.tobytes() == e.tobytes(), f"value {i}: the graph replay differs from the kernel-by-kernel one"

@settings(max_examples=30, deadline=None)
@given(prog=jit_programs())
def test_random_jitted_programs_match_eager(prog): check_program(prog)

@settings(max_examples=4, deadline=None)
@given(prog=jit_programs(max_steps=4, dims=(1, 2, 3)))
def test_random_jitted_programs_match_eager_python_device(prog): check_program(prog, "PYTHON")
