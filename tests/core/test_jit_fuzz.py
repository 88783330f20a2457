"""Whole random jitted programs: a function of input tensors and captured state tensors (optimizer-like buffers updated
in place by assign, += and slice assignment, also through views; views of inputs, elementwise ops, casts, reduces, matmul,
where, pad, cat, Tensor.rand, a bound Variable as a size and as a value), float32 and int32, shapes with 1 and odd sizes,
wrapped in TinyJit and called five times with new input values: new tensors, the same buffers updated in place, views of
bigger tensors, values not yet computed, an earlier call's output passed back, one tensor passed twice. Each call's
outputs, the state and the inputs after each call must equal the same function run without the JIT on a copy of the
state (allclose: the eager run may fuse its kernels differently; the same seed for Tensor.rand), and the graph replay must
be bit-identical to the kernel-by-kernel one (JIT=2). On the CPU (also with every kernel split across the pool's threads)
and on the PYTHON device. The eager programs themselves are checked against numpy in test_program_fuzz.py; the pinned tests
at the end are what the fuzz found, and the documented behaviours around them (docs/guide.md, "Fast replays")."""
import contextlib
import numpy as np, pytest
from hypothesis import given, settings, example, strategies as st
from tinygrad import Tensor, TinyJit, Variable, dtypes
from tinygrad.engine.jit import JitError
from tinygrad.engine.realize import method_cache
from tinygrad.helpers import Context
from test_program_fuzz import _check, _slice

DTYPES = {"float32": dtypes.float32, "int32": dtypes.int32}
VMAX = 4   # a program's Variable n is bound to 1..VMAX; a tensor sliced by it has a first axis of at least VMAX
STEPS = ["view"] * 3 + ["elementwise"] * 4 + ["reduce"] * 2 + ["matmul", "var", "var", "write_state", "write_state", "write_state",
         "write_input", "write_view", "realize", "rand", "pad", "cat", "compare"]
# how a call passes an input: a new tensor, the last call's buffer updated in place, an output of the last call of the
# input's shape and dtype (h = f(h), where there is one), a value not yet computed, a view of a bigger tensor. A function
# that writes into a view input reads and writes the viewed buffer: a replay needs a view of the same form, so such an
# input is a view (at one offset) in every call; a function that writes no input may get a view in some calls and not
# in others (read through a copy), at another offset each call (docs/guide.md, TinyJit)
MODES = ["new", "same", "feedback", "lazy", "view"]

@st.composite
def jit_programs(draw, max_steps: int = 10, dims=(1, 2, 3, 5)):
  shape = st.lists(st.sampled_from(dims), min_size=1, max_size=3).map(tuple)
  use_var = draw(st.booleans())
  def base(): return draw(shape), draw(st.sampled_from(["float32", "int32"]))
  inputs, state = [base() for _ in range(draw(st.integers(1, 2)))], [base() for _ in range(draw(st.integers(1, 2)))]
  if use_var: inputs[0] = ((VMAX + 1,) + inputs[0][0][1:], inputs[0][1])   # x[:n] needs n <= its first dim
  alias = len(inputs) == 2 and inputs[0] == inputs[1] and draw(st.booleans())   # the same tensor passed twice, every call
  steps = [(draw(st.sampled_from(STEPS)), draw(st.integers(0, 2**16)), draw(st.integers(0, 2**16)), draw(st.integers(-3, 3)))
           for _ in range(draw(st.integers(1, max_steps)))]
  slices = [tuple(_slice(draw, 5) for _ in range(3)) for _ in steps]
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
  """The program as a function of its inputs (and xs[:n] and the bound Variable n when it has one), closing over `state`."""
  _, _, use_var, _, steps, slices, outs, _ = prog
  def fn(*args):
    ins, xs, n = (args[:-2], *args[-2:]) if use_var else (args, None, None)
    fn.wrote_inputs = False   # type: ignore[attr-defined]
    pool: list[Tensor] = list(ins) + list(state)
    roots = len(pool)   # the inputs and the state: the tensors written into (an input passed twice is one root)
    root = {id(t): i for i, t in reversed(list(enumerate(pool)))}
    # per entry: the roots its lazy value reads, and for a view of a root that root (it reads what the root reads now)
    own: list[set[int]] = [{root[id(t)]} for t in pool]
    base: list[int | None] = [None] * roots
    def reads(i: int) -> set[int]: return own[i] | (reads(b) if (b := base[i]) is not None else set())
    views, fixed = set(), set()   # (the views; the views that cannot be written: of an expand)
    def add(v: Tensor, *src: int, view: bool = False):
      b = src[0] if src[0] < roots else base[src[0]]
      if view: views.add(len(pool))
      pool.append(v)
      own.append(set() if view and b is not None else set().union(*(reads(i) for i in src)))
      base.append(b if view else None)
    for (kind, k1, k2, c), sl in zip(steps, slices):
      i, j = k1 % len(pool), k2 % len(pool)
      t, u = pool[i], pool[j]
      if kind == "view" and t.ndim:
        v = ["slice", "flip", "permute", "reshape", "expand"][k2 % 5]
        if v == "slice":
          idx = tuple(sl[d % len(sl)] for d in range(t.ndim))
          if 0 not in np.empty(t.shape)[idx].shape: add(t[idx], i, view=True)   # (no empty tensors: a sum of one is 0, a max raises)
        elif v == "flip": add(t.flip(k1 % t.ndim), i, view=True)
        elif v == "permute": add(t.permute(tuple(reversed(range(t.ndim)))), i, view=True)
        elif v == "reshape": add(t.reshape(-1, 1) if k1 % 2 else t.reshape(-1), i, view=True)
        else:
          add(t.reshape((1,) + t.shape).expand((2,) + t.shape), i, view=True)
          fixed.add(len(pool) - 1)
        if i in fixed: fixed.add(len(pool) - 1)
      elif kind == "elementwise":
        try: np.broadcast_shapes(t.shape, u.shape)
        except ValueError: u = u.sum()
        op = ["add", "sub", "mul", "maximum", "where", "cast", "neg", "relu", "div"][(k1 >> 4) % 9]
        if op == "add": add(t + u, i, j)
        elif op == "sub": add(t - u * c, i, j)
        elif op == "mul": add(t * u.clip(-2, 2), i, j)
        elif op == "maximum": add(t.maximum(u), i, j)
        elif op == "where": add((t > u).where(t, u * 2), i, j)
        elif op == "cast": add(t.cast(dtypes.float32 if dtypes.is_int(t.dtype) else dtypes.int32), i)
        elif op == "neg": add(-t, i)
        elif op == "relu": add(t.relu(), i)
        else: add(t / 4 if dtypes.is_float(t.dtype) else t // (c or 2), i)
      elif kind == "reduce" and t.ndim:
        ax, op = k2 % t.ndim, ["sum", "max", "mean"][(k2 >> 3) % 3]
        add(getattr(t, op)(ax, keepdim=bool(k2 & 4)), i)
      elif kind == "matmul" and 1 <= t.ndim <= 2:
        add(t @ t.T if t.ndim == 2 else t.dot(t), i)   # (m, k) @ (k, m), or a dot product
      elif kind == "var" and n is not None:   # n as a size (of a slice and of an input), and as a value
        x = pool[0]   # the first input: its first axis is VMAX + 1 long
        add([x[:n].sum(0), x[:n].max(0) * 2 + Tensor(n, device=x.device).cast(x.dtype), xs.sum(0), (xs * xs).mean(0) - n][k2 % 4], 0)
      elif kind == "rand": add(Tensor.rand(*t.shape, device=t.device) + t if dtypes.is_float(t.dtype) else t.cast(dtypes.float32).rand_like(), i)
      elif kind == "pad" and t.ndim: add(t.pad(((1, c % 2),) + ((0, 0),) * (t.ndim - 1), value=c), i)
      elif kind == "cat" and t.ndim: add(t.cat(t * 2, dim=k2 % t.ndim), i)
      elif kind == "compare": add((t > u).where(t.cast(dtypes.float32) * 0.5, 1.5) if t.shape == u.shape else (t >= 0).cast(t.dtype), i, j)
      elif kind in ("write_state", "write_input", "write_view"):
        if kind == "write_view":   # into a view of an input or a state tensor (a slice, a flip, a transpose, a reshape)
          if base[i] is None or i in fixed: continue
          target, r = t, base[i]
        else:
          target = state[k1 % len(state)] if kind == "write_state" else ins[k1 % len(ins)]
          r = root[id(target)]
        if kind == "write_view" and c % 2: u, j = target.flip(0) if target.ndim else target, i   # (reads itself, elsewhere)
        # one graph that needs a tensor's value before and after its update raises "cannot order the schedule" (documented,
        # docs/guide.md): what reads the target's old value is realized first, as the guide says to
        stale = [e for e in range(len(pool)) if base[e] is None and root.get(id(pool[e])) != r and r in reads(e)]
        if stale:
          Tensor.realize(*[pool[e] for e in stale])
          for e in stale: own[e] = {root[id(pool[e])]} if e < roots else set()
        # (c = +-3: an update that reads the target's other elements, or one at indices computed from this call's values)
        how = "shift" if c == 3 else "setitem_idx" if c == -3 else ["assign", "iadd", "setitem", "setitem_var"][k2 % 4]
        if how == "assign": target.assign(_fit(u * 2 - 1, target))
        elif how == "shift" and target.ndim and target.shape[0] > 1: target[1:] += target[:-1]
        elif how == "setitem_idx" and target.ndim and target.shape[0] > 1:   # t[idx] = v, idx from u's values (new in every call)
          idx = (u.flatten()[:2].abs() if u.ndim else u.reshape(1).abs()).cast(dtypes.int32) % target.shape[0]
          target[idx] = _fit(u.sum(), target[0]).reshape((1,) + target.shape[1:]) + idx.reshape((-1,) + (1,) * (target.ndim - 1)).cast(target.dtype)
        elif how == "iadd" or target.ndim == 0: target += _fit(u, target)
        elif how == "setitem_var" and n is not None and target.shape[0] >= VMAX: target[n - 1:n] += _fit(u.sum(), target[0:1])
        else:
          idx = sl[0]
          sub = np.empty(target.shape)[idx].shape
          if 0 not in sub: target[idx] = _fit(u, target[idx])
        own[r] |= reads(j)   # (a pending assign reads its source)
        if r < len(ins): fn.wrote_inputs = True   # type: ignore[attr-defined]
      elif kind == "realize": Tensor.realize(*pool[k1 % len(pool):])
    # the outputs that are values of their own (computed, not a view of anything): what run_calls may pass back as inputs
    fn.fresh = [o % len(pool) >= roots and o % len(pool) not in views for o in outs]   # type: ignore[attr-defined]
    fn.picks = [o % len(pool) for o in outs]   # type: ignore[attr-defined]
    # the outputs that are views of an input or a state tensor that can be written (not of an expand)
    fn.views = [o % len(pool) in views and o % len(pool) not in fixed for o in outs]   # type: ignore[attr-defined]
    return tuple(pool[o % len(pool)] for o in outs)
  fn.fresh, fn.views, fn.wrote_inputs = [], [], False   # type: ignore[attr-defined]
  return fn

def _values(shape: tuple, dt: str, rng) -> np.ndarray:
  return rng.integers(-4, 5, shape).astype(dt) if dt == "int32" else rng.standard_normal(shape).astype(dt)

def run_calls(prog, device: str | None = None, jit: int | None = 1, calls: int = 5, prune: bool = False,
              write_outputs: bool = True) -> list[tuple[str, np.ndarray]]:
  """Calls the program `calls` times (under TinyJit with JIT=`jit`; None: the plain function) with the same input values
  (from a seeded rng) and the same seed for Tensor.rand; every value it produced, named, in order: per call the outputs,
  the state, the inputs and the tensors the view inputs view, and (write_outputs) those again after writing into the
  returned views."""
  inputs, state_specs, use_var, alias, _, _, _, modes = prog
  rng = np.random.default_rng(len(prog[4]))
  state = [Tensor(_values(s, dt, rng), device=device).realize() for s, dt in state_specs]
  fn = fn_ = make_fn(prog, state)
  writes_inputs = any(k == "write_input" for k, *_ in prog[4])
  fixed = [all(m[i] == "view" for m in modes) for i in range(len(inputs))]   # (a view in every call)
  if jit is not None:
    with Context(JIT=jit): fn = TinyJit(fn, prune=prune)
  Tensor.manual_seed(1)
  prev: list[Tensor | None] = [None] * len(inputs)
  seen, got, prev_fed = [], (), set()
  for call in range(calls):
    vals = [_values(s, dt, rng) for s, dt in inputs]
    xs = Tensor(_values((VMAX + 1, 3), "float32", rng), device=device).realize()   # read as xs[:n]
    ins, bases, fed = [], [], set()
    for i, ((s, dt), mode, a) in enumerate(zip(inputs, modes[call], vals)):
      if alias and i == 1:   # the same tensor as input 0
        ins.append(ins[0])
        if 0 in fed: fed.add(1)
        continue
      # only values of their own are passed back, and only to a function that writes no input: a view (of a state tensor or
      # an input), or an input the function writes into, are other cases, errors where the capture cannot replay them
      # (docs/guide.md, test_an_earlier_output_passed_back_as_input and test_a_state_tensor_passed_as_input_at_replay)
      back = [g for g, fresh in zip(got, fn_.fresh) if mode == "feedback" and fresh and g.shape == s and g.dtype == DTYPES[dt]]
      if back and not writes_inputs:
        x = back[0]
        fed.add(i)
      elif mode == "same" and prev[i] is not None:
        x = prev[i]
        if i in prev_fed: fed.add(i)   # (still the capture's output tensor)
        x.assign(Tensor(a, device=device)).realize()
      elif mode == "view" and (fixed[i] or call and not fn_.wrote_inputs):
        # a[...] at an offset of a bigger realized tensor (junk rows before, one after): at offset 2 in every call, or 1 + call % 3
        off = 2 if fixed[i] else 1 + call % 3
        big = Tensor(np.concatenate([_values((off,) + s[1:], dt, rng), a, _values((1,) + s[1:], dt, rng)]), device=device).realize()
        x = big[off:off + s[0]]
        bases.append(big)
      elif mode == "lazy": x = Tensor(a, device=device) * 1
      else: x = Tensor(a, device=device).realize()
      ins.append(x)
    prev, prev_fed = list(ins), fed
    extra = [xs[:(n := Variable("n", 1, VMAX).bind(1 + (call * 3 + len(inputs)) % VMAX))], n] if use_var else []
    # (TinyJit realizes a lazy input at the start of every call, docs/guide.md "Fast replays": the plain run's do too)
    if jit is None: Tensor.realize(*ins)
    # lazy tensors built before the call from the state it may update (and from the last call's outputs, which a replay
    # rewrites) keep the values they had when built, with or without the JIT (docs/guide.md, "Fast replays")
    lazy = [(s * 2 + 1, s.numpy() * 2 + 1) for s in state] + [(g * 3, g.numpy() * 3) for g in got if g.dtype == DTYPES["float32"]]
    with Context(JIT=jit or 0): got = fn(*ins, *extra)
    # TinyJit realizes a call's outputs and its assigns at its end, together (docs/guide.md: a value made before an update
    # and realized with it reads the old value); the plain function's are realized the same way
    if jit is None: Tensor.realize(*got, *state, *ins, *bases)
    what = f"call {call} ({'capture' if call == 1 else 'replay' if call > 1 else 'first run'})"
    # (read now: a replay's outputs are the capture's tensors, rewritten by the next call)
    seen += [(f"{what}: output {j}", g.numpy()) for j, g in enumerate(got) if fn_.picks[j] not in fed]
    seen += [(f"{what}: state {j}", g.numpy()) for j, g in enumerate(state)]
    # (an output passed back is, from the capture on, the capture's output tensor: the replay rewrites it, as documented,
    # also where the function returns that input)
    seen += [(f"{what}: input {j}", g.numpy()) for j, g in enumerate(ins) if j not in fed]
    seen += [(f"{what}: the tensor a view input views", g.numpy()) for g in bases]
    # a returned view of an input or a state tensor is a view of it (a replay's too): writing into it writes that tensor
    # (write_outputs False with prune: a pruned kernel keeps the capture call's value of state changed outside the function)
    if write_outputs and (mine := [g for j, g in enumerate(got) if fn_.views[j] and fn_.picks[j] not in fed]):
      for g in mine: g += 1
      seen += [(f"{what}, outputs written: state {j}", g.numpy()) for j, g in enumerate(state)]
      seen += [(f"{what}, outputs written: input {j}", g.numpy()) for j, g in enumerate(ins) if j not in fed]
      seen += [(f"{what}, outputs written: the tensor a view input views", g.numpy()) for g in bases]
    for k, (t, want) in enumerate(lazy): np.testing.assert_array_equal(t.numpy(), want, err_msg=f"{what}: lazy value {k} built before the call")
  return seen

def check_program(prog, device: str | None = None):
  eager, graph, each = run_calls(prog, device, None), run_calls(prog, device, 1), run_calls(prog, device, 2)
  assert [w for w, _ in eager] == [w for w, _ in graph] == [w for w, _ in each]
  for (what, e), (_, g), (_, k) in zip(eager, graph, each):
    _check(Tensor(g), e, what)
    assert g.tobytes() == k.tobytes(), f"{what}: the graph replay differs from the kernel-by-kernel one (JIT=2)"

def _ex(inputs, state, steps, outs, modes, use_var=False, alias=False):
  return inputs, state, use_var, alias, steps, [(slice(0, 0, 1),) * 3] * len(steps), outs, modes

@settings(max_examples=60, deadline=None)
@given(prog=jit_programs())
# a replay returned the capture call's input where the function returns its input
@example(prog=_ex([((1,), "float32")], [((1,), "float32")], [("view", 0, 0, 0)], [0], [["new"]] * 5))
# a view input written in place: the write went into a copy, never into the tensor it views
@example(prog=_ex([((2, 1), "float32")], [((3, 1), "int32")], [("write_input", 0, 1, 0)], [1], [["view"]] * 5))
# an earlier output passed back as the input the function returns (the capture's output: rewritten, as documented)
@example(prog=_ex([((1,), "float32"), ((1, 1), "float32")], [((1,), "float32"), ((1,), "float32")],
                  [("view", 0, 1, 0), ("elementwise", 0, 0, 0)], [0, 257], [["new", "view"]] * 4 + [["feedback", "view"]]))
# an input written with itself in every call (x[0:1] = x of one row, x a view): a no-op for the view at the first call but a
# self-copy kernel for the copy the capture reads it through, so the capture raised "wrote into input 1 ... a view it did
# not write into at its first call" (a whole-tensor setitem is now the value itself: a no-op both times)
@example(prog=([((1,), "float32"), ((1,), "int32")], [((1,), "float32")], False, False, [("write_input", 1, 154, 0)],
               [(slice(0, 1, 1), slice(0, 0, 1), slice(0, 0, 1))], [0], [["new", "view"]] * 5))
def test_random_jitted_programs_match_eager(prog): check_program(prog)

@settings(max_examples=30, deadline=None)
@given(prog=jit_programs())
# an output computed from state alone (pruned), passed back and then assigned into by the caller: the replays returned the
# assigned value, not 2*state (its kernel, skipped, never rewrote it)
@example(prog=_ex([((1,), "float32")], [((1,), "float32")], [("elementwise", 1, 1, 0)], [2],
                  [["new"], ["new"], ["feedback"], ["same"], ["new"]]))
def test_random_pruned_jitted_programs_match_eager(prog):
  # TinyJit(prune=True) skips only kernels whose results cannot change between calls: the same values as without the JIT
  # (the state updated in place, Tensor.rand's draws, the Variable)
  eager, pruned = run_calls(prog, None, None, write_outputs=False), run_calls(prog, None, 1, prune=True, write_outputs=False)
  assert [w for w, _ in eager] == [w for w, _ in pruned]
  for (what, e), (_, p) in zip(eager, pruned): _check(Tensor(p), e, what + " (pruned)")

@contextlib.contextmanager
def _split_cpu_kernels():
  # every CPU kernel with a few elements split across two threads of the pool (the graph runner's threaded path)
  rt = pytest.importorskip("tinygrad_cpu.runtime")
  old = rt.CPU_THREAD_WORK, rt.CPU_COUNT
  rt.CPU_THREAD_WORK, rt.CPU_COUNT = 8, 2
  method_cache.clear()   # (a loaded program keeps the split it was loaded with)
  try: yield
  finally:
    rt.CPU_THREAD_WORK, rt.CPU_COUNT = old
    method_cache.clear()

@settings(max_examples=15, deadline=None)
@given(prog=jit_programs(max_steps=6, dims=(1, 3, 7, 16)))
# an input written with itself in every call (x[0:1] = x of one row, x a view): a no-op for the view at the first call but a
# self-copy kernel for the copy the capture reads it through, so the capture raised "wrote into input 1 ... a view it did
# not write into at its first call" (a whole-tensor setitem is now the value itself: a no-op both times)
@example(prog=([((1,), "float32"), ((1,), "int32")], [((1,), "float32")], False, False, [("write_input", 1, 154, 0)],
               [(slice(0, 1, 1), slice(0, 0, 1), slice(0, 0, 1))], [0], [["new", "view"]] * 5))
def test_random_jitted_programs_match_eager_split_kernels(prog):
  with _split_cpu_kernels(): check_program(prog, "CPU")

@settings(max_examples=15, deadline=None)
@given(prog=jit_programs(max_steps=6, dims=(1, 2, 3)))
def test_random_jitted_programs_match_eager_python_device(prog): check_program(prog, "PYTHON")

# ---- pinned: what the fuzz found, and the documented behaviours around it ----

def test_a_returned_input_is_this_calls_input():
  # a replay returned the capture call's input tensor (and views of it), showing that call's values
  @TinyJit
  def f(x, y, n):
    x += 1
    return x, x[1:], y.reshape(3, 1), (x * y).sum(), y[:n]
  for i in range(5):
    xa, ya = np.arange(3, dtype=np.float32) + 10 * i, np.arange(3, dtype=np.float32) - i
    x, y = Tensor(xa).realize(), Tensor(ya).realize()
    a, b, c, d, e = f(x, y, Variable("n", 1, 3).bind(1 + i % 3))
    assert a is x, f"call {i}"
    assert a.tolist() == (xa + 1).tolist() and b.tolist() == (xa + 1)[1:].tolist(), f"call {i}"
    assert c.tolist() == ya.reshape(3, 1).tolist() and d.item() == ((xa + 1) * ya).sum(), f"call {i}"
    assert e.tolist() == ya[:1 + i % 3].tolist(), f"call {i}"

@pytest.mark.parametrize("devs", [None, ("CPU:0", "CPU:1")], ids=["one_device", "sharded"])
@pytest.mark.parametrize("how", ["written", "read", "view_input"])
def test_a_returned_view_of_an_input_is_a_view_of_it(how, devs):
  # from the capture on, the returned view was a tensor of its own (or a view of the copy the capture read a view input
  # through, or of the capture call's copies of a slice across the shards): `v *= 2` after the call left the input as it
  # was, where the plain function's view writes into it (calls 2.. gave [3, 7, 7, 7, ..] for [3, 14, 14, 14, ..])
  def f(x):
    if how == "written": x += 1
    return x[1:3], x.T
  def run(fn) -> list:
    big = Tensor(np.arange(12, dtype=np.float32).reshape(6, 2))
    big = (big.shard(devs, 0) if devs else big).realize()
    got = []
    for _ in range(4):
      v, t = fn(big[1:5] if how == "view_input" else big)
      v *= 2
      t += 1
      got.append(big.numpy())
      big += 1   # (the views follow it)
      got += [v.numpy(), t.numpy()]
    return got
  for i, (want, have) in enumerate(zip(run(f), run(TinyJit(f)))): np.testing.assert_array_equal(have, want, err_msg=f"value {i}")

@pytest.mark.parametrize("devs", [None, ("CPU:0", "CPU:1")], ids=["one_device", "sharded"])
def test_a_returned_view_of_an_output_passed_back_shows_what_the_call_read(devs):
  # h = f(h): the replay reads h through a copy and rewrites h's buffer (the capture's output); the returned views of h are
  # views of that copy (as the eager call's of the old h), not of h, which then shows the new output
  def f(x): return (x * 2).contiguous(), x[1:3], x.T
  def run(fn) -> list:
    h = Tensor(np.arange(8, dtype=np.float32).reshape(4, 2))
    h = (h.shard(devs, 0) if devs else h).realize()
    got = []
    for _ in range(5):
      h, v, t = fn(h)
      got += [v.numpy(), t.numpy(), h.numpy()]
    return got
  for i, (want, have) in enumerate(zip(run(f), run(TinyJit(f)))): np.testing.assert_array_equal(have, want, err_msg=f"value {i}")

def test_a_view_input_written_in_place_writes_the_tensor_it_views():
  # a view input was copied into a tensor of its own (the user's view replaced by it): the function's writes never
  # reached the viewed tensor, without the JIT (JIT=0) too
  for jit in (0, 1, 2):
    with Context(JIT=jit):
      @TinyJit
      def f(v, w):
        v += w
        return (v * 2).sum()
      for i in range(5):
        base = Tensor(np.arange(6, dtype=np.float32) * (i + 1)).realize()
        v = base[1:4]
        out = f(v, Tensor([1.0, 2.0, 3.0]).realize())
        want = np.arange(6, dtype=np.float32) * (i + 1)
        want[1:4] += [1.0, 2.0, 3.0]
        assert base.tolist() == want.tolist(), f"JIT={jit} call {i}"
        assert out.item() == want[1:4].sum() * 2, f"JIT={jit} call {i}"
        base.assign(base + 1).realize()   # the user's view is still a view of base
        assert v.tolist() == (want[1:4] + 1).tolist(), f"JIT={jit} call {i}"

def test_a_view_input_at_a_variable_offset_is_written_in_place():
  # a view by a bound Variable (cache[n:n+2]) was copied at capture: the capture's write was lost, replays raised
  @TinyJit
  def f(v):
    v += 1
    return (v * 2).sum()
  for i in range(5):
    base = Tensor(np.arange(6, dtype=np.float32)).realize()
    n = i % 4
    out = f(base[Variable("n", 0, 4).bind(n):Variable("n", 0, 4).bind(n) + 2])
    want = np.arange(6, dtype=np.float32)
    want[n:n + 2] += 1
    assert base.tolist() == want.tolist() and out.item() == want[n:n + 2].sum() * 2, f"call {i}"

def test_view_inputs_of_another_form_than_captured():
  # a view the function only reads is read through a copy: a replay takes any view of that shape, or a tensor of its own
  @TinyJit
  def reads(x): return x * 2
  for i in range(6):
    b = Tensor(np.arange(6, dtype=np.float32) + i).realize()
    x = [b[1:4], b[2:5], b.flip(0)[:3], Tensor(np.arange(1, 4, dtype=np.float32) + i).realize()][i % 4]
    want = [np.arange(1, 4) + i, np.arange(2, 5) + i, (np.arange(6) + i)[::-1][:3], np.arange(1, 4) + i][i % 4]
    assert reads(x).tolist() == (want * 2).tolist(), f"call {i}"
  b = Tensor(np.arange(6, dtype=np.float32)).realize()
  x = b[1:4]
  reads(x)
  b.assign(b * 0).realize()
  assert x.tolist() == [0.0, 0.0, 0.0]   # (x is still a view of b)
  # a view it writes into is passed as it is: a replay must get the same view (of a tensor of the same size)
  @TinyJit
  def writes(x):
    x += 1
    return x.sum()
  for i in range(4):
    b = Tensor(np.arange(5, dtype=np.float32) + i).realize()
    writes(b[1:4])
    assert b.tolist() == (np.arange(5) + i + np.array([0, 1, 1, 1, 0])).tolist(), f"call {i}"
  with pytest.raises(JitError, match=r"input 0 \(0\) a view of a buffer.*now it is a tensor of its own"): writes(Tensor([1.0, 2.0, 3.0]).realize())
  with pytest.raises(JitError, match=r"now it is another view"): writes(Tensor(np.arange(5, dtype=np.float32)).realize()[:3])
  # captured with a tensor of its own that it writes into: a view at replay cannot be written through
  writes.reset()
  for i in range(2): writes(Tensor([1.0, 2.0]).realize())
  with pytest.raises(JitError, match=r"writes into input 0 .*captured as a tensor of its own; now it is a view"):
    writes(Tensor([1.0, 2.0, 3.0]).realize()[1:])

def test_the_same_tensor_passed_twice():
  # captured with one tensor as both arguments, a replay with two read the second for both (the kernel had one buffer)
  @TinyJit
  def f(a, b): return a * 2 + b
  x = Tensor([1.0, 2.0]).realize()
  for _ in range(2): f(x, x)
  assert f(x, x).tolist() == [3.0, 6.0]
  with pytest.raises(JitError, match=r"captured with input buffers 0 and 1 the same buffer but called with every input buffer distinct"):
    f(Tensor([1.0, 2.0]).realize(), Tensor([10.0, 20.0]).realize())
  # captured apart: the same tensor twice is fine where the capture only reads them, an error where it writes one
  @TinyJit
  def g(a, b): return a * 2 + b
  for i in range(2): g(Tensor([1.0, 2.0]).realize(), Tensor([3.0, 4.0]).realize())
  assert g(x, x).tolist() == [3.0, 6.0]
  @TinyJit
  def h(a, b):
    a += b.flip(0)
    return a.sum()
  for i in range(2): h(Tensor([1.0, 2.0]).realize(), Tensor([3.0, 4.0]).realize())
  with pytest.raises(JitError, match=r"one buffer read as one, or written while read as another"): h(x, x)

def test_held_outputs_are_rewritten_by_the_next_replay():
  # documented (docs/guide.md, TinyJit): call 1 runs the function and returns tensors of its own; from the capture (call 2)
  # on, every call returns the capture's tensors, rewritten by each replay, as in public tinygrad
  @TinyJit
  def f(x): return x * 2, (x + 1).sum()
  outs = [f(Tensor([float(i), 1.0]).realize()) for i in range(4)]
  assert outs[0][0].tolist() == [0.0, 2.0]
  assert outs[1][0] is outs[2][0] is outs[3][0] and outs[1][1] is outs[3][1]
  assert [o[0].tolist() for o in outs[1:]] == [[6.0, 2.0]] * 3 and outs[1][1].item() == 6.0
  kept = f(Tensor([7.0, 1.0]).realize())[0].clone().realize()   # a copy of its own keeps the value
  f(Tensor([8.0, 1.0]).realize())
  assert kept.tolist() == [14.0, 2.0] and outs[1][0].tolist() == [16.0, 2.0]

def test_an_earlier_output_passed_back_as_input():
  # h = f(h): from the second replay on, the input is the capture's own output buffer, which the matmul kernel wrote while
  # it still read it (the replay read its own writes)
  p = np.roll(np.eye(64, dtype=np.float32), 1, axis=1)
  w = Tensor(p).realize()
  @TinyJit
  def f(h): return h @ w
  h, want = Tensor(np.arange(64, dtype=np.float32).reshape(1, 64)).realize(), np.arange(64, dtype=np.float32).reshape(1, 64)
  for i in range(6):
    h, want = f(h), want @ p
    np.testing.assert_array_equal(h.numpy(), want, err_msg=f"call {i}")

def test_a_state_tensor_passed_as_input_at_replay():
  # the function updates w (its state) and reads its input flipped; a replay given w itself reads a copy, as without the JIT
  w = Tensor(np.arange(64, dtype=np.float32)).realize()
  want = np.arange(64, dtype=np.float32)
  @TinyJit
  def f(x):
    w.assign(w + x.flip(0))
    return w.sum()
  for i in range(6):
    x = w if i >= 3 else Tensor(np.full(64, i, np.float32)).realize()
    want = want + (want if i >= 3 else np.full(64, i, np.float32))[::-1]
    f(x)
    np.testing.assert_array_equal(w.numpy(), want, err_msg=f"call {i}")
  @TinyJit
  def g(x):
    x += w.flip(0)
    return x.sum()
  for i in range(2): g(Tensor(np.ones(64, np.float32)).realize())
  with pytest.raises(JitError, match=r"got as input 0 \(0\) a buffer its captured kernels use otherwise .* it writes into that input"): g(w)

def test_the_functions_own_state_passed_as_input_at_capture():
  # captured with its own state tensor as the argument, the capture could not tell the two uses of that buffer apart: every
  # replay swapped both for the new input (w was never updated again). The first call shows which tensors the function
  # reads on its own: such a tensor as an argument of the capture is an error, and the next call captures
  w = Tensor([1.0, 2.0]).realize()
  want = np.array([1.0, 2.0], np.float32)
  @TinyJit
  def f(x):
    w.assign(w + x)
    return w.sum()
  for i in range(5):
    x = w if i == 1 else Tensor([float(i), 0.0]).realize()
    if i == 1:
      with pytest.raises(JitError, match=r"got as input 0 \(0\) a tensor it also reads without taking it as an argument"): f(x)
      continue
    want = want + np.array([float(i), 0.0], np.float32)
    f(x)
    np.testing.assert_array_equal(w.numpy(), want, err_msg=f"call {i}")

def test_a_changed_training_mode_is_an_error():
  # captured in training mode, a replay outside it replayed dropout (design.md: anything but tensors and bound Variables
  # that changes between calls is an error, not a silently replayed old value)
  @TinyJit
  def f(x): return x.dropout(0.5) * 1
  x = Tensor.ones(8).contiguous().realize()
  with Tensor.train():
    for _ in range(3): f(x)
  with pytest.raises(JitError, match=r"captured with Tensor.training=True, now it is False"): f(x)
  f.reset()
  for _ in range(3): assert f(x).tolist() == [1.0] * 8
  with Tensor.train(), pytest.raises(JitError, match=r"Tensor.training=False, now it is True"): f(x)

def test_a_function_that_does_not_read_the_mode_replays_in_either():
  # a capture reads Tensor.training only through dropout, BatchNorm and the like (or the function's own code): one that
  # does not (an eval function also called during training, dropout with p=0, attention) replays in either mode, as in
  # public tinygrad, rather than raise
  from tinygrad import nn
  lin = nn.Linear(4, 3)
  @TinyJit
  def f(x): return lin(x).relu().dropout(0.0) + x.scaled_dot_product_attention(x, x).sum()
  x = Tensor.ones(2, 4).contiguous().realize()
  want = f(x).numpy()
  for i in range(4):
    with Context(TRAINING=i % 2): np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-6)
  # while BatchNorm reads it: an error in the other mode
  bn = nn.BatchNorm(4)
  @TinyJit
  def g(x): return bn(x)
  with Tensor.train():
    for _ in range(3): g(x)
  with pytest.raises(JitError, match=r"captured with Tensor.training=True, now it is False"): g(x)

def test_a_view_written_only_from_the_capture_on_is_an_error():
  # a view the first call only read is captured through a copy; a capture that writes into it (the function's writes
  # depend on the call) would lose the write: an error, not a silently dropped update
  calls = []
  @TinyJit
  def f(x):
    calls.append(1)
    if len(calls) > 1: x += 1
    return x * 2
  b = Tensor(np.arange(4, dtype=np.float32)).realize()
  f(b[1:3])
  with pytest.raises(JitError, match=r"wrote into input 0 \(0\), a view it did not write into at its first call"): f(b[1:3])
