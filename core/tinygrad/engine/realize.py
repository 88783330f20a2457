"""Running a schedule: CompiledRunner (a compiled kernel bound to its device), the method cache, copies, realize_uops."""
from __future__ import annotations
import _signal, inspect, itertools, os, signal, sys, time, threading
from concurrent.futures import ThreadPoolExecutor, Future
from typing import Any, Callable
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, sym_infer, _argkey
from tinygrad.dtype import dtypes
from tinygrad.helpers import DEBUG, CAPTURING, CACHELEVEL, BEAM, NOOPT, OPTS, USE_TC, EMULATED_DTYPES, TRANSCENDENTAL, PARALLEL_COMPILE, PARALLEL_CODEGEN, colored, ansilen, GlobalCounters, gc_paused
from tinygrad.helpers import WatchedDict, SCACHE, ContextVar
from tinygrad.renderer import ProgramSpec
from tinygrad.device import Device, Buffer, CompileError
from tinygrad.engine.buffers import buffer_of, has_buffer, new_buffer, buffer_node
from tinygrad.engine.schedule import ExecItem, create_schedule, memory_plan, item_nodes, buffer_view, above_buffers, _int_arg, _structure, \
  _schedule_cache
from tinygrad.uop import upat as _upat
from tinygrad.viz import profile as _prof

class CompiledRunner:
  """A ProgramSpec compiled (if needed) and loaded on `device` (default: the renderer's device); call it with Buffers.

  `device` must be the exact device the buffers live on ("NV:PTX", "CPU:1"): each opened device has its own queue, and
  a kernel queued on another instance than its buffers' copies races with them.
  Given a `pool`, the compile runs there in the background and `ready()` waits for it and loads the program."""
  def __init__(self, p: ProgramSpec, device: str | None = None, pool: ThreadPoolExecutor | None = None,
               rerender: Callable[[], ProgramSpec] | None = None):
    self.p, self.dev = p, Device[device or p.device]
    if self.dev.runtime is None: raise RuntimeError(f"device {p.device} has no runtime to load kernels")
    # the compiler as it is now: a compile still running in the background must not pick up one swapped in later
    self._runtime, self._compiler = self.dev.runtime, self.dev.compiler
    self._rerender = rerender   # `p` came from the program cache: how to render it afresh if it fails to compile or load
    self._prg: Any = None
    self._dims: tuple[tuple[int, ...], tuple[int, ...] | None] | None = None   # the launch sizes of a kernel without variables
    self._lib: Future[bytes] | None = None
    if p.lib is not None: self.lib = p.lib
    elif self.dev.compiler is None: self.lib = p.src.encode()   # source is the binary (PYTHON, WGSL, Metal source)
    elif pool is not None:
      self._lib = pool.submit(self._compile)
      return
    else:
      self._load(self._compile)
      return
    self._load(lambda: self.lib)
  def _compile(self, refresh: bool = False) -> bytes:
    assert self._compiler is not None
    st = time.perf_counter()
    try: lib = self._compiler.compile_cached(self.p.src, refresh) if refresh else self._compiler.compile_cached(self.p.src)
    except CompileError as e: raise CompileError(f"kernel {self.p.name}: {e.diagnostics}", e.src) from e   # which kernel failed
    if (prof := _prof.PROFILER) is not None: prof.span(f"compile {self.p.name}", "compile", st, time.perf_counter(), bytes=len(lib))
    if (rec := _upat.TRACER) is not None: rec.binary(self.p.src, len(lib))
    return lib
  def _load(self, lib: Callable[[], bytes]) -> None:
    """Compile (or wait for) and load the program. A cached one that fails to is a miss, never the user's error: the
    source is rendered again when it came from the program cache, the binary compiled again (and its row replaced)."""
    loading = False
    try:
      self.lib = lib()
      loading = True
      self._prg = self._open()
    except Exception as e:
      cached_bin = loading and self._compiler is not None and self.p.lib is None and getattr(self._compiler, "cachekey", None) is not None
      if CACHELEVEL.value == 0 or (self._rerender is None and not cached_bin): raise
      if DEBUG >= 1: print(f"kernel {self.p.name}: the cached program does not {'load' if loading else 'compile'} ({type(e).__name__}: {e}); rebuilding it")
      src = self.p.src
      if self._rerender is not None: self.p, self._rerender = self._rerender(), None
      if not loading and self.p.src == src: raise   # the source itself fails to compile (failures are never cached)
      self.lib = self.p.lib if self.p.lib is not None else self.p.src.encode() if self._compiler is None else self._compile(refresh=True)
      self._prg = self._open()
  def _open(self) -> Any:
    # a runtime that declares a `spec` parameter also gets the kernel's ProgramSpec (launch sizes, estimates, thread_work)
    rt: Any = self._runtime
    return rt(self.p.function_name, self.lib, spec=self.p) if takes_spec(rt) else rt(self.p.function_name, self.lib)
  def ready(self) -> CompiledRunner:
    """Wait for a background compile and load the program; its error (a CompileError naming the kernel) is raised here,
    and a runner that failed is dropped from the method cache, so a later realize compiles it again."""
    if self._prg is None and self._lib is not None:
      pending = self._lib
      try: self._load(pending.result)
      except BaseException:
        for k in [k for k, r in method_cache.items() if r is self]: del method_cache[k]
        raise
      self._lib = None
    return self
  def __call__(self, bufs: list[Buffer], var_vals: dict[UOp, int] | None = None, wait: bool = False) -> float | None:
    if self._prg is None: self.ready()
    # (most kernels: no variable to check or pass and launch sizes of plain ints, kept: ~2 us of each launch)
    if self._dims is None and not self.p.vars and all(type(s) is int for s in [*self.p.global_size, *(self.p.local_size or ())]):
      self._dims = self.p.launch_dims({})
    if self._dims is not None:
      return self._prg(*[b._buf for b in bufs], global_size=self._dims[0], local_size=self._dims[1], vals=(), wait=wait)
    vv = var_vals or {}
    missing = [v.arg[0] for v in self.p.vars if v not in vv]
    if missing: raise UnboundVariableError(f"kernel {self.p.name} reads the unbound variable(s) {missing}: bind each (Variable(...).bind(value))")
    vals = tuple(vv[v] for v in self.p.vars)
    # the launch contract passes a variable as a 32-bit int (every runtime): a wider value would arrive cut to its low bits
    if (big := [(v.arg[0], x) for v, x in zip(self.p.vars, vals) if not -2**31 <= x < 2**31]):
      raise ValueError(f"kernel {self.p.name}: variable value(s) {big} do not fit the 32-bit int a kernel argument is; keep "
                       "variables (shapes, offsets) within int32, or pass a wider value in a tensor")
    gl, lc = self.p.launch_dims(vv)
    return self._prg(*[b._buf for b in bufs], global_size=gl, local_size=lc, vals=vals, wait=wait)

_takes_spec: dict[int, tuple[Any, bool]] = {}
def takes_spec(runtime: Any) -> bool:
  """Whether `runtime(name, lib, spec=...)` is its signature (docs/plugins.md: the runtime's optional `spec` parameter)."""
  if (hit := _takes_spec.get(id(runtime))) is not None and hit[0] is runtime: return hit[1]
  try: ok = "spec" in inspect.signature(runtime).parameters
  except (TypeError, ValueError): ok = False   # no signature (a builtin): the two-argument call
  _takes_spec[id(runtime)] = (runtime, ok)
  return ok

# (device, compiler, ast) -> runner: the same kernel is never rebuilt
method_cache: WatchedDict[tuple, CompiledRunner] = WatchedDict()
# the switches that change which program a kernel compiles to: a kernel run under `Context(NOOPT=1)` is not the cached
# optimized one (MATMUL_PACK and INDEX64 change the kernel AST itself)
_CODEGEN_VARS = (NOOPT, BEAM, USE_TC, OPTS, EMULATED_DTYPES, TRANSCENDENTAL)

_pool: ThreadPoolExecutor | None = None
_pool_lock = threading.Lock()
def _compile_pool(dev: Any) -> ThreadPoolExecutor | None:
  """The threads compiling new kernels in the background (PARALLEL_COMPILE of them), or None: compile on this thread."""
  global _pool
  n = PARALLEL_COMPILE.value
  if n <= 0 or not getattr(dev.compiler, "parallel_safe", False): return None
  with _pool_lock:
    if _pool is None or _pool._max_workers != n:
      if _pool is not None: _pool.shutdown(wait=False)
      _pool = ThreadPoolExecutor(n, thread_name_prefix="tinygrad_compile")
    return _pool
def _forget_pool_in_child() -> None:
  # a fork child inherits the pool object but not its threads: it starts a new one on first use
  global _pool, _pool_lock
  _pool, _pool_lock = None, threading.Lock()
if hasattr(os, "register_at_fork"): os.register_at_fork(after_in_child=_forget_pool_in_child)

def _runner_key(dev: Any, ast: UOp) -> tuple: return (dev.device, dev.compiler_name, ast, tuple(v.value for v in _CODEGEN_VARS))

def get_runner(device: str, ast: UOp, wait: bool = True, forked: Any = None) -> CompiledRunner:
  """The runner of kernel `ast` on `device`, from the method cache or rendered now; `wait=False`: its compile may still
  run in the background (call `ready()` before use). `forked`: a ForkedCodegen that may have rendered it already."""
  dev = Device[device]
  key = _runner_key(dev, ast)
  if (ret := method_cache.get(key)) is None:
    if device.startswith("DISK:"):
      raise NotImplementedError(f"{device} is a file (the DISK device), which runs no kernels: copy the tensor to a computing device "
                                "first (t.to('CPU')); reading, slicing, bitcasting and assigning into it work in place")
    from tinygrad.codegen import get_program, progcache
    _check_dtypes(dev, ast)
    pool = None if wait else _compile_pool(dev)
    st = time.perf_counter()
    def codegen() -> ProgramSpec:
      opts = None
      if BEAM.value >= 1 and any(u.op is Ops.RANGE for u in ast.toposort()):   # BEAM=n: search the actions on the device
        from tinygrad.codegen.search import beam_search
        opts = beam_search(ast, device, BEAM.value)
      return get_program(ast, dev.renderer, opts, compile=False)
    # a kernel rendered by an earlier process (same AST, renderer, flags and code): its source, without codegen (its
    # uops are built again only if something reads them)
    def render() -> ProgramSpec:
      spec = codegen()
      if pkey is not None: progcache.store(pkey, spec)   # (replacing a cached row that failed to compile or load)
      return spec
    pkey = progcache.program_key(ast, dev)
    rerender = None
    # (the forked child's program is what codegen() gives: the same code on the same kernel; a row that does not decode is a miss)
    if pkey is not None and forked is not None and (enc := forked.take(ast)) is not None:
      try: spec = progcache.decode(enc, ast, lambda: codegen().uops)
      except (ValueError, TypeError, KeyError): spec = None
      if spec is not None: progcache.store(pkey, spec)
    else: spec = None
    if spec is not None: rerender = render
    elif (spec := progcache.load(pkey, ast, lambda: codegen().uops) if pkey is not None else None) is None: spec = render()
    else:
      rerender = render
      if DEBUG >= 4: print(spec.src)
    if (prof := _prof.PROFILER) is not None: prof.span(f"codegen {spec.name}", "codegen", st, time.perf_counter())
    method_cache[key] = ret = CompiledRunner(spec, device, pool, rerender)
  return ret if not wait else ret.ready()

def _check_dtypes(dev: Any, ast: UOp) -> None:
  supported = dev.renderer.supported_dtypes
  for u in ast.toposort():
    dt = u.dtype.base.scalar() if hasattr(u.dtype, "base") else u.dtype.scalar()
    if dt != dtypes.void and dt not in supported:
      raise TypeError(f"dtype {dt} is not supported on {dev.device}; supported: {', '.join(sorted(d.name for d in supported))}")

def _copy(dest: Buffer, src: Buffer) -> None:
  dest.allocate()
  # a direct transfer needs both ends to be the same kind of device; anything else goes through host memory
  if src.device == dest.device or type(src.allocator) is not type(dest.allocator) or not hasattr(dest.allocator, "_transfer"):
    dest.copyin(src.as_buffer())
  else: dest.allocator._transfer(dest._buf, src._buf, src.nbytes, src_dev=src.allocator, dest_dev=dest.allocator)

class ExecStep:
  """One runnable step: a CompiledRunner or a copy, bound to concrete Buffers (what TinyJit records and replays)."""
  def __init__(self, runner: CompiledRunner | None, bufs: list[Buffer], var_vals: dict[UOp, int] | None = None,
               values: list[UOp] | None = None, new: list[bool] | None = None):
    # var_vals: the values of the kernel's variables this step was scheduled with (a TinyJit replay passes new ones)
    # values, new (a TinyJit capture's steps): per buffer the BUFFER UOp of the value it holds (one UOp in every realize
    # that uses it), and whether that value is new in this realize (no Buffer before it: what its memory held before the
    # kernel computing it does not matter). A realize's memory plan puts several new values in one Buffer, one after
    # another; the capture's plan gives each its own life
    self.runner, self.bufs, self.var_vals, self.values, self.new = runner, bufs, var_vals or {}, values, new
  def run(self, var_vals: dict[UOp, int] | None = None, wait: bool = False, jit: bool = False) -> float | None:
    """Run the step, count it in GlobalCounters and, at DEBUG>=2, print its line (timed: it waits for the device then)."""
    if var_vals is None: var_vals = self.var_vals
    for b in self.bufs: b.allocate()
    prof = _prof.PROFILER
    wait = wait or DEBUG >= 2 or prof is not None   # a profiled step is timed like DEBUG=2's
    st = time.perf_counter()
    if self.runner is None:
      _copy(self.bufs[0], self.bufs[1])
      et: float | None = time.perf_counter() - st
      ops, mem, lds = 0, self.bufs[0].nbytes, 2*self.bufs[0].nbytes
    else:
      et = self.runner(self.bufs, var_vals, wait=wait)
      est, vv = self.runner.p.estimates, var_vals or {}
      ops, mem, lds = sym_infer(est.ops, vv), sym_infer(est.mem, vv), sym_infer(est.lds, vv)
    if prof is not None and et is not None:
      # the device's own span when its runtime reports one (the optional `last_span`), else the host's around the call
      span = getattr(self.runner._prg, "last_span", None) if self.runner is not None else None
      start, end = span if span is not None else (st, st + et)
      prof.span(self.name, "kernel" if self.runner is not None else "copy", start, end, self.bufs[0].device,
                jit=jit, ops=ops, bytes=mem, **{v.arg[0]: val for v, val in (var_vals or {}).items()})
    GlobalCounters.kernel_count += 1
    GlobalCounters.global_ops += ops
    GlobalCounters.global_mem += mem
    if et is not None and wait: GlobalCounters.time_sum_s += et
    if DEBUG >= 2: print(self._debug_line(et, ops, mem, lds, jit, var_vals))
    return et
  def _debug_line(self, et: float | None, ops: int, mem: int, lds: int, jit: bool, var_vals: dict[UOp, int] | None) -> str:
    # public tinygrad's DEBUG=2 line: counter, device, name (launch sizes), args, device memory in use, this step's time and
    # the running total, then the rates: GFLOPS and GB/s of the buffers touched | of the loads and stores issued
    dev = self.bufs[0].device
    if self.runner is None: name = colored(f"copy {self.bufs[0].nbytes:8d}, {dev[:7]:>7s} <- {self.bufs[1].device[:7]:7s}", "yellow")
    else:
      gl, lc = self.runner.p.launch_dims(var_vals or {})
      name = colored(self.runner.p.name, "cyan") + f" {list(gl)}" + (f" {list(lc)}" if lc is not None else "")
    tag = colored(f"*** {dev[:7]:7s} {GlobalCounters.kernel_count:4d}", "magenta" if jit else "green")
    line = f"{tag} {name}{' '*max(0, 48-ansilen(name))} arg {len(self.bufs):2d} mem {GlobalCounters.mem_used/1e9:6.3f} GB"
    if et is None: return line
    ptm = f"{et*1e6:9.2f}us" if et < 1e-3 else f"{et*1e3:9.2f}ms"
    return line + f" tm {ptm}/{GlobalCounters.time_sum_s*1e3:9.2f}ms ({ops/max(et, 1e-9)*1e-9:7.1f} GFLOPS " \
                  f"{mem/max(et, 1e-9)*1e-9:6.1f}|{lds/max(et, 1e-9)*1e-9:<6.1f} GB/s)" + (" (jit)" if jit else "")
  @property
  def name(self) -> str: return self.runner.p.name if self.runner is not None else f"copy {self.bufs[1].device} -> {self.bufs[0].device}"

# when not None, every step run is also appended here (TinyJit's capture)
capturing: list[ExecStep] | None = None
# when not None (and not capturing), every step run is appended here (a TinyJit's first call: the buffers it reads)
observing: list[ExecStep] | None = None
# while a TinyJit call is observed or captured: id -> weak reference of every tensor live before the call (Tensor.realize
# computes such a tensor outside the capture when an update inside the call would change what it reads)
call_outer: dict[int, Any] | None = None
# while a TinyJit's first call is observed: (weak reference, graph) of each tensor live before the call that stays lazy, so
# that its capture computes it inside the kernels (a graph of constants read on several devices: Tensor._jit_state)
call_consts: list[tuple[Any, Any]] | None = None

class UnboundVariableError(ValueError, RuntimeError):
  """A kernel reads a variable that has no value (a Tensor of an unbound Variable can be built and scheduled, not run)."""

class JitError(RuntimeError):
  """A jitted function was called in a way its captured kernels cannot replay (here, below TinyJit, so that tensor.py can
  raise it while a capture runs)."""

def lower_schedule(schedule: list[ExecItem], plan: dict[UOp, UOp] | None = None) -> list[ExecStep]:
  """Bind each ExecItem to Buffers (through the memory plan) and a compiled runner. New kernels compile in background
  threads while the next ones render (PARALLEL_COMPILE); they are waited for and loaded in schedule order, so the first
  failing kernel's error is the one raised, as when they compile one after another."""
  plan = plan or {}
  steps = []
  new = {b for ei in schedule for b in ei.bufs if not has_buffer(b)} if capturing is not None else None
  forked = _fork_codegen(schedule, plan)
  try:
    # with a child, this side renders the kernels it claims first (costliest first, as the child does); the loop below
    # then finds them in the method cache and waits for the child's
    while forked is not None and (ast := forked.claim()) is not None:
      _take_arrived(forked)
      try: get_runner(forked.device, ast, wait=False, forked=forked)
      except Exception: pass   # (raised again, in schedule order, when the loop gets to it)
    for ei in schedule:
      bufs = [buffer_of(plan.get(b, b)) for b in ei.bufs]
      values, isnew = (list(ei.bufs), [b in new for b in ei.bufs]) if new is not None else (None, None)
      if ei.ast.op is Ops.COPY: steps.append(ExecStep(None, bufs, values=values, new=isnew))
      else:
        devs = {b.device for b in bufs}
        if len(devs) > 1: raise RuntimeError(f"a kernel reads buffers on several devices {sorted(devs)}; use .to(device) first")
        if forked is not None: _take_arrived(forked)
        steps.append(ExecStep(get_runner(bufs[0].device, ei.ast, wait=False, forked=forked), bufs, ei.var_vals, values, isnew))
  except BaseException:
    if (err := _wait_all(steps)) is not None: raise err   # an earlier kernel's compile error comes first, as one at a time
    raise
  finally:
    if forked is not None: forked.close()
  if (err := _wait_all(steps)) is not None: raise err
  return steps

def _take_arrived(forked: Any) -> None:
  # the child's programs that came: their compiles start now, not when the loop gets to them (ViT-Ti: a 0.6 s compile tail)
  for ast in forked.arrived():
    try: get_runner(forked.device, ast, wait=False, forked=forked)
    except Exception: pass   # (raised again, in schedule order, when the loop gets to it)

def _fork_codegen(schedule: list[ExecItem], plan: dict[UOp, UOp]) -> Any:
  """A child process rendering some of the schedule's new kernels (engine/forkgen.py), when there are enough of them
  (one device, none in the method cache or, judged by the last one, in the program cache), else None."""
  if PARALLEL_CODEGEN.value <= 0: return None
  items = [ei for ei in schedule if ei.ast.op is not Ops.COPY and ei.bufs]
  if len(items) < PARALLEL_CODEGEN.value: return None   # (a matmul's one or two kernels: nothing looked up)
  devs = {buffer_of(plan.get(ei.bufs[0], ei.bufs[0])).device for ei in items}
  if len(devs) != 1: return None
  from tinygrad.codegen import progcache
  from tinygrad.engine import forkgen
  dev = Device[devs.pop()]
  new = [a for a in dict.fromkeys(ei.ast for ei in items) if _runner_key(dev, a) not in method_cache]
  if len(new) < PARALLEL_CODEGEN.value or (pkey := progcache.program_key(new[-1], dev)) is None or progcache.load(pkey, new[-1]) is not None: return None
  return forkgen.start(new, dev)

def _wait_all(steps: list[ExecStep]) -> BaseException | None:
  """Wait for every step's compile (none is left running in the background after an error) and load it; the first
  error in schedule order, or None."""
  first: BaseException | None = None
  for s in steps:
    if s.runner is None: continue
    try: s.runner.ready()
    except BaseException as e: first = first or e
  return first

_SIGINT = int(signal.SIGINT)
_held: list[DeferredInterrupt] = []   # the outermost active DeferredInterrupt (main thread only): nested ones share its hold
class DeferredInterrupt:
  """While active (main thread, Python's own SIGINT handler installed), Ctrl-C is held until `check()` at a step boundary,
  so an interrupted run stops between two steps, never inside one: what ran is known exactly.

  Nested ones share one hold, which the outermost puts back, and only the outermost's end raises a Ctrl-C held to then.
  `lazy`: it holds nothing until one inside it starts holding, then holds until its own end, and the checks inside it
  raise (Tensor.realize: a Ctrl-C during scheduling or a compile raises at once; one after the first kernel stops the
  run at a step boundary, or, after the last one, waits until every tensor records what ran, so no update runs twice).
  Inside a plain (not lazy) one nothing raises before its end: a TinyJit replay is applied whole."""
  def __init__(self, lazy: bool = False) -> None:
    self.lazy, self.pending, self.on = lazy, False, False
    self.root = self
    self.prev: Any = None    # the handler replaced while held (None: nothing replaced)
    self.frame: Any = None   # the outermost one's: the frame whose `with` it is
  # through _signal, the C module under `signal`: signal.signal/getsignal convert handlers and numbers to enums, ~30 us of
  # every TinyJit replay (two calls each); the same calls without the conversion cost ~2 us
  def __enter__(self) -> DeferredInterrupt:
    if threading.current_thread() is not threading.main_thread(): return self   # (a signal only ever interrupts the main thread)
    self.on = True
    # an outermost one whose frame is gone never ended: a second Ctrl-C cut its __exit__ (or __enter__) short before it let
    # go; left, every later hold would be its own and Ctrl-C would stay held outside tinygrad too
    if _held and not _on_stack(_held[0].frame): _held[0]._release()
    if not _held:
      self.frame = sys._getframe(1)
      _held.append(self)
    self.root = root = _held[0]
    if not self.lazy and root.prev is None and _signal.getsignal(_SIGINT) is _signal.default_int_handler:
      root.prev = _signal.signal(_SIGINT, root._hold)
    return self
  def _hold(self, signum: int, frame: Any) -> None: self.pending = True
  def _release(self) -> None:
    _held.clear()
    if self.prev is not None: _signal.signal(_SIGINT, self.prev)
    self.prev = self.frame = None
  def check(self) -> None:
    if not self.on: return
    root = self.root
    if root.pending and (root is self or root.lazy):
      root.pending = False
      raise KeyboardInterrupt
  def __exit__(self, *exc: Any) -> None:
    if not self.on or not _held or _held[0] is not self: return
    self._release()
    if exc[0] is None: self.check()

def _on_stack(frame: Any) -> bool:
  f: Any = sys._getframe(2)
  while f is not None and f is not frame: f = f.f_back
  return f is not None

def run_steps(steps: list[ExecStep], var_vals: dict[UOp, int] | None = None, progress: list[int] | None = None) -> None:
  """Run each step with `var_vals` (None: the values each step was scheduled with). `progress[0]` counts the steps that
  completed: when a step raises (or Ctrl-C, which is held until the step running ends), the steps before it ran, it did not."""
  with DeferredInterrupt() as held:
    for i, step in enumerate(steps):
      step.run(var_vals)
      if progress is not None: progress[0] = i + 1
      # (CAPTURING=0 inside a jitted function: the step runs in this call only, as in public tinygrad)
      if capturing is not None:
        if CAPTURING: capturing.append(step)
      elif observing is not None: observing.append(step)
      held.check()

def run_schedule(schedule: list[ExecItem], plan: dict[UOp, UOp] | None = None, var_vals: dict[UOp, int] | None = None,
                 progress: list[int] | None = None) -> None:
  """Run every ExecItem in order; `plan` maps BUFFERs to the BUFFER whose memory they reuse (memory planner)."""
  if recording is not None:   # Tensor.linear_with_vars: kept to run later (run_linear), through the memory plan
    recording.extend(UOp(Ops.CALL, src=(ei.ast, *[plan.get(b, b) if plan else b for b in ei.bufs]), arg=tuple(ei.var_vals.items()))
                     for ei in schedule)
    return
  # every kernel is compiled before any runs: a kernel that fails to compile leaves no buffer half-written
  run_steps(lower_schedule(schedule, plan), var_vals, progress)

recording: list[UOp] | None = None

def _linear_items(linear: UOp, var_vals: dict[str, int] | None) -> list[ExecItem]:
  if linear.op is not Ops.LINEAR: raise TypeError(f"expected the LINEAR UOp of Tensor.linear_with_vars, got {linear.op}")
  return [ExecItem(c.src[0], list(c.src[1:]), var_vals={v: (var_vals or {}).get(v.arg[0], x) for v, x in c.arg}) for c in linear.src]

def compile_linear(linear: UOp) -> UOp:
  """Compile every kernel of a LINEAR schedule (Tensor.linear_with_vars) now, so that run_linear only runs them; a kernel
  that fails to compile raises here. Returns `linear` (its steps keep their SINKs: the compiled programs are cached)."""
  lower_schedule(_linear_items(linear, None))
  return linear

def run_linear(linear: UOp, var_vals: dict[str, int] | None = None) -> None:
  """Run the steps of a LINEAR schedule (Tensor.linear_with_vars / schedule_linear) in order, `var_vals` giving the bound
  Variables' values by name (default: the values they were bound to). It may run again: each run recomputes the same
  buffers from their sources as they are then."""
  run_schedule(_linear_items(linear, var_vals))

def realize_uops(uops: list[UOp], on_partial: Callable[[dict[UOp, UOp]], None] | None = None,
                 held: dict[UOp, UOp] | None = None, topo: dict[UOp, None] | None = None,
                 want_held: Callable[[], bool] | None = None) -> list[UOp]:
  """Compute the tensor graphs `uops`; each result is a BUFFER reshaped to its tensor's shape.

  When a step fails or is interrupted, `on_partial` is given what the steps that ran computed, before the error goes on:
  node of `uops`' graph -> its value's buffer (an ASSIGN -> its target, which holds the written value), so the caller can
  stop those from running a second time (an update applied twice) while the rest stays pending. `held`, when given, gets
  the same map for the whole schedule once it ran: the intermediate kernel outputs whose buffers still hold their values
  (only if `want_held()` says so, asked only when the schedule has such outputs). `topo`: the graph's nodes, sources first
  (stopping at buffers), where the caller has them."""
  st = time.perf_counter()
  with gc_paused():   # scheduling and codegen build many short-lived UOps: no collector scans of every live object
    schedule, results = create_schedule(uops, topo)
    if (prof := _prof.PROFILER) is not None: prof.span(f"schedule {len(schedule)} items", "schedule", st, time.perf_counter())
    keep = {r.base for r in results.values()}   # (a symbolic size's view is a reshaped shrink of its buffer)
    # (a buffer of another size is reused only where no live graph may read the intermediates, once asked: want_held's
    # answer, which the end of the realize reads too; with an assign in the graph, it always hands them on)
    asked: list[bool] = []
    def may_hold() -> bool:
      if not asked: asked.append(want_held is None or want_held())
      return asked[0]
    plan, progress = memory_plan(schedule, keep, lambda: held is None or not may_hold()), [0]
    try: run_schedule(schedule, plan, progress=progress)
    except BaseException:
      if on_partial is not None and progress[0]: on_partial(_completed(uops, schedule[:progress[0]], plan))
      raise
    # (nothing to hand on when every item wrote a result or an assign's target: the roots' buffers)
    # (and a custom kernel's outputs, which are its tensors' buffers, written in place: it must not run again)
    def custom(ei: ExecItem) -> bool: return getattr(ei.metadata.get("key_node") if ei.node is None else ei.node, "op", None) is Ops.KERNEL
    if held is not None and any(ei.bufs[0] not in keep or custom(ei) for ei in schedule) and may_hold():
      held.update(_completed(uops, schedule, plan))
  return [results[u] for u in uops]

def _completed(uops: list[UOp], ran: list[ExecItem], plan: dict[UOp, UOp]) -> dict[UOp, UOp]:
  """node -> buffer for what the items that ran computed and still hold: a value whose memory a later item that ran
  reused (the memory planner's reuse comes after its last reader, all of which ran) is left out."""
  mem = [plan.get(ei.bufs[0], ei.bufs[0]) for ei in ran]
  last = {m: i for i, m in enumerate(mem)}
  out: dict[UOp, UOp] = {}
  nodes = item_nodes(uops, ran)
  # a custom kernel's outputs (AFTER nodes over it): the buffers it wrote, unless a later item reused one's memory
  afters = [u for u in UOp(Ops.SINK, src=tuple(uops)).toposort(gate=lambda x: x.op is not Ops.BUFFER) if u.op is Ops.AFTER] \
    if any(n is not None and n.op is Ops.KERNEL for n in nodes) else []
  for i, (ei, n) in enumerate(zip(ran, nodes)):
    if n is None: continue
    if n.op is Ops.KERNEL:
      for a in afters:
        if a.src[1] is n and last.get(m := plan.get(b := ei.bufs[n.src.index(a.src[0])], b), -1) <= i: out[a] = buffer_view(m, a.shape)
    elif n.op is Ops.ASSIGN: out[n] = n.src[0]
    elif last[mem[i]] == i: out[n] = buffer_view(mem[i], n.shape)
  return out

# ---- eager plans: a realize of a graph built again (a loop's `(a @ b).realize()`) runs its kernels from a plan ----
# Only a pure graph (elementwise, movement and reduce ops over allocated buffers: no assign, copy, contiguous, variable or
# custom kernel, whose realize does more than compute it) on one tensor. Its plan is what the schedule cache, the memory
# planner and the method cache give that structure, resolved once: which buffers each kernel reads, which new ones it
# makes, its runner. A realize of it then finds the key (memoised per node: only the nodes built since the last realize
# are walked) and runs the kernels; scheduling, lowering and memory planning (~2/3 of a small realize's host time) are
# skipped. A plan is dropped with any schedule or method cache entry, and found again only under the flags it was made with
_EAGER_OPS = frozenset(GroupOp.ALU | GroupOp.Movement | {Ops.CONST, Ops.DEVICE, Ops.BUFFER, Ops.REDUCE_AXIS, Ops.CAST, Ops.BITCAST,
                                                         Ops.DETACH, Ops.SINK})
_BUF, _CONST_OP, _DEVICE_OP, _MOVES, _WEAKINT = Ops.BUFFER, Ops.CONST, Ops.DEVICE, GroupOp.Movement, dtypes.weakint

class EagerPlan:
  """The kernels of one graph structure: `steps` (runner, indices into the buffer list, ops, bytes, the node's place in the
  graph's toposort or -1, the kernel's AST), over the buffer list `inputs + new`; `news`: (device, size, dtype) of each new
  buffer; `outs`: the root's buffer index; `inter`: some kernel writes an intermediate (not the root's buffer); `version`:
  ContextVar.version when it was made."""
  __slots__ = ("version", "steps", "news", "outs", "inter")
  def __init__(self, version: int, steps: list[tuple[CompiledRunner, list[int], int, int, int, UOp]], news: list[tuple[str, int, Any]],
               outs: int, inter: bool):
    self.version, self.steps, self.news, self.outs, self.inter = version, steps, news, outs, inter

# structure id (eager_key) -> its plan
eager_plans: dict[int, EagerPlan] = {}
method_cache.derived.append(eager_plans)
_schedule_cache.derived.append(eager_plans)

def eager_ready() -> bool:
  """Whether a realize may run from a plan now: nothing records or prints what a realize runs (TinyJit, PROFILE, VIZ, DEBUG)."""
  return capturing is None and observing is None and call_outer is None and recording is None and _prof.PROFILER is None and \
    _upat.TRACER is None and DEBUG.value < 1 and bool(SCACHE)

# a node's structure id (memoised on it: "_ek"), with the input BUFFERs below it in a realize's toposort order (first use):
# _structure's key, where a new node costs one tuple and one lookup and a node already built (a constant, an input, a
# shared subgraph) nothing. Ids are never reused (a cleared table only makes misses), so one id is one structure: its op,
# dtype, arg (a CONST's by value, type and sign), tag, and each source's id with the places of its inputs among the node's
# (a - b and a - a differ); an input's dtype, size and device. None: not a pure graph
_EK_IDS: dict[tuple, int] = {}
_ek_next = itertools.count(1)   # (from 1: an id is never 0, so `get(t) or` is a hit test)
def _ek(n: UOp) -> tuple[int, tuple[UOp, ...]] | None:
  # (a source's inputs are given as their places among the node's, or () when they are its first ones in order: the
  # source's id says how many it has. No comprehension: each is a function call on CPython 3.11)
  op, dt, arg = n.op, n.dtype, n.arg
  if op not in _EAGER_OPS or dt is _WEAKINT: return None
  if op is _BUF:
    t: tuple = (op, dt, arg, n.src[1].arg)
    ins: tuple[UOp, ...] = (n,)
  else:
    if op is _CONST_OP: arg = _argkey(op, arg)
    elif op in _MOVES:
      if not _int_arg(arg): return None
    elif op is _DEVICE_OP and type(arg) is not str: return None
    if len(src := n.src) == 1:   # (a movement op, a reduce, a cast: its source's inputs are its own)
      if (c := src[0].__dict__["_ek"]) is None: return None
      t, ins = (op, dt, arg, n.tag, (c[0],)), c[1]
      return (_EK_IDS.get(t) or _ek_id(t)), ins
    # (most nodes: every source reads no input or the same ones, whose places are then the node's: the sources' ids say it)
    ids, subs, same, ins = [], [], True, ()
    for x in n.src:
      if (c := x.__dict__["_ek"]) is None: return None
      ids.append(c[0])
      subs.append(c)
      if (a := c[1]) and a is not ins and a != ins:
        if ins: same = False
        else: ins = a
    if same: parts: tuple = tuple(ids)
    else: ins, parts = _merge(subs)
    t = (op, dt, arg, n.tag, parts)
  return (_EK_IDS.get(t) or _ek_id(t)), ins

def _ek_id(t: tuple) -> int:
  if len(_EK_IDS) >= 1 << 17: _EK_IDS.clear()
  i = _EK_IDS[t] = next(_ek_next)
  return i

def _merge(subs: list[tuple[int, tuple[UOp, ...]]]) -> tuple[tuple[UOp, ...], tuple]:
  # the node's inputs (its sources', first use first) and each source's id with its inputs' places (() for the first ones)
  at: dict[UOp, int] = {}
  for c in subs:
    for u in c[1]:
      if u not in at: at[u] = len(at)
  ins = tuple(at)
  parts = []
  for c in subs: parts.append((c[0], () if c[1] == ins[:len(c[1])] else tuple([at[u] for u in c[1]])))
  return ins, tuple(parts)

def eager_key(root: UOp) -> tuple[int, tuple[UOp, ...]] | None:
  """(structure id, input BUFFERs by first use) of a pure graph whose inputs all have their Buffer, or None."""
  if (k := root.__dict__.get("_ek", False)) is False:
    # (as _fill_up, sources first, but nothing below a buffer or a node no pure graph has: it is None, as is every node above)
    stack = [root]
    while stack:
      n = stack[-1]
      if "_ek" in n.__dict__:
        stack.pop()
        continue
      top = len(stack)
      if n.op is not _BUF and n.op in _EAGER_OPS:
        for x in n.src:
          if "_ek" not in x.__dict__: stack.append(x)
      if len(stack) == top: n.__dict__["_ek"] = _ek(stack.pop())
    k = root.__dict__["_ek"]
  if k is None: return None
  for u in k[1]:
    if "_buf" not in u.__dict__: return None   # (a buffer made by no one yet: the memory planner may place a result in it)
  return k

def make_eager_plan(root: UOp, topo: dict[UOp, None]) -> EagerPlan | None:
  """The plan of `root`'s graph (eager_key's), from the schedule cache's entry of its structure after a realize of it ran
  (its kernels are in the method cache then), or None."""
  to_key: dict[UOp, UOp] = {}
  key, inputs = _structure([root], topo, to_key)
  if (entry := _schedule_cache.get(key)) is None or (k := eager_key(root)) is None or list(k[1]) != inputs: return None
  items, outs, news = entry
  fresh = [new_buffer(d, n, dt) for d, n, dt in news]
  def get(r: tuple[bool, int]) -> UOp: return inputs[r[1]] if r[0] else fresh[r[1]]
  sched = [ExecItem(ast, [get(r) for r in refs]) for ast, refs, _ in items]
  if len(outs) != 1 or any(ei.ast.op is not Ops.SINK for ei in sched): return None
  keep = {get(outs[0])}
  plan = memory_plan(sched, keep)
  # the buffer list: the inputs, then each new buffer the memory plan does not place in another's memory
  slot = {b: i for i, b in enumerate(inputs)}
  made = [b for b in fresh if b not in plan]
  slot |= {b: len(inputs) + i for i, b in enumerate(made)}
  slot |= {b: slot[plan[b]] for b in fresh if b in plan}
  at, nodes = {n: i for i, n in enumerate(topo)}, {k: n for n, k in to_key.items()}
  steps = []
  for ei, (_, _, kn) in zip(sched, items):
    if len({b.src[1].arg for b in ei.bufs}) != 1: return None
    runner = get_runner(ei.bufs[0].src[1].arg, ei.ast)
    if runner.p.vars: return None
    est = runner.p.estimates
    where = at.get(nodes[kn], -1) if kn is not None and kn in nodes else -1
    steps.append((runner, [slot[b] for b in ei.bufs], sym_infer(est.ops, {}), sym_infer(est.mem, {}), where, ei.ast))
  return EagerPlan(ContextVar.version, steps, [(b.src[1].arg, b.arg, b.dtype) for b in made], slot[get(outs[0])],
                   any(ei.bufs[0] not in keep for ei in sched))

def run_eager_plan(plan: EagerPlan, inputs: tuple[UOp, ...], root: UOp, on_partial: Callable[[dict[UOp, UOp]], None],
                   held: DeferredInterrupt) -> UOp:
  """Run the plan's kernels over `inputs` (eager_key's) and new buffers; the root's BUFFER. When a kernel fails (or a
  Ctrl-C, which `held`, the caller's, holds until a kernel ends), `on_partial` gets what the ones that ran computed, as
  realize_uops gives it."""
  bufs = [n.__dict__["_buf"] for n in inputs] + [Buffer(d, n, dt) for d, n, dt in plan.news]
  done = 0
  try:
    for runner, refs, ops, mem, _, _ in plan.steps:
      sb = [bufs[i] for i in refs]
      for b in sb:
        if not hasattr(b, "_buf"): b.allocate()
      runner(sb)
      GlobalCounters.kernel_count += 1
      GlobalCounters.global_ops += ops
      GlobalCounters.global_mem += mem
      done += 1
      held.check()
  except BaseException:
    if done:
      uops = {i: n for i, n in enumerate(inputs)}
      def uop(i: int) -> UOp:
        if i not in uops: uops[i] = buffer_node(bufs[i])
        return uops[i]
      nodes = list(UOp(Ops.SINK, src=(root,)).toposort(gate=above_buffers))
      ran = [ExecItem(ast, [uop(i) for i in refs], node=nodes[p] if p >= 0 else None) for _, refs, _, _, p, ast in plan.steps[:done]]
      on_partial(_completed([root], ran, {}))
    raise
  out = plan.outs
  if out < len(inputs): return inputs[out]
  u = new_buffer(*plan.news[out - len(inputs)])
  u.__dict__["_buf"] = bufs[out]
  return u
