"""Multi-process data parallelism: `mpirun -n N python train.py` starts N processes (ranks); each trains on its part of
the batch and the gradients are averaged over the ranks, so every rank takes the same step as one process on the whole
batch would. Collectives run through a Backend: MPI (mpi4py over OpenMPI, `pip install tinygrad-core[mpi]`) is the one
built; MPI's own host files take it across machines.

  from tinygrad import distributed as dist
  dist.init()                                        # idempotent; without mpirun a world of one
  dist.rank(), dist.world_size()                     # torch.distributed's get_rank()/get_world_size() are aliases
  y = dist.all_reduce(x, op="sum")                   # a new Tensor on x's device; "sum", "mean", "max", "min"
  opt = dist.DistributedOptimizer(nn.optim.Adam(params))  # rank 0's weights to all; step() first averages the grads
  # or, by hand, after backward(): dist.all_reduce_grads(params)   (one collective per dtype, on one flat buffer)

A collective is a step of the realize engine, like a kernel: inside a TinyJit it is captured and replayed.
Every collective first exchanges a short descriptor (its number, op, dtype and shape) between the ranks: ranks that
disagree (another dtype, shape or op, or one rank skipped a collective) would get garbage from MPI, so every rank prints
both sides and the job aborts. A rank that dies must not leave the others waiting forever (MPI's default): a collective
still waiting after a tenth of TINYGRAD_DIST_TIMEOUT (30 s at most) says so once, one that has not finished after
TINYGRAD_DIST_TIMEOUT seconds prints which one and MPI_Abort()s every rank, and after init() an uncaught exception on
one rank aborts the job (mpirun itself ends it when a rank exits with an error code).

Another engine plugs in as a Backend subclass registered in BACKENDS and chosen with init(name): its all_reduce,
broadcast and barrier get device Buffers, so NCCL on NV GPUs would pass the buffers' device pointers and the device's
stream to ncclAllReduce/ncclBroadcast (no host copy; the rank's GPU picked from the launcher's local rank), where the
MPI backend here reads and writes them through host memory.
"""
from __future__ import annotations
import os, sys, time, hashlib, threading, contextlib
from typing import Any, Callable, ClassVar, Iterator
from tinygrad.dtype import DType, dtypes, to_numpy, OPMATH_F32
from tinygrad.helpers import DIST_TIMEOUT, prod
from tinygrad.device import Buffer, Device
from tinygrad.renderer import ProgramSpec, Estimates
from tinygrad.tensor import Tensor
from tinygrad.engine import realize as _realize
from tinygrad.engine.buffers import buffer_of, base_buffer

REDUCE_OPS = ("sum", "mean", "max", "min")
# variables through which launchers tell a process its rank: OpenMPI, MPICH/Hydra (PMI), PMIx
LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK")

class Backend:
  """A collective engine between the processes of one job: one instance per process, `rank` in [0, `world_size`).
  Every rank calls the same collectives in the same order with buffers of the same size and dtype."""
  name: ClassVar[str] = ""
  rank: int = 0
  world_size: int = 1
  def all_reduce(self, out: Buffer, inp: Buffer, op: str) -> None:
    """out = `op` ("sum", "max", "min") over every rank's `inp` (two buffers of one size and dtype, on one device)."""
    raise NotImplementedError
  def broadcast(self, out: Buffer, inp: Buffer, src: int) -> None:
    """out = rank `src`'s `inp` on every rank."""
    raise NotImplementedError
  def barrier(self) -> None:
    """Return when every rank has called barrier()."""
    raise NotImplementedError
  def exchange(self, desc: bytes) -> list[bytes] | None:
    """Every rank's `desc` (the same length on each), in rank order: the check that the ranks run the same collective.
    None: this backend cannot, and collectives are not checked."""
    return [desc] if self.world_size == 1 else None
  def abort(self, code: int) -> None:
    """End every rank of the job now with exit code `code` (after a rank failed or a collective timed out)."""
    os._exit(code)

def _host_view(buf: Buffer) -> Any:
  # the buffer's bytes as a numpy array (the buffer's own memory where the allocator offers a host view, else a copy)
  import numpy as np
  Device[buf.device].synchronize()
  return np.frombuffer(buf.as_buffer(), dtype=to_numpy(buf.dtype))

def _host_out(buf: Buffer) -> tuple[Any, bool]:
  # a host array to receive into, and whether it IS the buffer's memory (else it is copied in afterwards)
  import numpy as np
  if hasattr(buf.allocator, "_as_buffer"):
    arr = _host_view(buf)
    if arr.flags.writeable: return arr, True
  return np.empty(buf.size, dtype=to_numpy(buf.dtype)), False

class MPIBackend(Backend):
  """MPI through mpi4py: COMM_WORLD of the job mpirun started (a world of one without mpirun)."""
  name = "mpi"
  def __init__(self) -> None:
    try:
      from mpi4py import MPI
    except (ImportError, RuntimeError, OSError) as e:
      raise ImportError(f"tinygrad.distributed's MPI backend needs mpi4py and an MPI library ({e}): pip install tinygrad-core[mpi] "
                        "(mpi4py), and OpenMPI: apt-get install openmpi-bin libopenmpi-dev") from e
    self.MPI, self.comm = MPI, MPI.COMM_WORLD
    self.rank, self.world_size = self.comm.Get_rank(), self.comm.Get_size()
    self.ops = {"sum": MPI.SUM, "max": MPI.MAX, "min": MPI.MIN}
  def all_reduce(self, out: Buffer, inp: Buffer, op: str) -> None:
    dst, direct = _host_out(out)
    self.comm.Allreduce(_host_view(inp), dst, op=self.ops[op])
    if not direct: out.copyin(memoryview(dst).cast("B"))
  def broadcast(self, out: Buffer, inp: Buffer, src: int) -> None:
    dst, direct = _host_out(out)
    if self.rank == src: dst[:] = _host_view(inp)
    self.comm.Bcast(dst, root=src)
    if not direct: out.copyin(memoryview(dst).cast("B"))
  def barrier(self) -> None: self.comm.Barrier()
  def exchange(self, desc: bytes) -> list[bytes]:
    import numpy as np
    got = np.zeros((self.world_size, len(desc)), dtype=np.uint8)
    self.comm.Allgather(np.frombuffer(desc, dtype=np.uint8), got)
    return [bytes(row) for row in got]
  def abort(self, code: int) -> None: self.comm.Abort(code)

BACKENDS: dict[str, Callable[[], Backend]] = {"mpi": MPIBackend}

class _Watchdog:
  """One thread per process: when the collective in progress has waited a tenth of TINYGRAD_DIST_TIMEOUT (WARN_S at
  most) it says so, once; when it outlives the timeout it says which one and aborts the job (the collective itself blocks
  in MPI, which offers no timeout; the abort is MPI's way to end every rank). The thread polls a few times a second: a
  collective only swaps one tuple (a lock and a wake-up cost ~1 ms each on a busy machine, more than a small all-reduce)."""
  POLL_S, WARN_S = 0.25, 30.0
  def __init__(self, backend: Backend):
    self.backend = backend
    self.current: tuple[str, float, float] | None = None   # (what, timeout, start) of the collective in progress
    threading.Thread(target=self._run, name="tinygrad-dist-watchdog", daemon=True).start()
  @contextlib.contextmanager
  def guard(self, what: str) -> Iterator[None]:
    self.current = (what, float(DIST_TIMEOUT.value), time.monotonic())
    try: yield
    finally: self.current = None
  def _run(self) -> None:
    warned = None
    while True:
      time.sleep(self.POLL_S)
      if (cur := self.current) is None: continue
      what, timeout, start = cur
      b, waited = self.backend, time.monotonic() - start
      if waited >= timeout:
        sys.stderr.write(f"tinygrad.distributed: rank {b.rank} of {b.world_size}: {what} did not finish within "
                         f"TINYGRAD_DIST_TIMEOUT={timeout:g} s: another rank died, hangs, or runs different collectives; "
                         "aborting every rank (raise TINYGRAD_DIST_TIMEOUT if a rank is just slow)\n")
        sys.stderr.flush()
        b.abort(1)
      elif waited >= min(self.WARN_S, timeout / 10) and warned is not cur:
        warned = cur
        sys.stderr.write(f"tinygrad.distributed: rank {b.rank} of {b.world_size}: still waiting in {what} after {waited:.1f} s "
                         f"(another rank is slow, stopped or elsewhere); the job aborts at TINYGRAD_DIST_TIMEOUT={timeout:g} s\n")
        sys.stderr.flush()

_DESC_BYTES = 240   # a collective's descriptor, padded: what every rank sends every other before the collective itself
_started = 0        # collectives this process has started (each descriptor carries its number)

def _same_on_every_rank(b: Backend, desc: str) -> None:
  """Exchange `desc` (op, dtype, shape) with every rank; when any differs, print every rank's and abort the job: MPI would
  pair the buffers of different collectives and give garbage (or hang on a skipped one)."""
  global _started
  _started += 1
  raw = f"#{_started} {desc}".encode()
  if len(raw) > _DESC_BYTES: raw = raw[:_DESC_BYTES - 17] + b" sha1=" + hashlib.sha1(raw).hexdigest()[:11].encode()
  got = b.exchange(raw.ljust(_DESC_BYTES, b"\0"))
  if got is None: return
  descs = [g.rstrip(b"\0").decode(errors="replace") for g in got]
  if all(d == descs[0] for d in descs): return
  sys.stderr.write(f"tinygrad.distributed: rank {b.rank} of {b.world_size}: the ranks disagree on collective #{_started}: "
                   + "; ".join(f"rank {r} calls {d}" for r, d in enumerate(descs))
                   + ". Every rank must call the same collectives in the same order with the same op, dtype and shape; aborting every rank\n")
  sys.stderr.flush()
  b.abort(1)

_backend: Backend | None = None
_watchdog: _Watchdog | None = None

def launched() -> bool:
  """True when this process was started by an MPI launcher (mpirun/mpiexec/srun), i.e. it is one rank of a job."""
  return any(v in os.environ for v in LAUNCHER_VARS)

def is_initialized() -> bool: return _backend is not None

def init(backend: str = "mpi") -> None:
  """Join the job (idempotent). `backend`: one of BACKENDS ("mpi"). After it, an uncaught exception on this rank aborts
  every rank, rather than leaving them waiting in a collective for this one."""
  global _backend, _watchdog
  if backend not in BACKENDS: raise ValueError(f"unknown distributed backend {backend!r}; valid: {', '.join(BACKENDS)}")
  if _backend is not None:
    if _backend.name != backend: raise RuntimeError(f"tinygrad.distributed is already initialized with backend {_backend.name!r}, not {backend!r}")
    return
  b = BACKENDS[backend]()
  _backend, _watchdog = b, _Watchdog(b)
  if b.world_size > 1:
    prev = sys.excepthook
    def abort_on_uncaught(tp: Any, value: Any, tb: Any) -> None:
      prev(tp, value, tb)
      sys.stderr.write(f"tinygrad.distributed: rank {b.rank} of {b.world_size} raised {tp.__name__}; aborting every rank\n")
      sys.stderr.flush()
      b.abort(1)
    sys.excepthook = abort_on_uncaught

def _get() -> Backend:
  if _backend is None: raise RuntimeError("tinygrad.distributed is not initialized: call tinygrad.distributed.init() first")
  return _backend

def backend() -> Backend:
  """The Backend this process joined the job with (init() first)."""
  return _get()

def rank() -> int:
  """This process's rank in [0, world_size())."""
  return _get().rank
def world_size() -> int:
  """The number of processes (ranks) in the job."""
  return _get().world_size
get_rank, get_world_size = rank, world_size   # torch.distributed's names

class _Collective(_realize.CompiledRunner):
  """A collective as a runner of the realize engine (no program: a host function of the step's buffers), so TinyJit
  captures it between the kernels that produce its input and those that read its output, and replays it."""
  dev: Any = None   # no device program: a TinyJit replay never batches it into a device's graph (engine/graph.py's _key)
  def __init__(self, name: str, fxn: Callable[..., None], device: str, nbytes: int):  # pylint: disable=super-init-not-called
    self.p = ProgramSpec(name, "", device, estimates=Estimates(mem=2*nbytes, lds=2*nbytes))
    self.fxn = fxn
  def ready(self) -> _Collective: return self
  def __call__(self, bufs: list[Buffer], var_vals: dict | None = None, wait: bool = False) -> float | None:
    st = time.perf_counter()
    assert _watchdog is not None
    with _watchdog.guard(f"{self.p.name} of {bufs[0].nbytes} bytes of {bufs[0].dtype}"): self.fxn(*bufs)
    return time.perf_counter() - st if wait else None

def _realized_buffer(t: Tensor, what: str) -> Buffer:
  if isinstance(t.device, tuple): raise ValueError(f"{what} of a tensor on several devices {t.device}: gather it with .to(device) first")
  # a realized tensor that is its whole buffer is read as it is (a copy kernel would cost more than a small collective)
  base = base_buffer(t.uop)
  if t._is_realized() and base is not None and base.arg == t.numel(): return buffer_of(base)
  x = t.contiguous().realize()
  base = base_buffer(x.uop)
  if base is None: raise RuntimeError(f"{what}: realize left {x.uop.op}, not a buffer")
  return buffer_of(base)

def _run(name: str, desc: str, t: Tensor, fxn: Callable[[Buffer, Buffer], None]) -> Tensor:
  # the collective's output is a fresh buffer written by one engine step that reads t's realized buffer; the step first
  # checks that every rank runs the same collective (`desc`), on every TinyJit replay too
  b = _get()
  if prod(t.shape) == 0:   # no data to move, but the ranks must still agree (a peer with data would wait for this one)
    assert _watchdog is not None
    with _watchdog.guard(f"{name} of 0 bytes of {t.dtype}"): _same_on_every_rank(b, desc)
    return Tensor.empty(*t.shape, dtype=t.dtype, device=t.device)
  inp = _realized_buffer(t, name)
  out = Tensor.empty(*t.shape, dtype=t.dtype, device=t.device)
  ob_uop = base_buffer(out.uop)   # (empty is already a buffer; .contiguous() would copy it)
  assert ob_uop is not None
  ob = buffer_of(ob_uop)
  def checked(out: Buffer, inp: Buffer) -> None:
    _same_on_every_rank(b, desc)
    fxn(out, inp)
  _realize.run_steps([_realize.ExecStep(_Collective(name, checked, str(t.device), ob.nbytes), [ob, inp])])
  return out

def _mpi_dtype(t: Tensor, what: str) -> DType | None:
  # the dtype the collective moves t in: half floats go as float32 (MPI has no 16-bit float), bools are refused
  if t.dtype == dtypes.bool: raise TypeError(f"{what} of a bool tensor is not supported; cast it first, e.g. t.int()")
  return dtypes.float32 if t.dtype in OPMATH_F32 else None

def all_reduce(tensor: Tensor, op: str = "sum") -> Tensor:
  """A new Tensor on `tensor`'s device: `op` over every rank's `tensor` ("sum", "mean", "max" or "min"; "mean" needs a
  float dtype). Every rank must call it, in the same order, with the same shape and dtype."""
  if op not in REDUCE_OPS: raise ValueError(f"unknown all_reduce op {op!r}; valid: {', '.join(REDUCE_OPS)}")
  if op == "mean" and not dtypes.is_float(tensor.dtype):
    raise TypeError(f"all_reduce op='mean' of a {tensor.dtype} tensor would truncate; use op='sum' or cast to a float dtype first")
  b = _get()
  desc = f"all_reduce op={op} dtype={tensor.dtype.name} shape={tuple(tensor.shape)}"
  wide = _mpi_dtype(tensor, "all_reduce")
  t = tensor.cast(wide) if wide is not None else tensor
  ret = _run(f"all_reduce_{op}", desc, t, lambda out, inp: b.all_reduce(out, inp, "sum" if op == "mean" else op))
  if op == "mean": ret = ret / b.world_size
  return ret.cast(tensor.dtype) if wide is not None else ret

def broadcast(tensor: Tensor, src: int = 0) -> Tensor:
  """A new Tensor on `tensor`'s device holding rank `src`'s `tensor` (every rank calls it with the same shape and dtype)."""
  b = _get()
  if not 0 <= src < b.world_size: raise ValueError(f"broadcast src={src} is not a rank; valid: 0..{b.world_size - 1}")
  desc = f"broadcast src={src} dtype={tensor.dtype.name} shape={tuple(tensor.shape)}"
  wide = _mpi_dtype(tensor, "broadcast")
  ret = _run("broadcast", desc, tensor.cast(wide) if wide is not None else tensor, lambda out, inp: b.broadcast(out, inp, src))
  return ret.cast(tensor.dtype) if wide is not None else ret

def barrier() -> None:
  """Return when every rank has reached barrier() (bounded by TINYGRAD_DIST_TIMEOUT, like every collective)."""
  b = _get()
  assert _watchdog is not None
  with _watchdog.guard("barrier"):
    _same_on_every_rank(b, "barrier")
    b.barrier()

def _by_dtype(ts: list[Tensor]) -> dict[tuple[Any, DType], list[int]]:
  groups: dict[tuple[Any, DType], list[int]] = {}
  for i, t in enumerate(ts): groups.setdefault((t.device, t.dtype), []).append(i)
  return groups

def _flat_collective(ts: list[Tensor], fxn: Callable[[Tensor], Tensor]) -> list[Tensor]:
  # one collective per (device, dtype): the tensors are packed into one flat buffer and unpacked as views of the result
  ret: list[Tensor] = list(ts)
  for idx in _by_dtype(ts).values():
    parts = [ts[i].flatten() for i in idx]
    red = fxn(parts[0].cat(*parts[1:]) if len(parts) > 1 else parts[0])
    off = 0
    for i in idx:
      n = ts[i].numel()
      ret[i] = red[off:off+n].reshape(ts[i].shape)
      off += n
  return ret

def all_reduce_grads(params: list[Tensor], op: str = "mean") -> None:
  """After backward(): each parameter's .grad becomes `op` (default "mean") over the ranks, so with each rank's loss the
  mean over its equal part of the batch, the step is the one for the mean over the whole batch. The gradients of one
  dtype travel in one flat buffer (one collective, not one per parameter)."""
  missing = [i for i, p in enumerate(params) if p.grad is None]
  if missing: raise RuntimeError(f"parameter(s) {missing} of {len(params)} have no .grad: call loss.backward() before all_reduce_grads()")
  grads = [p.grad for p in params if p.grad is not None]
  for p, g in zip(params, _flat_collective(grads, lambda x: all_reduce(x, op))): p.grad = g

def broadcast_params(params: list[Tensor], src: int = 0) -> None:
  """Give every rank rank `src`'s values of `params` (assigned in place; one collective per dtype), e.g. the initial
  weights, so that ranks whose random initialisations differ start equal."""
  for p, v in zip(params, _flat_collective(params, lambda x: broadcast(x.detach(), src))): p.assign(v)
  Tensor.realize(*params)

class DistributedOptimizer:
  """Data parallelism around an optimizer: at construction every rank takes rank 0's parameters and buffers; each
  step first averages the gradients over the ranks (all_reduce_grads), then steps the wrapped optimizer. BatchNorm's
  running statistics (buffers) stay per rank after that, as torch's DistributedDataParallel with broadcast_buffers=False."""
  def __init__(self, optimizer: Any, op: str = "mean"):
    self.optimizer, self.op = optimizer, op
    broadcast_params(optimizer.params + optimizer.buffers)
  def __getattr__(self, name: str) -> Any: return getattr(self.optimizer, name)   # lr, params, buffers ...
  def zero_grad(self) -> None: self.optimizer.zero_grad()
  def schedule_step(self) -> list[Tensor]:
    """Average the gradients over the ranks, then the wrapped optimizer's schedule_step()."""
    all_reduce_grads(self.optimizer.params, self.op)
    return self.optimizer.schedule_step()
  def step(self) -> None: Tensor.realize(*self.schedule_step())
