"""Graph runners: a TinyJit capture's kernels replayed as a unit (design.md section 13).

At capture the JIT cuts its steps into runs of consecutive kernels on one device and hands each run (two or more kernels)
to that device's graph runner, `Compiled.graph` (a GraphRunner subclass; None: the default below). A replay then only
hands each runner the new input buffers and variable values. A lone kernel replays through the default runner (no device
program to build for one kernel); copies and host steps run one by one. JIT=2 replays everything kernel by kernel; DEBUG>=2 and PROFILE do too, so every kernel keeps its
own line and span. Replays through a graph are bit-identical to kernel-by-kernel ones: the same programs with the same
arguments in the same order (tests/core/test_jit_graph.py and the conformance suite's TestJitGraph check it).
"""
from __future__ import annotations
import warnings
from typing import Any
from tinygrad.uop.ops import UOp, sym_infer
from tinygrad.device import Buffer, Compiled
from tinygrad.helpers import DEBUG, JIT, GlobalCounters
from tinygrad.viz import profile as _prof

class GraphCall:
  """One kernel of a graph as the runner launches it: `prg` (the loaded program), `bufs` (its Buffers), `inputs` ((argument
  position, input index) of the arguments a replay replaces), `vals` (each variable's value: an int fixed at capture, or the
  index of a replay variable), and the symbolic launch sizes and estimates of the ProgramSpec `p`."""
  __slots__ = ("prg", "p", "bufs", "inputs", "vals", "symbolic")
  def __init__(self, step: Any, inputs: dict[int, int], variables: dict[UOp, int]):
    self.prg, self.p, self.bufs = step.runner._prg, step.runner.p, list(step.bufs)
    self.inputs = [(i, inputs[id(b)]) for i, b in enumerate(step.bufs) if id(b) in inputs]
    self.vals: list[int | tuple[int]] = [(variables[v],) if v in variables else step.var_vals[v] for v in self.p.vars]
    self.symbolic = any(isinstance(x, UOp) for x in self.p.global_size + (self.p.local_size or []))
  def values(self, vv: list[int]) -> tuple[int, ...]:
    """The variables' values for a replay whose replay variables are `vv` (in the runner's `variables` order)."""
    return tuple(vv[v[0]] if isinstance(v, tuple) else v for v in self.vals)

class GraphRunner:
  """The default graph runner every `Compiled` device gets: the launch arguments of each kernel are computed once, at
  capture, and a replay is one Python loop of program calls; only the input handles, the variables' values and the launch
  sizes that depend on them are written per replay (symbolic launch sizes: evaluated once per distinct variable value).

  A device supplies its own by passing `graph=MyGraph` to `Compiled.__init__` (a subclass; docs/plugins.md "Graphs"):
  `__init__(device, steps, inputs, variables)` gets the run's ExecSteps (kernels, all on `device`, in order), the captured
  input Buffers that each replay replaces (by position) and the replay Variables (DEFINE_VAR UOps); it may raise
  GraphError to decline (the steps then run one by one). `run(inputs, var_vals)` replays every kernel, in order, with the
  new input Buffers and values for those Variables. `self.calls` holds the GraphCall of each kernel."""
  def __init__(self, device: Compiled, steps: list[Any], inputs: list[Buffer], variables: list[UOp]):
    self.device, self.steps, self.variables = device, steps, variables
    index = {id(b): j for j, b in enumerate(inputs)}   # (a buffer passed twice maps to its last position, as the JIT's swap)
    self.calls = [GraphCall(s, index, {v: i for i, v in enumerate(variables)}) for s in steps]
    for c in self.calls:
      for b in c.bufs: b.allocate()
    self.args = [[b._buf for b in c.bufs] for c in self.calls]
    self.launch = [c.p.launch_dims({}) if not c.symbolic else None for c in self.calls]
    # symbolic launch sizes, per kernel, by the values of its variables: each distinct value is evaluated once
    self.sym_launch: list[dict[tuple[int, ...], Any]] = [{} for _ in self.calls]
    self.fixed = [c.values([]) if not any(isinstance(v, tuple) for v in c.vals) else None for c in self.calls]
    # the estimates GlobalCounters adds per replay: constant ones summed now, symbolic ones evaluated per replay with the
    # step's own values (variables fixed at capture) under the replay's
    est = [c.p.estimates for c in self.calls]
    self.ops, self.mem = sum(e.ops for e in est if isinstance(e.ops, int)), sum(e.mem for e in est if isinstance(e.mem, int))
    self.sym_est = [(e.ops if isinstance(e.ops, UOp) else 0, e.mem if isinstance(e.mem, UOp) else 0, s.var_vals)
                    for e, s in zip(est, steps) if isinstance(e.ops, UOp) or isinstance(e.mem, UOp)]

  def __call__(self, inputs: list[Buffer], var_vals: dict[UOp, int]) -> None:
    # as CompiledRunner's launch: a variable is passed as a 32-bit int, a wider value would arrive cut to its low bits
    if (big := [(v.arg[0], var_vals[v]) for v in self.variables if not -2**31 <= var_vals[v] < 2**31]):
      raise ValueError(f"variable value(s) {big} do not fit the 32-bit int a kernel argument is; keep variables (shapes, offsets) "
                       "within int32, or pass a wider value in a tensor")
    self.run(inputs, var_vals)
    GlobalCounters.kernel_count += len(self.calls)
    ops, mem = self.ops, self.mem
    for o, m, vv in self.sym_est:
      vv = {**vv, **var_vals}
      ops, mem = ops + sym_infer(o, vv), mem + sym_infer(m, vv)
    GlobalCounters.global_ops += ops
    GlobalCounters.global_mem += mem

  def run(self, inputs: list[Buffer], var_vals: dict[UOp, int]) -> None:
    """Replay every kernel in order with these input Buffers and replay-variable values."""
    vv = [var_vals[v] for v in self.variables]
    for c, args, launch, vals, seen in zip(self.calls, self.args, self.launch, self.fixed, self.sym_launch):
      for pos, j in c.inputs: args[pos] = inputs[j]._buf
      if vals is None: vals = c.values(vv)
      if launch is None and (launch := seen.get(vals)) is None: launch = seen[vals] = c.p.launch_dims(dict(zip(c.p.vars, vals)))
      c.prg(*args, global_size=launch[0], local_size=launch[1], vals=vals)

class GraphError(RuntimeError):
  """A graph runner declines a run of kernels (they replay one by one)."""

def graph_class(device: Compiled) -> type[GraphRunner]:
  """The graph runner `device` uses: its own (`Compiled.graph`) or the default."""
  return device.graph if device.graph is not None else GraphRunner

class Replay:
  """A capture's steps as the JIT replays them: each run of 2+ consecutive kernels on one device is one graph runner, a
  lone kernel the default GraphRunner (unless JIT=2 when captured); the other steps (copies, host steps) run one by one
  with the new input buffers swapped in."""
  def __init__(self, steps: list[Any], inputs: list[Buffer], variables: list[UOp]):
    self.steps, self.variables = steps, variables
    index = {id(b): j for j, b in enumerate(inputs)}
    self.swaps = [[(i, index[id(b)]) for i, b in enumerate(s.bufs) if id(b) in index] for s in steps]
    self.items: list[tuple[int, int, GraphRunner | None]] = []   # (first step, end, runner or None: one by one)
    start = 0
    for end in range(1, len(steps) + 1):
      if end < len(steps) and JIT.value < 2 and _key(steps[end]) is not None and _key(steps[end]) is _key(steps[start]): continue
      if JIT.value >= 2 or _key(steps[start]) is None: runner = None
      # a lone kernel replays through the core's default (its launch arguments computed once): no program to build for it
      elif end - start == 1: runner = GraphRunner(steps[start].runner.dev, steps[start:end], inputs, self.variables)
      else: runner = self._graph(steps[start:end], inputs)
      self.items.append((start, end, runner))
      start = end

  def _graph(self, steps: list[Any], inputs: list[Buffer]) -> GraphRunner | None:
    dev = steps[0].runner.dev
    try: return graph_class(dev)(dev, steps, inputs, self.variables)
    except GraphError as e:
      if DEBUG >= 1: print(f"{dev.device}: {len(steps)} kernels replay one by one: {e}")
    except Exception as e:   # a runner's own failure is a bug to report, not a reason to fail the user's step
      warnings.warn(f"{dev.device}'s graph runner failed on {len(steps)} kernels, which replay one by one: {type(e).__name__}: {e}",
                    RuntimeWarning, stacklevel=4)
    return None

  def __call__(self, inputs: list[Buffer], var_vals: dict[UOp, int]) -> None:
    each = DEBUG >= 2 or _prof.PROFILER is not None   # a line and a span per kernel
    for start, end, runner in self.items:
      if runner is not None and not each: runner(inputs, var_vals)
      else:
        for step, swap in zip(self.steps[start:end], self.swaps[start:end]):
          bufs = list(step.bufs)
          for pos, j in swap: bufs[pos] = inputs[j]
          # the new values of the replay variables; any other variable keeps the value it had when captured (a constant)
          type(step)(step.runner, bufs).run({**step.var_vals, **var_vals} if var_vals else step.var_vals, jit=True)

def _key(step: Any) -> Compiled | None:
  # steps a graph may batch together: kernels on one device
  return step.runner.dev if step.runner is not None else None
