"""Renderer: linearized uops -> source text, plus the abilities of the target; ProgramSpec: everything needed to launch a kernel."""
from __future__ import annotations
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, ClassVar, NamedTuple, TYPE_CHECKING
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, AxisType, sym_infer, kernel_name
from tinygrad.dtype import DType, PtrDType, dtypes
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

class DTypeSet(frozenset):
  """What `Renderer.supported_dtypes` reads as: a frozenset (`dt in ren.supported_dtypes`) that can also be called, public
  tinygrad's spelling `ren.supported_dtypes()`, which returns it as a set."""
  def __call__(self) -> set[DType]: return set(self)

class _SupportedDTypes:
  # the supported_dtypes ability: declared as a class attribute or set per instance (a frozenset, or None for every
  # dtype), read as the DTypeSet kernels may use, on the class (MetalRenderer.supported_dtypes) or an instance
  def __get__(self, obj: Any, owner: type) -> DTypeSet:
    return obj.__dict__["_supported_dtypes"] if obj is not None and "_supported_dtypes" in obj.__dict__ else owner._supported_dtypes  # type: ignore[attr-defined]
  def __set__(self, obj: Any, v: frozenset[DType] | set[DType] | None) -> None: obj.__dict__["_supported_dtypes"] = _dtype_set(v)
# the fp8 dtypes are in every set: the core stores them as bytes and casts them with uint32/float32 ops (native_fp8)
def _dtype_set(v: frozenset[DType] | set[DType] | None) -> DTypeSet: return DTypeSet(dtypes.all if v is None else frozenset(v) | frozenset(dtypes.fp8s))

def _norm(v: Any) -> Any:   # (module level: a recursive closure is a reference cycle left for the collector)
  if isinstance(v, (frozenset, set)): return tuple(sorted(map(str, v)))
  if isinstance(v, (list, tuple)): return tuple(_norm(x) for x in v)
  return v if isinstance(v, (int, float, str, bool, type(None))) else repr(v)

class Renderer:
  """Turns linearized uops into source code and declares what the target can do.

  Subclasses set the class attributes below (the defaults every instance starts from) and implement `render`. A device
  whose limits are only known at run time (work-group sizes, local memory, vector widths, dtypes) constructs its renderer
  with them, `Renderer(local_max=(256, 256, 256), shared_max=65536)` or passes `abilities=` to `Compiled.__init__`: they
  become instance attributes, which the optimizer reads and which are part of the compile- and BEAM-cache keys
  (`ability_key`), so devices with different limits never share a cached binary. A renderer carries an optional
  `compiler`: when None, the rendered source itself is the binary the runtime loads (WGSL, Metal source).
  The reference table of every override point is in docs/plugins.md (section 4).
  """
  device: str = ""
  """The device name the renderer targets ("CPU"); ProgramSpec.device. Compiled sets it when empty."""
  has_local: bool = False
  """GPU-style launch: global ranges become SPECIAL launch indices (gidxN/lidxN/idxN); False: every range is a loop."""
  has_shared: bool = False
  """DEFINE_LOCAL (work-group shared memory) is available: the GROUP/GROUPTOP actions and their barriers may be used."""
  has_threads: bool = False
  """CPU: the outermost global range may be split across threads (the kernel gets core_id/core_count arguments)."""
  cpu_heuristics: bool = True
  """Without search (BEAM) or forced actions (OPTS), the CPU-style heuristics (codegen/opt.py hand_coded_opts: upcast,
  unroll, register and cache blocking) choose the actions of every kernel of a renderer that is not a GPU (has_local
  False, or has_threads); False: none, the kernel runs as scheduled. A GPU (has_local, not has_threads) gets the GPU
  heuristics (codegen/gpuopt.py) whatever this says. docs/plugins.md's "Which heuristics run" table says what each ability changes."""
  global_max: tuple[int, ...] | None = (0x7FFFFFFF, 65535, 65535)
  """The most work-groups per launch axis (x, y, z); a kernel past y or z merges its axes into x. None: no limit."""
  local_max: tuple[int, ...] | None = (1024, 1024, 64)
  """The most threads per work-group on each launch axis (x, y, z). None or empty: no threads in a block (LOCAL/GROUP
  actions are refused)."""
  local_total_max: int | None = None
  """The most threads in one work-group, all axes together (OpenCL's CL_DEVICE_MAX_WORK_GROUP_SIZE, CUDA's
  maxThreadsPerBlock). None: max(local_max)."""
  shared_max: int = 32768
  """Bytes of shared (local) memory one work-group may use; the GROUP actions are refused past it."""
  supports_float4: bool = True
  """Deprecated: it never changed the generated code. Vector code is controlled by vector_bytes, vector_ops and
  vector_dtypes; a subclass that sets it gets a DeprecationWarning naming them."""
  tensor_cores: list[TensorCore] = []
  """The matrix-multiply-accumulate instructions the renderer emits as WMMA uops (see docs/plugins.md, tensor cores)."""
  vector_bytes: int = 0
  """SIMD: the widest vector in bytes the renderer emits loads, stores and ALU on; 0: scalar code only."""
  vector_ops: frozenset[Ops] = frozenset()
  """SIMD: the ALU ops the renderer emits on vectors (the vectorize pass packs only these); empty: no vector ALU."""
  vector_dtypes: frozenset[DType] = frozenset()
  """SIMD: the scalar dtypes whose vectors the renderer emits; empty (the default): none, the kernels stay scalar."""
  unaligned_vectors: bool = False
  """SIMD: the rendered vector loads and stores are correct at any element offset (vector types aligned like their
  element, `vload4`, LLVM's `align <element size>`). False: the language's vector accesses need the vector's own alignment
  (CUDA's float4, Metal's, PTX's ld.v4), so the vectorize pass emits one only where its element offset is a multiple of
  its lane count by construction, and keeps the rest scalar. docs/plugins.md, "Vector alignment"."""
  nontemporal_stores: bool = False
  """The renderer writes a STORE whose arg is "nontemporal" past the caches (x86's movntps; it orders those stores before
  the kernel returns). A hint: a renderer without it writes such a STORE as any other. On a renderer that sets it,
  codegen/stream.py marks the whole-line vector stores into a large output the kernel never reads."""
  register_bytes: int = 0
  """CPU register tiling: the width in bytes of one SIMD register; 0: vector_bytes."""
  registers: int = 16
  """CPU register tiling: how many SIMD registers the matmul tile may hold."""
  matmul_pack: int = 0
  """Bytes of the narrowest panels a big matmul's right operand is copied into first (read by Tensor.dot, which widens them
  to the register tile's width: codegen/opt.py panel_bytes); 0: never."""
  code_for_op: dict[Ops, Callable[..., str]] = {}
  """ALU op -> function of the operands' text (and `dtype=`) giving the op's text. Its keys are also what the renderer
  has: an ALU op missing here is decomposed by the core (codegen/decompositions.py) into ops that are present."""
  extra_matcher: PatternMatcher | None = None
  """Device-specific rewrites applied to the kernel after the core's decompositions, just before vectorizing and
  linearizing (device quirks: split launches, devectorize what the language lacks)."""
  pre_matcher: PatternMatcher | None = None
  """Device-specific rewrites applied to the kernel AST before the optimizer sees it."""
  supported_dtypes: frozenset[DType] = _SupportedDTypes()  # type: ignore[assignment]  # (a descriptor: read, a DTypeSet)
  """The dtypes kernels may use; the core refuses others with one clear error, the conformance suite tests each. Declared
  (class attribute or ability) as a frozenset, None: all. Read, it is a DTypeSet: `dt in ren.supported_dtypes`, or
  public tinygrad's method spelling `ren.supported_dtypes()` (a set)."""
  _supported_dtypes: ClassVar[DTypeSet] = _dtype_set(None)
  native_fp8: frozenset[DType] = frozenset()
  """The fp8 dtypes (dtypes.fp8s) this renderer loads, stores and casts itself; for the others (every one, today) the core
  keeps the values as their bytes (uint8) and lowers casts and arithmetic to uint32/float32 ops (codegen/decompositions.py,
  lower_fp8), so the renderer never sees them. A renderer that lists one must render its loads, stores, CONSTs and CASTs.
  An ability (a GPU generation may have what its language lacks elsewhere): part of the compile-cache key."""
  f16_bit_moves: bool = True
  """A half/bfloat16 value that only moves (loads, selects, bitcasts into a global store) is given to the renderer as its
  uint16 bits through a pointer CAST (codegen/decompositions.py, pm_keep_bits), so float->16-bit rounding never makes a
  copied NaN canonical; False for a target that cannot render uint16 pointer casts (WGSL packs 16-bit values in words)."""
  approx_domain: dict[Ops, float] = {}
  """ALU ops this target computes to the conformance suite's accuracy only for |x| <= bound (its own builtins,
  documented by the renderer); the suite checks them inside that domain and reports the limit."""
  exp_via_exp2: bool = False
  """Tensor.exp reduces its argument and calls EXP2 (this renderer's, from code_for_op) instead of building e**r as a
  polynomial: set it when EXP2 is a fast, accurate instruction (GPUs). It takes effect only where EXP2 is in code_for_op."""
  keeps_float_order: bool = False
  """The target's compiler evaluates float arithmetic in the order written (no fast-math reassociation, as C and LLVM
  without fast-math flags): Tensor.exp then reads round(x/ln2) as (x/ln2 + c) - c, one op. Leave it False where the
  compiler may reassociate (shader compilers): that subtract would fold back to an unrounded x/ln2."""
  compiler: Compiler | None = None
  """The Compiler for the rendered source, set by CompilerPair selection; None: the source is the binary."""
  cache_programs: bool = True
  """A kernel's rendered program may come from the on-disk program cache (codegen/progcache.py) instead of calling
  `render`; False: render every kernel in every process (a render with side effects something else needs, as the mock
  drivers' record of the uops behind each source)."""

  ABILITIES: ClassVar[tuple[str, ...]] = ("has_local", "has_shared", "has_threads", "cpu_heuristics", "global_max", "local_max", "local_total_max",
    "shared_max", "tensor_cores", "vector_bytes", "vector_ops", "vector_dtypes", "register_bytes", "registers", "matmul_pack",
    "supported_dtypes", "exp_via_exp2", "native_fp8")
  """The attributes a device may set per instance (constructor keywords, `apply_abilities`); the others are the language's."""

  def __init__(self, **abilities: Any) -> None:
    """A renderer for one device: `abilities` (names from ABILITIES) override the class defaults on this instance."""
    self.apply_abilities(**abilities)
  def __init_subclass__(cls, **kw: Any) -> None:
    super().__init_subclass__(**kw)
    if "supported_dtypes" in cls.__dict__ and not isinstance(cls.__dict__["supported_dtypes"], _SupportedDTypes):
      cls._supported_dtypes = _dtype_set(cls.__dict__["supported_dtypes"])   # the declared set, read through the descriptor
      delattr(cls, "supported_dtypes")
    for old, why in _DEPRECATED.items():
      if old in cls.__dict__: warnings.warn(f"{cls.__name__}.{old} is deprecated and has no effect: {why}", DeprecationWarning, stacklevel=2)
  def apply_abilities(self, **abilities: Any) -> Renderer:
    """Set per-device abilities on this instance (see ABILITIES); an unknown name is a TypeError listing the valid ones."""
    bad = sorted(set(abilities) - set(self.ABILITIES))
    if bad: raise TypeError(f"{type(self).__name__}: unknown abilities {bad}; valid: {', '.join(self.ABILITIES)}")
    for k, v in abilities.items(): setattr(self, k, v)
    return self
  def ability_key(self) -> tuple:
    """This instance's abilities as a hashable, printable value: part of the compile- and BEAM-cache keys."""
    return (type(self).__name__,) + tuple((k, _norm(getattr(self, k))) for k in self.ABILITIES)
  @property
  def threads_max(self) -> int:
    """The most threads in one work-group: local_total_max, else max(local_max); 0 without threads in a block."""
    if self.local_total_max is not None: return self.local_total_max
    return max(self.local_max) if self.local_max else 0

  def render(self, uops: list[UOp], name: str = "kernel") -> str:
    """The source text of one kernel function called `name` for the linearized `uops` (docs/ir.md, linearized form).
    Called once per new kernel by `get_program`, after every codegen pass; the default raises NotImplementedError."""
    raise NotImplementedError(f"{type(self).__name__} does not implement render")
  @staticmethod
  def var_name(u: UOp) -> str:
    """The identifier of a DEFINE_VAR (a Variable) in rendered source: its name behind `var_`, a prefix none of the names a
    renderer generates has, so a Variable called `idx0`, `data0`, `core_id` or `int` clashes with no name in the kernel."""
    return f"var_{u.arg[0]}"
  def split_range(self, uops: list[UOp]) -> UOp | None:
    """The RANGE whose trips are shared among threads (the module's `split_range`) when has_threads, else None; each thread
    runs its share of it (CStyleLanguage.split_start), and `ProgramSpec.thread_work` estimates the kernel's work."""
    return split_range(uops) if self.has_threads else None
  def __reduce__(self): return _rebuild, (type(self), {k: v for k, v in self.__dict__.items() if k in self.ABILITIES})
  def __repr__(self) -> str: return f"{type(self).__name__}()"

def _rebuild(cls: type[Renderer], abilities: dict[str, Any]) -> Renderer: return cls().apply_abilities(**abilities)

# attributes that do nothing; a subclass setting one is warned once, at class creation
_DEPRECATED = {"supports_float4": "vector code is controlled by vector_bytes, vector_ops and vector_dtypes (vector_bytes = 0: none)",
               "suffix": "nothing reads it; a compiler's output needs no file suffix"}

def split_range(uops: list[UOp]) -> UOp | None:
  """The loop threads may split (has_threads): the first top-level GLOBAL/LOOP range, when every global store is inside it
  (its iterations then write disjoint outputs); None: no such loop, the kernel runs on one thread."""
  depth, first, inside = 0, None, False
  for u in uops:
    if u.op is Ops.RANGE:
      if depth == 0 and first is None and isinstance(u.arg, tuple) and u.arg[1] in (AxisType.GLOBAL, AxisType.LOOP): first, inside = u, True
      depth += 1
    elif u.op is Ops.END:
      depth -= 1
      if depth == 0: inside = False
    elif u.op is Ops.STORE and not inside and mem_access(u).buf.op is Ops.DEFINE_GLOBAL: return None
  return first

def thread_work(uops: list[UOp], split: UOp | None) -> int:
  """A cost estimate (uops executed, at the loop bounds' maxima) the runtime uses to choose a thread count (ProgramSpec.thread_work);
  0: the kernel does not split (`split` is None), run it on one thread."""
  if split is None: return 0
  work, trips = 0, [1]
  for u in uops:
    if u.op is Ops.RANGE: trips.append(trips[-1] * max(int(u.src[0].vmax), 1))
    elif u.op is Ops.END: trips.pop()
    else: work += trips[-1]
  return max(work, 1)

class MemAccess(NamedTuple):
  """The parts of a memory access a renderer needs, by name instead of source position (`mem_access(u)`)."""
  ptr: UOp                  # the address operand: an INDEX, or a CAST of one to a vector pointer (a vector load/store)
  buf: UOp                  # the buffer: DEFINE_GLOBAL / DEFINE_LOCAL / DEFINE_REG (`buf.dtype.addrspace` says which)
  idx: UOp | None           # the element offset (an int UOp); None when the pointer is the buffer itself
  gate: UOp | None          # the bool gate: where false, a LOAD reads 0 and a STORE writes nothing; None: ungated
  value: UOp | None         # a STORE's value; None for a LOAD or INDEX
  @property
  def vector(self) -> PtrDType | None:
    """The vector pointer dtype a CAST gives the access (`float4*`), or None for a scalar (or same-width) access."""
    return self.ptr.dtype if self.ptr.op is Ops.CAST and isinstance(self.ptr.dtype, PtrDType) else None

def mem_access(u: UOp) -> MemAccess:
  """Split a LOAD, STORE, INDEX or CAST-of-INDEX into its buffer, index, gate and stored value (see MemAccess). Extra
  sources after those (ordering dependencies) are not part of the access. Anything else is a ValueError."""
  if u.op in (Ops.LOAD, Ops.STORE): ptr, value = u.src[0], (u.src[1] if u.op is Ops.STORE else None)
  elif u.op in (Ops.INDEX, Ops.CAST): ptr, value = u, None
  else: raise ValueError(f"mem_access needs a LOAD, STORE, INDEX or CAST of an INDEX, got {u.op}")
  idx = ptr.src[0] if ptr.op is Ops.CAST else ptr
  if idx.op is not Ops.INDEX: return MemAccess(ptr, idx, None, None, value)
  return MemAccess(ptr, idx.src[0], idx.src[1], idx.src[2] if len(idx.src) > 2 else None, value)

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
  """A rendered (and possibly compiled) kernel, with what is needed to launch it.

  The launch convention (CUDA's grid and block): `global_size` counts work-groups per axis (x, y, z) -- the sizes of the
  gidxN indices -- and `local_size` counts threads per work-group (the lidxN sizes), so axis i runs
  global_size[i] * local_size[i] threads in all (OpenCL's global work size is that product). A kernel with no thread
  index inside a work-group (only gidxN/idxN) has `local_size` None: launch one thread per work-group, (1, 1, 1).
  """
  name: str
  src: str
  device: str
  ast: UOp | None = None
  uops: list[UOp] | None = None
  lib: bytes | None = None
  global_size: list[int | UOp] = field(default_factory=lambda: _ones())   # work-groups per axis (symbolic: sym_infer)
  local_size: list[int | UOp] | None = field(default_factory=lambda: _ones())  # threads per work-group; None: (1, 1, 1)
  vars: list[UOp] = field(default_factory=list)
  globals: list[int] = field(default_factory=list)
  outs: list[int] = field(default_factory=list)
  ins: list[int] = field(default_factory=list)
  estimates: Estimates = field(default_factory=Estimates)
  thread_work: int = 0   # has_threads: estimated uops one launch runs (`thread_work`), the runtime's thread count; 0: one thread

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
    sizes: dict[int, int] = {}   # per global buffer: its bytes, and the bytes its loads and stores move per thread
    moved: dict[int, int | UOp] = {}
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
        if isinstance(u.dtype, PtrDType) and u.dtype.size > 0: sizes[u.arg] = u.dtype.size * u.dtype.base.itemsize
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
        buf, val = mem_access(u).buf, mem_access(u).value
        if buf.op is Ops.DEFINE_GLOBAL and buf.arg not in outs: outs.append(buf.arg)
        if buf.op is Ops.DEFINE_GLOBAL and val is not None:
          est.lds += mult * val.dtype.itemsize
          moved[buf.arg] = moved.get(buf.arg, 0) + mult * val.dtype.itemsize
      elif u.op is Ops.LOAD:
        buf = mem_access(u).buf
        if buf.op is Ops.DEFINE_GLOBAL and buf.arg not in ins: ins.append(buf.arg)
        if buf.op is Ops.DEFINE_GLOBAL:
          est.lds += mult * u.dtype.itemsize
          moved[buf.arg] = moved.get(buf.arg, 0) + mult * u.dtype.itemsize
      elif u.op in GroupOp.ALU and u not in addressing:
        est.ops += mult * u.dtype.count * (2 if u.op is Ops.MULACC else 1)
    threads = prod(global_size) * (prod(local_size) if has_local else 1)   # the counts above are per thread
    # a buffer's bytes touched: all of it, or what the loads and stores move where that is less (a write into a slice)
    for g, size in sizes.items():
      est.mem += min(size, m) if isinstance(m := moved.get(g, 0) * threads, int) else size
    est = Estimates(est.ops * threads, est.lds * threads, est.mem)
    source = parts[Ops.SOURCE].arg if Ops.SOURCE in parts else ""
    lib = parts[Ops.BINARY].arg if Ops.BINARY in parts else None
    name = kernel_name(sink)
    return ProgramSpec(name, source, parts[Ops.DEVICE].arg, sink, uops, lib, global_size, local_size if has_local else None,
                       sorted(dvars, key=lambda v: v.arg), sorted(globs), sorted(outs), sorted(ins), est)

  def launch_dims(self, var_vals: dict[UOp, int]) -> tuple[tuple[int, ...], tuple[int, ...] | None]:
    """Concrete global and local sizes for these variable values."""
    gl = tuple(sym_infer(s, var_vals) for s in self.global_size)
    lc = tuple(sym_infer(s, var_vals) for s in self.local_size) if self.local_size is not None else None
    return gl, lc
  @property
  def function_name(self) -> str: return self.name
