"""Renderer: linearized uops -> source text, plus the abilities of the target; ProgramSpec: everything needed to launch a kernel."""
from __future__ import annotations
from dataclasses import dataclass, field
from typing import Any, Callable, TYPE_CHECKING
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, sym_infer
from tinygrad.dtype import DType, PtrDType
from tinygrad.helpers import prod
if TYPE_CHECKING:
  from tinygrad.uop.upat import PatternMatcher
  from tinygrad.device import Compiler

@dataclass(frozen=True)
class TensorCore:
  """A matrix-multiply-accumulate instruction the renderer can emit: D(M,N) = A(M,K) @ B(K,N) + C."""
  dims: tuple[int, int, int]          # (N, M, K)
  threads: int                        # threads that cooperate on one instruction
  dtype_in: DType
  dtype_out: DType
  elements_per_thread: tuple[int, int, int]
  opts: tuple[str, ...] = ()
  swizzle: Any = None

class Renderer:
  """Turns linearized uops into source code and declares what the target can do.

  Subclasses set the class attributes below and implement `render`. A renderer carries an optional `compiler`: when None,
  the rendered source itself is the binary the runtime loads (WGSL, Metal source).
  """
  device: str = ""
  suffix: str = ""
  has_local: bool = False          # GPU-style launch: global ranges become SPECIAL launch indices
  has_shared: bool = False         # DEFINE_LOCAL (workgroup shared memory) is available
  has_threads: bool = False        # CPU: the outermost global range may be split across threads
  global_max: tuple[int, ...] | None = (0x7FFFFFFF, 65535, 65535)
  local_max: tuple[int, ...] | None = (1024, 1024, 64)
  shared_max: int = 32768
  supports_float4: bool = True
  tensor_cores: list[TensorCore] = []
  # SIMD: the widest vector in bytes (0: none), and the ops and scalar dtypes the renderer emits on vectors of them
  vector_bytes: int = 0
  vector_ops: frozenset[Ops] = frozenset()
  vector_dtypes: frozenset[DType] = frozenset()
  # CPU register tiling: the hardware's SIMD registers (width in bytes, 0: vector_bytes; how many), and the panel width in
  # bytes a big matmul's right operand is copied into first (0: never; read by Tensor.dot)
  register_bytes: int = 0
  registers: int = 16
  matmul_pack: int = 0
  code_for_op: dict[Ops, Callable[..., str]] = {}
  extra_matcher: PatternMatcher | None = None   # device-specific rewrites applied just before linearizing
  pre_matcher: PatternMatcher | None = None     # device-specific rewrites applied to the kernel before optimization
  supported_dtypes: frozenset[DType] | None = None  # None: every dtype
  # ALU ops this target computes to the conformance suite's accuracy only for |x| <= bound (its own builtins, documented
  # by the renderer); the suite checks them inside that domain and reports the limit
  approx_domain: dict[Ops, float] = {}
  compiler: Compiler | None = None

  def render(self, uops: list[UOp], name: str = "kernel") -> str:
    """Source text of a function called `name` for the linearized `uops` (see docs/ir.md for what each op means)."""
    raise NotImplementedError(f"{type(self).__name__} does not implement render")
  def __reduce__(self): return type(self), ()
  def __repr__(self) -> str: return f"{type(self).__name__}()"

@dataclass
class Estimates:
  """What one launch of a kernel does, for GlobalCounters and DEBUG=2's GFLOPS and GB/s: ALU ops, bytes loaded and stored
  (lds), and bytes of the global buffers it touches (mem). Each is an int or, with symbolic loop bounds, a UOp (sym_infer it)."""
  ops: int | UOp = 0
  lds: int | UOp = 0
  mem: int | UOp = 0

def _ones() -> list[int | UOp]: return [1, 1, 1]

@dataclass
class ProgramSpec:
  """A rendered (and possibly compiled) kernel, with what is needed to launch it."""
  name: str
  src: str
  device: str
  ast: UOp | None = None
  uops: list[UOp] | None = None
  lib: bytes | None = None
  global_size: list[int | UOp] = field(default_factory=lambda: _ones())
  local_size: list[int | UOp] | None = field(default_factory=lambda: _ones())  # None: the runtime picks
  vars: list[UOp] = field(default_factory=list)
  globals: list[int] = field(default_factory=list)
  outs: list[int] = field(default_factory=list)
  ins: list[int] = field(default_factory=list)
  estimates: Estimates = field(default_factory=Estimates)

  @staticmethod
  def from_uop(program: UOp) -> ProgramSpec:
    """Read a PROGRAM UOp (SINK, DEVICE, LINEAR, SOURCE[, BINARY]) in one pass over its uops."""
    if program.op is not Ops.PROGRAM: raise ValueError(f"expected a PROGRAM UOp, got {program.op}")
    parts = {s.op: s for s in program.src}
    sink, linear = parts[Ops.SINK], parts.get(Ops.LINEAR)
    uops = list(linear.src) if linear is not None else []
    global_size: list[int | UOp] = [1, 1, 1]
    local_size: list[int | UOp] = [1, 1, 1]
    has_local = False
    dvars: list[UOp] = []
    globs: list[int] = []
    outs: list[int] = []
    ins: list[int] = []
    est = Estimates()
    # address arithmetic is not the kernel's work: the ALU ops under an INDEX's offsets (or a gate) are not counted
    addressing: set[UOp] = set()
    for u in uops:
      if u.op is Ops.INDEX:
        for x in u.src[1:]: addressing.update(x.toposort(gate=lambda n: n not in addressing))
    # every op counts once per trip of the loops around it and per lane of its vector (MULACC is two ops)
    mult: int | UOp = 1
    loops: list[int | UOp] = []
    for u in uops:
      if u.op is Ops.RANGE:
        loops.append(mult)
        mult = mult * (u.src[0].arg if u.src[0].op is Ops.CONST else u.src[0])
      elif u.op is Ops.END and loops: mult = loops.pop()
      if u.op is Ops.DEFINE_VAR: dvars.append(u)
      elif u.op is Ops.DEFINE_GLOBAL:
        globs.append(u.arg)
        if isinstance(u.dtype, PtrDType) and u.dtype.size > 0: est.mem += u.dtype.size * u.dtype.base.itemsize
      elif u.op is Ops.SPECIAL:
        axis = int(u.arg[-1])
        size = u.src[0].arg if u.src[0].op is Ops.CONST else u.src[0]
        if u.arg[0] == "l":
          has_local = True
          local_size[axis] = size
        else:
          global_size[axis] = size
          if u.arg[0] == "i": local_size[axis] = 1  # gidx with no local split
      elif u.op is Ops.STORE:
        buf = u.src[0].src[0] if u.src[0].op is Ops.INDEX else u.src[0]
        if buf.op is Ops.DEFINE_GLOBAL and buf.arg not in outs: outs.append(buf.arg)
        if buf.op is Ops.DEFINE_GLOBAL: est.lds += mult * u.src[1].dtype.itemsize
      elif u.op is Ops.LOAD:
        buf = u.src[0].src[0] if u.src[0].op is Ops.INDEX else u.src[0]
        if buf.op is Ops.DEFINE_GLOBAL and buf.arg not in ins: ins.append(buf.arg)
        if buf.op is Ops.DEFINE_GLOBAL: est.lds += mult * u.dtype.itemsize
      elif u.op in GroupOp.ALU and u not in addressing:
        est.ops += mult * u.dtype.count * (2 if u.op is Ops.MULACC else 1)
    threads = prod(global_size) * (prod(local_size) if has_local else 1)   # the counts above are per thread
    est = Estimates(est.ops * threads, est.lds * threads, est.mem)
    source = parts[Ops.SOURCE].arg if Ops.SOURCE in parts else ""
    lib = parts[Ops.BINARY].arg if Ops.BINARY in parts else None
    name = sink.arg if isinstance(sink.arg, str) else "kernel"
    return ProgramSpec(name, source, parts[Ops.DEVICE].arg, sink, uops, lib, global_size, local_size if has_local else None,
                       sorted(dvars, key=lambda v: v.arg), sorted(globs), sorted(outs), sorted(ins), est)

  def launch_dims(self, var_vals: dict[UOp, int]) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """Concrete global and local sizes for these variable values."""
    gl = tuple(sym_infer(s, var_vals) for s in self.global_size)
    lc = tuple(sym_infer(s, var_vals) for s in self.local_size) if self.local_size is not None else None
    return gl, lc
  @property
  def function_name(self) -> str: return self.name
