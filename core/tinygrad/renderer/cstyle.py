"""CStyleLanguage: the data-driven base that renders linearized uops (docs/ir.md) to a C-like kernel function.

Subclasses (CPU C, CUDA, HIP, Metal) change class attributes and prepend rules to `string_rewrite`; the walk over the
uops, variable naming, inlining and loop structure live here once.
"""
from __future__ import annotations
import math, struct
from collections import defaultdict
from typing import Any, Callable, NamedTuple
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp
from tinygrad.uop.upat import UPat, PatternMatcher
from tinygrad.dtype import DType, PtrDType, AddrSpace, dtypes
from tinygrad.renderer import Renderer, mem_access, split_range, thread_work
from tinygrad.helpers import prod

def _narrow_int(dt: DType) -> bool: return dtypes.is_int(dt) and dt.scalar().itemsize < 4

# minus x, a negative literal parenthesized: `--2.0f` is a decrement of a constant in C and `a--2` parses as `a-- 2`
def _neg(x: str) -> str: return f"-({x})" if x.startswith("-") else f"-{x}"

def safe_div(op: str) -> Callable[..., str]:
  """C integer `/` or `%` (op) that never divides by 0 or INT_MIN by -1 (a trap on x86, garbage on GPUs): such divisors
  give 0, and -a for a/-1, as on the PYTHON device. Literal divisors, the common case in index math, stay a plain
  division; unsigned and narrow ints (promoted to int: no INT_MIN/-1) need only the zero check."""
  def f(a: str, b: str, dtype: DType) -> str:
    if dtypes.is_float(dtype): return f"({a}{op}{b})"
    try: lit: int | None = int(b.rstrip("uUlL"))
    except ValueError: lit = None
    if lit is not None and lit not in (0, -1): return f"({a}{op}{b})"
    if dtypes.is_unsigned(dtype) or dtype.itemsize < 4: return f"(({b})==0?0:({a}{op}{b}))"
    return f"(({b})==0?0:({b})==-1?{'(' + _neg(a) + ')' if op == '/' else '0'}:({a}{op}{b}))"
  return f

# ALU op -> C text; every entry gets the rendered operands and the result dtype
base_code_for_op: dict[Ops, Callable[..., str]] = {
  Ops.ADD: lambda a, b, dtype: f"({a}+{b})", Ops.SUB: lambda a, b, dtype: f"({a}{_neg(b)})", Ops.MUL: lambda a, b, dtype: f"({a}*{b})",
  Ops.IDIV: lambda a, b, dtype: f"({a}/{b})", Ops.MOD: lambda a, b, dtype: f"({a}%{b})", Ops.FDIV: lambda a, b, dtype: f"({a}/{b})",
  Ops.CMPLT: lambda a, b, dtype: f"({a}<{b})", Ops.CMPNE: lambda a, b, dtype: f"({a}!={b})", Ops.CMPEQ: lambda a, b, dtype: f"({a}=={b})",
  Ops.AND: lambda a, b, dtype: f"({a}&{b})", Ops.OR: lambda a, b, dtype: f"({a}|{b})", Ops.XOR: lambda a, b, dtype: f"({a}^{b})",
  Ops.SHL: lambda a, b, dtype: f"({a}<<{b})", Ops.SHR: lambda a, b, dtype: f"({a}>>{b})",
  Ops.NEG: lambda x, dtype: f"(!{x})" if dtype == dtypes.bool else f"({_neg(x)})",
  Ops.RECIPROCAL: lambda x, dtype: f"(1/{x})",
  # MAX propagates NaN like numpy.maximum: a NaN in `a` is kept by the `a!=a` test, a NaN in `b` by `a>b` being false
  Ops.MAX: lambda a, b, dtype: f"((({a}>{b})||({a}!={a}))?{a}:{b})" if dtypes.is_float(dtype) else f"(({a}>{b})?{a}:{b})",
  Ops.WHERE: lambda c, a, b, dtype: f"({c}?{a}:{b})", Ops.MULACC: lambda a, b, c, dtype: f"(({a}*{b})+{c})",
}

def _render_alu(ctx: CStyleLanguage, x: UOp) -> str:
  ops = [ctx.r[s] for s in x.src]
  dt = ctx.compute_dtype(x.dtype)
  if _narrow_int(x.dtype) and x.op in (Ops.ADD, Ops.SUB, Ops.MUL, Ops.SHL, Ops.NEG) and dtypes.is_unsigned(x.dtype):
    # narrow unsigned operands promote to (signed) int: a uint16 product can overflow it, so compute in unsigned int
    ops = [f"((unsigned int){o})" for o in ops]
  ret = ctx.code_for_op[x.op](*ops, dtype=dt)
  # C promotes narrow ints to int: cast back so the result wraps at its own width; emulated floats round to their width
  if _narrow_int(x.dtype) and x.op not in GroupOp.Comparison: ret = f"(({ctx.render_dtype(x.dtype)}){ret})"
  if x.dtype.scalar() in ctx.emulated_floats and x.op not in GroupOp.Comparison: ret = ctx.emulated_floats[x.dtype.scalar()][3].format(ret)
  return ret

def _render_cast(ctx: CStyleLanguage, x: UOp) -> str:
  src, sdt, dt = ctx.r[x.src[0]], x.src[0].dtype.scalar(), x.dtype.scalar()
  if dt == dtypes.bool: return f"({src}!=0)"
  if dt in ctx.emulated_floats: return ctx.emulated_floats[dt][3].format(f"(({ctx.render_dtype(ctx.compute_dtype(x.dtype))}){src})")
  return f"(({ctx.render_dtype(ctx.compute_dtype(x.dtype))}){src})"

def _render_bitcast(ctx: CStyleLanguage, x: UOp) -> str:
  src, sdt, dt = ctx.r[x.src[0]], x.src[0].dtype, x.dtype
  if sdt.scalar() in ctx.emulated_floats: src = ctx.emulated_floats[sdt.scalar()][2].format(src)    # its storage bits
  ret = ctx.render_bitcast(ctx.render_dtype(ctx.storage_dtype(dt)), ctx.render_dtype(ctx.storage_dtype(sdt)), src)
  return ctx.emulated_floats[dt.scalar()][1].format(ret) if dt.scalar() in ctx.emulated_floats else ret

def _deref(ctx: CStyleLanguage, idx: UOp, dtype: DType) -> str:
  """The lvalue an INDEX (possibly CAST to a vector pointer) points to; a vector access casts through a pointer that keeps
  the buffer's address space (OpenCL's `__global`, Metal's `device`: a bare `(float4*)` is another space there)."""
  m = mem_access(idx)
  if m.vector is not None: return f"(*(({ctx.render_ptr(m.vector.base, m.vector.addrspace)}){ctx.r[m.ptr.src[0]]}))"   # the INDEX text is parenthesized
  buf, off = ctx.r[m.buf], ctx.r[m.idx] if m.idx is not None else "0"
  if dtype.count > 1 and m.buf.dtype.base.count == 1:
    space = m.buf.dtype.addrspace if isinstance(m.buf.dtype, PtrDType) else AddrSpace.GLOBAL
    return f"(*(({ctx.render_ptr(dtype, space)})({buf}+{off})))"
  return f"{buf}[{off}]"

def _render_load(ctx: CStyleLanguage, x: UOp) -> str:
  m = mem_access(x)
  val = _deref(ctx, m.ptr, x.dtype)
  if x.dtype.scalar() in ctx.emulated_floats: val = ctx.emulated_floats[x.dtype.scalar()][1].format(val)
  return val if m.gate is None else f"({ctx.r[m.gate]}?{val}:{ctx.render_const(0, x.dtype)})"

def _render_store(ctx: CStyleLanguage, x: UOp) -> str:
  m = mem_access(x)
  assert m.value is not None
  val = ctx.r[m.value]
  if m.value.dtype.scalar() in ctx.emulated_floats: val = ctx.emulated_floats[m.value.dtype.scalar()][2].format(val)
  st = f"{_deref(ctx, m.ptr, m.value.dtype)} = {val};"
  return st if m.gate is None else f"if ({ctx.r[m.gate]}) {st}"

# uop -> text for one node; `ctx` is the renderer (ctx.r holds the text of every earlier uop)
base_rewrite = PatternMatcher([
  (UPat(Ops.CONST, name="x"), lambda ctx, x: ctx.render_const(x.arg, x.dtype)),
  (UPat(Ops.VCONST, name="x"), lambda ctx, x: ctx.render_vectorize([ctx.render_const(v, x.dtype.scalar()) for v in x.arg], x.dtype)),
  (UPat(Ops.DEFINE_VAR, name="x"), lambda ctx, x: ctx.var_name(x)),
  (UPat(Ops.INDEX, name="x"), lambda ctx, x: f"({ctx.r[x.src[0]]}+{ctx.r[x.src[1]]})"),
  (UPat(Ops.CAST, name="x"), lambda ctx, x: f"(({ctx.render_ptr(x.dtype.base, x.dtype.addrspace)})({ctx.r[x.src[0]]}))"
     if isinstance(x.dtype, PtrDType) else None),                                      # a pointer cast keeps its address space
  (UPat(Ops.CAST, name="x"), _render_cast),
  (UPat(Ops.BITCAST, name="x"), _render_bitcast),
  (UPat(Ops.LOAD, name="x"), _render_load),
  (UPat(Ops.STORE, name="x"), _render_store),
  (UPat(Ops.VECTORIZE, name="x"), lambda ctx, x: ctx.render_vectorize([ctx.r[s] for s in x.src], x.dtype)),
  (UPat(Ops.GEP, name="x"), lambda ctx, x: ctx.render_gep(ctx.r[x.src[0]], x.arg[0], x.src[0].dtype) if len(x.arg) == 1 else
     ctx.render_vectorize([ctx.render_gep(ctx.r[x.src[0]], i, x.src[0].dtype) for i in x.arg], x.dtype)),
  (UPat(Ops.SPECIAL, name="x"), lambda ctx, x: ctx.code_for_workitem[x.arg[0]](x.arg[-1])),
  (UPat(Ops.BARRIER), lambda ctx: ctx.barrier),
  (UPat(Ops.IF, name="x"), lambda ctx, x: f"if ({ctx.r[x.src[0]]}) {{"),
  (UPat(Ops.ENDIF), lambda: "}"),
  (UPat(GroupOp.ALU, name="x"), _render_alu),
])

# text prefixes of variable names, by op
_prefixes = {Ops.LOAD: "val", Ops.DEFINE_REG: "acc", Ops.DEFINE_LOCAL: "temp", Ops.CAST: "cast", Ops.BITCAST: "cast",
             Ops.VECTORIZE: "vec", Ops.GEP: "gep", Ops.WMMA: "wmma"}
# pure ops whose single use may take their text inline
_inlinable = GroupOp.ALU | {Ops.CAST, Ops.BITCAST, Ops.GEP, Ops.VECTORIZE, Ops.VCONST}

class Loop(NamedTuple):
  """A loop as CStyleLanguage.render_loop gets it."""
  rng: UOp                 # the RANGE
  var: str                 # the counter's name (`ridx0`)
  start: str               # the first value, as text ("0"; this thread's first when has_threads splits the loop)
  end: str                 # the bound, as text (exclusive)
  ty: str                  # the counter's type, as text ("int")
  parallel: bool           # its iterations write disjoint outputs (the loop split_range picks): threads may share it
  private: tuple[str, ...] # the registers (DEFINE_REG arrays) declared outside the loop: each thread needs its own copy

# ops the walk renders itself (CStyleLanguage.render): a string_rewrite rule for one of them would never be called
_WALK_OPS = {Ops.RANGE: "render_loop", Ops.END: "render_loop_end", Ops.DEFINE_GLOBAL: "render_dtype/buffer_suffix",
             Ops.DEFINE_VAR: "arg_int_prefix", Ops.DEFINE_REG: "render_dtype", Ops.DEFINE_LOCAL: "smem_prefix/smem_align"}

class CStyleLanguage(Renderer):
  """A C-like kernel renderer. Abilities and syntax are class attributes; `string_rewrite` maps one uop to its text.

  The walk (`render`) names variables, inlines single-use pure values, opens and closes loops, and calls the override
  points below; a subclass changes attributes, prepends rules to `string_rewrite` and overrides the `render_*` methods.
  The reference table of every override point is in docs/plugins.md (section 4).
  """
  kernel_prefix: str = ""
  """Text before the kernel's `void` (`extern "C" __global__ `, `__kernel `, `kernel `)."""
  buffer_prefix: str = ""
  """Text before a global buffer's pointee type (`device `); addrspace_qualifier[GLOBAL] overrides it."""
  addrspace_qualifier: dict[AddrSpace, str] = {}
  """Address space -> the qualifier written before the pointee type of every pointer into that space: kernel arguments,
  pointer casts, vector loads and stores (`{AddrSpace.GLOBAL: "__global ", AddrSpace.LOCAL: "__local "}` for OpenCL C);
  a space missing here has none (GLOBAL falls back to buffer_prefix)."""
  buffer_suffix: str = ""
  """Text after a buffer argument's `*` (` restrict`)."""
  arg_int_prefix: str = "const int"
  """The type of a DEFINE_VAR (symbolic int) argument (`constant int&` in Metal)."""
  smem_prefix: str = ""
  """Text before a DEFINE_LOCAL declaration in the body (`__shared__ `, `__local `, `threadgroup `)."""
  smem_align: str = ""
  """Text after a DEFINE_LOCAL declaration's `[size]` (` __attribute__((aligned(16)))`)."""
  barrier: str = ""
  """The statement a BARRIER renders to (`__syncthreads();`, `barrier(CLK_LOCAL_MEM_FENCE);`)."""
  code_for_workitem: dict[str, Callable[[Any], str]] = {}
  """SPECIAL launch indices: key "g" (work-group index, gidxN), "l" (thread in the work-group, lidxN) or "i" (global
  thread index where there is no local split, idxN) -> function of the axis (a str "0".."2") giving its text."""
  infinity: str = "INFINITY"
  """The text of +inf (a float constant); -inf is `(-infinity)`."""
  nan: str = "NAN"
  """The text of a NaN float constant."""
  int_suffix: dict[DType, str] = {dtypes.uint32: "u", dtypes.int64: "ll", dtypes.uint64: "ull"}
  """Integer literal suffix by dtype (C's `ll`/`ull`; Metal's and OpenCL's `l`/`ul`); a dtype not listed has none."""
  vector_ctor: str = "make_{type}({elems})"
  """Format of a vector constructor (VECTORIZE, VCONST, vector constants): `{type}` is the rendered vector type, `{elems}`
  the comma-separated lanes. CUDA's `make_float4(...)` by default; `({type})({elems})` for OpenCL, `{type}({elems})` for Metal."""
  type_map: dict[DType, str] = {}
  """DType -> type name where it differs from dtype.name (`dtypes.bool: "_Bool"`); vectors default to name + count (`float4`)."""
  emulated_floats: dict[DType, tuple[DType, str, str, str]] = {}
  """Dtypes held as float in registers and as bits in memory: dtype -> (storage dtype, bits->float, float->bits,
  round-to-dtype) `str.format` templates with one `{}` (bfloat16 on a target without it)."""
  code_for_op: dict[Ops, Callable[..., str]] = base_code_for_op
  """ALU op -> text (see Renderer.code_for_op); base_code_for_op has the C operators, a subclass adds math functions."""
  string_rewrite: PatternMatcher = base_rewrite
  """uop -> its text, called with ctx=the renderer (ctx.r: the text of every earlier uop); prepend rules to change one op
  (`my_rules + base_rewrite`). A rule returning None falls through to the next; no match is a NotImplementedError.
  The walk renders some ops itself and never asks string_rewrite: loops (RANGE, END: `render_loop`, `render_loop_end`),
  arguments (DEFINE_GLOBAL, DEFINE_VAR: `render_dtype`, `arg_int_prefix`, `extra_args`) and declarations (DEFINE_REG,
  DEFINE_LOCAL: `smem_prefix`, `smem_align`); a subclass with a rule for one of them is a TypeError naming the hook."""
  inline_max_len: int = 80
  """A single-use pure expression longer than this gets its own variable instead of being inlined (readability)."""

  def __init_subclass__(cls, **kw: Any) -> None:
    super().__init_subclass__(**kw)
    if cls.render is not CStyleLanguage.render: return   # a language with its own walk decides what string_rewrite sees
    base = {id(f) for _, f in base_rewrite.patterns}
    for pat, fxn in cls.string_rewrite.patterns:
      for op in (set(pat.op or ()) & set(_WALK_OPS)) if id(fxn) not in base else ():
        raise TypeError(f"{cls.__name__}.string_rewrite has a rule for {op} ({getattr(fxn, '__qualname__', fxn)}), which is never called: "
                        f"the C walk renders {op} itself; override {_WALK_OPS[op]} instead (docs/plugins.md, the renderer reference)")

  # ---- types and literals ----
  def compute_dtype(self, dt: DType) -> DType:
    """The dtype a value of `dt` is held in registers (an emulated float computes as float32); default: `dt`."""
    return dtypes.float32.vec(dt.count) if dt.scalar() in self.emulated_floats else dt
  def storage_dtype(self, dt: DType) -> DType:
    """The dtype a value of `dt` is stored as in memory (an emulated float: its bits' integer dtype); default: `dt`."""
    s = self.emulated_floats.get(dt.scalar())
    return s[0].vec(dt.count) if s is not None else dt
  def space_qualifier(self, space: AddrSpace) -> str:
    """The source-level qualifier of pointers into `space` (from `addrspace_qualifier`; GLOBAL defaults to buffer_prefix)."""
    return self.addrspace_qualifier.get(space, self.buffer_prefix if space is AddrSpace.GLOBAL else "")
  def render_ptr(self, base: DType, space: AddrSpace) -> str:
    """The pointer type to `base` elements (held in their storage dtype) in `space`: `__global float4*`."""
    return f"{self.space_qualifier(space)}{self.render_dtype(self.storage_dtype(base))}*"
  def render_dtype(self, dt: DType, mutable: bool = True) -> str:
    """The type name of `dt`: a pointer is render_ptr's (its address space's qualifier, the storage dtype, `*`), a
    vector type_map's or name + count; called for declarations, casts and arguments."""
    if isinstance(dt, PtrDType): return self.render_ptr(dt.base, dt.addrspace)
    if dt.count > 1: return self.type_map.get(dt, f"{self.render_dtype(dt.scalar()).replace(' ', '')}{dt.count}")
    return self.type_map.get(dt, dt.name)
  def render_const(self, v: Any, dt: DType) -> str:
    """The literal for the value `v` of dtype `dt` (CONST): exact float32 literals (hex when needed), `infinity`/`nan`,
    int_suffix on wide ints, INT_MIN as (-MAX-1), a cast for narrow ints and half floats; a vector via render_vectorize."""
    if dt.count > 1: return self.render_vectorize([self.render_const(v, dt.scalar())] * dt.count, dt)
    if dtypes.is_float(dt):
      cdt = self.compute_dtype(dt)
      if math.isnan(v): ret = self.nan
      elif math.isinf(v): ret = self.infinity if v > 0 else f"(-{self.infinity})"
      elif cdt == dtypes.float64: return repr(float(v))
      else:
        # exact float32 literal: the shortest repr when it round-trips, else the hex form
        f32 = struct.unpack("f", struct.pack("f", v))[0]
        ret = (repr(f32) if float(repr(f32)) == f32 else f32.hex()) + "f"
      # (NAN and INFINITY are float: OpenCL's as_ulong(NAN) of a double NaN failed to build)
      return ret if cdt == dtypes.float32 else f"(({self.render_dtype(cdt)}){ret})"
    if dt == dtypes.bool: return "1" if v else "0"
    if dtypes.is_int(dt):
      v = int(v)
      suffix = self.int_suffix.get(dt, "")
      # the literal -2147483648 is unary minus on a too-big positive literal: write INT_MIN as (-MAX-1)
      if v == dtypes.min(dt) and v < 0: return f"({v+1}{suffix}-1)"
      return f"{v}{suffix}" if dt.itemsize >= 4 else f"(({self.render_dtype(dt)}){v})"
    return str(v)
  def render_vectorize(self, elems: list[str], dt: DType) -> str:
    """A vector of dtype `dt` from its lanes' text (VECTORIZE, VCONST, vector constants); default: the vector_ctor format."""
    return self.vector_ctor.format(type=self.render_dtype(dt), elems=",".join(elems))
  def render_gep(self, vec: str, lane: int, dt: DType) -> str:
    """Lane `lane` of the vector text `vec` of dtype `dt` (GEP); default `.x`..`.w` up to 4 lanes, else `[lane]`."""
    return f"{vec}.{'xyzw'[lane]}" if dt.count <= 4 else f"{vec}[{lane}]"
  def render_bitcast(self, to: str, frm: str, x: str) -> str:
    """Reinterpret the bits of `x` (type text `frm`) as type `to` (BITCAST); default: a C99 union compound literal,
    since `*(T*)&x` needs an lvalue and a bitcast's operand is often an inlined expression."""
    return f"((union {{{frm} a; {to} b;}}){{.a = {x}}}).b"
  def render_kernel(self, name: str, body: list[str], args: list[str], uops: list[UOp], prelude: list[str]) -> str:
    """The whole source, called once at the end of `render`: `prelude` lines, then `kernel_prefix void name(args) {`,
    the indented `body` statements and `}`. `args` are rendered parameters (buffers by slot, then variables, then
    extra_args); `uops` lets an override reorder or annotate them (Metal's [[buffer(n)]])."""
    return "\n".join(prelude + [f"{self.kernel_prefix}void {name}({', '.join(args)}) {{"] + body + ["}"]) + "\n"
  def extra_args(self) -> list[str]:
    """Parameters appended after the buffers and variables; default: `int core_id, int core_count` when has_threads
    (the thread's index and the thread count the split loop reads, docs/plugins.md "Threads"), else none."""
    return ["int core_id", "int core_count"] if self.has_threads else []
  def prelude(self, uops: list[UOp]) -> list[str]:
    """Lines before the kernel (includes, helper functions, pragmas such as cl_khr_fp16), from the kernel's `uops`;
    default none."""
    return []

  def render_loop(self, loop: Loop) -> list[str]:
    """The lines that open a loop (`loop`: its RANGE, counter, bounds, whether it may run in parallel and the registers
    declared outside it; string_rewrite never sees a RANGE). Default: one `for`. An OpenMP backend puts
    `#pragma omp parallel for private(<loop.private>)` before the `parallel` one (see Loop)."""
    return [f"for ({loop.ty} {loop.var} = {loop.start}; {loop.var} < {loop.end}; {loop.var}++) {{"]
  def render_loop_end(self, rng: UOp) -> list[str]:
    """The lines that close loop `rng` (its END); default `}`."""
    return ["}"]

  # ---- the walk ----
  def render(self, uops: list[UOp], name: str = "kernel") -> str:
    """The kernel function `name` for the linearized `uops`: the walk that calls every override point above (override
    it only for a language that is not C-like)."""
    self.r: dict[UOp, str] = {}
    # uses and loop depths: a single-use pure value is inlined into its user when both sit in the same loop, so the
    # linearizer's hoisting of loop-invariant work stays visible in the source
    uses: dict[UOp, int] = defaultdict(int)
    same_depth: dict[UOp, bool] = {}
    at: dict[UOp, int] = {}
    d = 0
    for u in uops:
      if u.op in (Ops.END, Ops.ENDIF): d -= 1
      at[u] = d
      if u.op in (Ops.RANGE, Ops.IF): d += 1
      srcs = u.src[:1] if u.op is Ops.LOAD else u.src[:2] if u.op is Ops.STORE else u.src   # later sources only order
      for s in srcs:
        uses[s] += 1
        same_depth[s] = at.get(s, -1) == at[u]
    counters: dict[str, int] = defaultdict(int)
    args: list[str] = []
    body: list[str] = []
    depth = 1
    split, parallel = self.split_range(uops), split_range(uops)
    regs: list[tuple[int, str]] = []   # (depth, name) of the registers declared in the scopes open here
    for u in uops:
      if u.op is Ops.DEFINE_GLOBAL:
        self.r[u] = f"data{u.arg}"
        args.append(f"{self.render_dtype(u.dtype)}{self.buffer_suffix} data{u.arg}")
        continue
      if u.op is Ops.DEFINE_VAR:
        self.r[u] = self.var_name(u)
        args.append(f"{self.arg_int_prefix} {self.r[u]}")
        continue
      if u.op in (Ops.SINK, Ops.NOOP): continue
      if u.op is Ops.RANGE:
        self.r[u] = nm = f"ridx{u.arg[0]}" if isinstance(u.arg, tuple) else f"ridx{counters['ridx']}"
        counters["ridx"] += 1
        end, ty = self.r[u.src[0]], self.render_dtype(u.dtype)
        start, stop = (self.split_start(end, "core_id", ty), self.split_start(end, "core_id+1", ty)) if u is split else ("0", end)
        loop = Loop(u, nm, start, stop, ty, u is parallel, tuple(r for _, r in regs))
        body.extend(f"{'  '*depth}{line}" for line in self.render_loop(loop))
        depth += 1
        continue
      if u.op in (Ops.END, Ops.ENDIF):
        depth -= 1
        regs = [(d, r) for d, r in regs if d <= depth]
      if u.op is Ops.END:
        body.extend(f"{'  '*depth}{line}" for line in self.render_loop_end(u.src[0]))
        continue
      if u.op in (Ops.DEFINE_REG, Ops.DEFINE_LOCAL):
        assert isinstance(u.dtype, PtrDType)
        self.r[u] = nm = f"{_prefixes[u.op]}{counters[_prefixes[u.op]]}"
        counters[_prefixes[u.op]] += 1
        pre = self.smem_prefix if u.op is Ops.DEFINE_LOCAL else ""
        if u.op is Ops.DEFINE_REG: regs.append((depth, nm))
        body.append(f"{'  '*depth}{pre}{self.render_dtype(self.storage_dtype(u.dtype.base))} {nm}[{u.dtype.size}]{self.smem_align if pre else ''};")
        continue
      txt: str | None = self.string_rewrite.rewrite(u, ctx=self)  # type: ignore[assignment]  # this matcher's rules return text
      if txt is None: raise NotImplementedError(f"{type(self).__name__} cannot render {u.op} with dtype {u.dtype} (arg={u.arg!r})")
      if u.op in (Ops.STORE, Ops.BARRIER, Ops.IF, Ops.END, Ops.ENDIF):
        body.append(f"{'  '*depth}{txt}")
        if u.op is Ops.IF: depth += 1
        continue
      if u.op in (Ops.CONST, Ops.INDEX) or (u.op is Ops.CAST and isinstance(u.dtype, PtrDType)) or \
         (u.op in _inlinable and uses[u] <= 1 and same_depth.get(u, True) and len(txt) <= self.inline_max_len):
        self.r[u] = txt
        continue
      prefix = u.arg if u.op is Ops.SPECIAL else _prefixes.get(u.op, "alu")
      self.r[u] = nm = prefix if u.op is Ops.SPECIAL else f"{prefix}{counters[prefix]}"
      counters[prefix] += 1
      body.append(f"{'  '*depth}{self.render_dtype(self.compute_dtype(u.dtype))} {nm} = {txt};")
    return self.render_kernel(name, body, args + self.extra_args(), uops, self.prelude(uops))

  # ---- splitting the outermost loop across CPU threads ----
  def split_start(self, end: str, core: str, ty: str) -> str:
    """The first index of thread `core`'s share of a split loop of `end` trips (type text `ty`); used with has_threads."""
    return f"({ty})(((long long)({end})*({core}))/core_count)"

__all__ = ["CStyleLanguage", "Loop", "base_code_for_op", "base_rewrite", "split_range", "thread_work", "prod"]
