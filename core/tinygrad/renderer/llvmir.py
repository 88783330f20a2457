"""LLVMIRRenderer: the base that renders linearized uops (docs/ir.md) to one LLVM IR function.

Subclasses (the CPU's LLVM pair, AMD's AMDGPU pair) set the calling convention, address spaces and launch indices
through the hooks below; the walk, types, constants, casts, safe integer division and gated memory access live here once.
Loop counters and accumulators are allocas (mem2reg makes them SSA); gated loads and stores branch around the access.
"""
from __future__ import annotations
import math, struct
from typing import Any, Callable
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, _alu_bounds
from tinygrad.dtype import DType, PtrDType, AddrSpace, dtypes
from tinygrad.renderer import Renderer

def _is_f(dt: DType) -> bool: return dtypes.is_float(dt)
def _sgn(dt: DType) -> bool: return dtypes.is_int(dt) and not dtypes.is_unsigned(dt)
def _no_wrap(u: UOp) -> bool:
  """True when the sources' bounds prove this signed ADD/SUB/MUL cannot wrap (an index's arithmetic; a sum of two loaded
  values can): it is then `nsw`, which lets LLVM widen and fold index math instead of proving it. ViT-Ti's kernels
  compile in ~0.55x the time with it (IndVarSimplify and InstCombine work on wrapping i32 math), and run the same."""
  b = _alu_bounds(u, [s._min_max for s in u.src])
  return b is not None and dtypes.min(u.dtype.scalar()) <= b[0] and b[1] <= dtypes.max(u.dtype.scalar())

# (int/bool form, float form) of each two-operand instruction; signed ints use the first, unsigned the second of a pair
_llvm_binop: dict[Ops, tuple[str | tuple[str, str], str]] = {
  Ops.ADD: ("add", "fadd"), Ops.SUB: ("sub", "fsub"), Ops.MUL: ("mul", "fmul"), Ops.FDIV: ("sdiv", "fdiv"),
  Ops.AND: ("and", ""), Ops.OR: ("or", ""), Ops.XOR: ("xor", ""), Ops.SHL: ("shl", ""), Ops.SHR: (("ashr", "lshr"), ""),
  Ops.CMPLT: (("icmp slt", "icmp ult"), "fcmp olt"), Ops.CMPNE: ("icmp ne", "fcmp une"), Ops.CMPEQ: ("icmp eq", "fcmp oeq")}
_llvm_intrinsic = {Ops.SQRT: "sqrt", Ops.EXP2: "exp2", Ops.LOG2: "log2", Ops.SIN: "sin", Ops.TRUNC: "trunc"}

_bf16_llvm = """define internal float @__b2f(i16 %b) alwaysinline {
  %w = zext i16 %b to i32
  %s = shl i32 %w, 16
  %f = bitcast i32 %s to float
  ret float %f
}
define internal i16 @__f2b(float %f) alwaysinline {
  %u = bitcast float %f to i32
  %a = and i32 %u, 2147483647
  %nan = icmp ugt i32 %a, 2139095040
  %h = lshr i32 %u, 16
  %lsb = and i32 %h, 1
  %r0 = add i32 %u, 32767
  %r1 = add i32 %r0, %lsb
  %r2 = lshr i32 %r1, 16
  %r3 = trunc i32 %r2 to i16
  %sg = and i32 %h, 32768
  %qn = or i32 %sg, 32704
  %qn16 = trunc i32 %qn to i16
  %r = select i1 %nan, i16 %qn16, i16 %r3
  ret i16 %r
}"""

class LLVMIRRenderer(Renderer):
  """Linearized uops -> LLVM IR text. The hooks a target overrides: `addrspaces` (pointer address spaces), `extra_args`,
  `loop_bounds` (a loop's start and stop), `render_special` (launch indices), `render_barrier`, `render_local` (shared
  memory), `render_wmma` (tensor cores), `kernel_cc`/`fn_attrs` (calling convention, attributes) and `render_kernel`
  (module-level text)."""
  # the ops rendered here; the rest (POW ...) are decomposed by the pipeline
  code_for_op: dict[Ops, Callable[..., str]] = {op: (lambda *a, **k: "") for op in
    [*_llvm_binop, *_llvm_intrinsic, Ops.IDIV, Ops.MOD, Ops.NEG, Ops.RECIPROCAL, Ops.MAX, Ops.WHERE, Ops.MULACC]}
  addrspaces: dict[AddrSpace, int] = {}   # LLVM address space of each pointer kind, where it is not 0
  kernel_cc: str = ""                     # the kernel's calling convention and a space (`amdgpu_kernel `)
  unaligned_vectors = True                # every load and store carries `align <element size>`
  nt_meta: int | None = None              # (per render) the `!{i32 1}` node non-temporal stores name, once one is emitted

  # ---- types ----
  def ty(self, dt: DType) -> str:
    """The register type (bool is i1, bfloat16 computes as float)."""
    if isinstance(dt, PtrDType): return self.ptr(dt.addrspace)
    s = dt.scalar()
    base = "i1" if s == dtypes.bool else f"i{s.itemsize*8}" if dtypes.is_int(s) else \
      {dtypes.float16: "half", dtypes.bfloat16: "float", dtypes.float32: "float", dtypes.float64: "double"}.get(s, "void")
    return f"<{dt.count} x {base}>" if dt.count > 1 else base
  def ptr(self, space: AddrSpace) -> str:
    n = self.addrspaces.get(space, 0)
    return f"ptr addrspace({n})" if n else "ptr"
  def mty(self, dt: DType) -> str:
    """The memory type (bool is a byte, bfloat16 its 16 bits)."""
    s = dt.scalar()
    base = "i8" if s == dtypes.bool else "i16" if s == dtypes.bfloat16 else self.ty(s)
    return f"<{dt.count} x {base}>" if dt.count > 1 else base
  def const(self, v: Any, dt: DType) -> str:
    if dt.count > 1: return f"<{', '.join(f'{self.ty(dt.scalar())} {self.const(v, dt.scalar())}' for _ in range(dt.count))}>"
    if dt == dtypes.bool: return "true" if v else "false"
    if dtypes.is_int(dt): return str(int(v))
    if math.isnan(v): return "0x7FF8000000000000"
    # LLVM writes every float constant as the hex of the double that holds it exactly
    return f"0x{struct.unpack('>Q', struct.pack('>d', float(v)))[0]:016X}"

  # ---- emission helpers ----
  def _new(self, prefix: str) -> str:
    self.counters[prefix] = self.counters.get(prefix, 0) + 1
    return f"%{prefix}{self.counters[prefix]-1}"
  def alloca(self, nm: str, ty: str, align: int = 0) -> None:
    n = self.addrspaces.get(AddrSpace.REG, 0)
    self.allocas.append(f"  {nm} = alloca {ty}{f', align {align}' if align else ''}{f', addrspace({n})' if n else ''}")
  def _emit(self, line: str) -> None: self.body.append(f"  {line}")
  def _label(self, name: str) -> None:
    self.body.append(f"{name}:")
    self.block = name
  def _ins(self, prefix: str, text: str) -> str:
    nm = self._new(prefix)
    self._emit(f"{nm} = {text}")
    return nm
  def _round(self, v: str, dt: DType) -> str:
    return self._ins("rnd", f"call float @__b2f(i16 {self._ins('rnd', f'call i16 @__f2b(float {v})')})") if dt.scalar() == dtypes.bfloat16 else v
  def _intrinsic(self, fn: str, dt: DType, args: list[str]) -> str:
    s = dt.scalar()
    suffix = (f"v{dt.count}" if dt.count > 1 else "") + ("f" if _is_f(s) else "i") + str(32 if s == dtypes.bfloat16 else s.itemsize*8)
    name = f"@llvm.{fn}.{suffix}"
    t = self.ty(dt)
    self.decls.add(f"declare {t} {name}({', '.join([t]*len(args))})")
    return self._ins("alu", f"call {t} {name}({', '.join(f'{t} {a}' for a in args)})")

  def _ldexp(self, dt: DType, x: str, n: str, ndt: DType) -> str:
    # llvm.ldexp: one rounding (AVX-512's vscalefps); a target without such an instruction calls libm per lane, so only
    # a renderer that lists LDEXP in code_for_op gets it (the pipeline lowers it otherwise)
    s = dtypes.float32 if dt.scalar() == dtypes.bfloat16 else dt.scalar()
    vec = f"v{dt.count}" if dt.count > 1 else ""
    name = f"@llvm.ldexp.{vec}f{s.itemsize*8}.{vec}i32"
    t, nt = self.ty(dt), self.ty(ndt)
    self.decls.add(f"declare {t} {name}({t}, {nt})")
    return self._ins("alu", f"call {t} {name}({t} {x}, {nt} {n})")
  def _alu(self, u: UOp) -> str:
    dt = u.dtype
    sdt = u.src[0].dtype if u.op in GroupOp.Comparison else dt
    t, st = self.ty(dt), self.ty(sdt)
    a = [self.r[s] for s in u.src]
    if u.op is Ops.LDEXP: return self._round(self._ldexp(dt, a[0], a[1], u.src[1].dtype), dt)
    # operands whose dtype differs from the result's (a decomposition's float ADD of an int WHERE) convert, as C does
    same = range(1, 3) if u.op is Ops.WHERE else range(0) if u.op in GroupOp.Comparison | {Ops.SHL, Ops.SHR} else range(len(u.src))
    a = [self._convert(a[i], s.dtype, dt) if i in same and s.dtype.scalar() != dt.scalar() else a[i] for i, s in enumerate(u.src)]
    if u.op in _intrinsic_ops: return self._round(self._intrinsic(_llvm_intrinsic[u.op], dt, a), dt)
    if u.op is Ops.WHERE: return self._ins("alu", f"select {self.ty(u.src[0].dtype)} {a[0]}, {t} {a[1]}, {t} {a[2]}")
    if u.op is Ops.NEG:
      if _is_f(dt): return self._ins("alu", f"fneg {t} {a[0]}")
      return self._ins("alu", f"xor {t} {a[0]}, {self.const(True, dt)}" if dt.scalar() == dtypes.bool else f"sub {t} {self.const(0, dt)}, {a[0]}")
    if u.op is Ops.RECIPROCAL: return self._round(self._ins("alu", f"fdiv {t} {self.const(1.0, dt)}, {a[0]}"), dt)
    # a float MULACC may fuse (llvm.fmuladd): the linearizer makes it only for a reduce's accumulation, never a*b+c
    if u.op is Ops.MULACC and _is_f(dt): return self._round(self._intrinsic("fmuladd", dt, a), dt)
    if u.op is Ops.MULACC:
      m = self._round(self._ins("alu", f"{'fmul' if _is_f(dt) else 'mul'} {t} {a[0]}, {a[1]}"), dt)
      return self._round(self._ins("alu", f"{'fadd' if _is_f(dt) else 'add'} {t} {m}, {a[2]}"), dt)
    if u.op is Ops.MAX:
      # numpy.maximum: NaN in either operand gives NaN; a is kept when a > b or a is NaN, else b (which may be NaN)
      if _is_f(dt):
        c = self._ins("alu", f"fcmp ogt {t} {a[0]}, {a[1]}")
        n = self._ins("alu", f"fcmp uno {t} {a[0]}, {a[0]}")
        c = self._ins("alu", f"or {self.ty(dtypes.bool.vec(dt.count))} {c}, {n}")
      else: c = self._ins("alu", f"icmp {'sgt' if _sgn(dt) else 'ugt'} {t} {a[0]}, {a[1]}")
      return self._ins("alu", f"select {self.ty(dtypes.bool.vec(dt.count))} {c}, {t} {a[0]}, {t} {a[1]}")
    if u.op in (Ops.IDIV, Ops.MOD) and not _is_f(dt): return self._int_div(u.op, dt, a)
    ins_int, ins_f = _llvm_binop[u.op]
    ins = ins_f if _is_f(sdt) else ins_int if isinstance(ins_int, str) else ins_int[0 if _sgn(sdt) else 1]
    if u.op is Ops.CMPLT and sdt.scalar() == dtypes.bool: ins = "icmp ult"
    if u.op is Ops.IDIV: ins = "fdiv"
    if u.op in (Ops.ADD, Ops.SUB, Ops.MUL) and _sgn(dt) and all(s.dtype.scalar() == dt.scalar() for s in u.src) and _no_wrap(u): ins += " nsw"
    ret = self._ins("alu", f"{ins} {st} {a[0]}, {a[1]}")
    return ret if u.op in GroupOp.Comparison else self._round(ret, dt)
  def _int_div(self, op: Ops, dt: DType, a: list[str]) -> str:
    # an x86 division by 0 (or INT_MIN/-1) traps: such divisors give 0 (a/-1 gives -a), as in the C renderer
    t, bt = self.ty(dt), self.ty(dtypes.bool.vec(dt.count))
    ins = ("sdiv" if op is Ops.IDIV else "srem") if _sgn(dt) else ("udiv" if op is Ops.IDIV else "urem")
    if a[1].lstrip("-").isdigit() and int(a[1]) not in (0, -1): return self._ins("alu", f"{ins} {t} {a[0]}, {a[1]}")
    zero = self._ins("alu", f"icmp eq {t} {a[1]}, {self.const(0, dt)}")
    bad, m1 = zero, None
    if _sgn(dt):
      m1 = self._ins("alu", f"icmp eq {t} {a[1]}, {self.const(-1, dt)}")
      bad = self._ins("alu", f"or {bt} {zero}, {m1}")
    safe = self._ins("alu", f"select {bt} {bad}, {t} {self.const(1, dt)}, {t} {a[1]}")
    q = self._ins("alu", f"{ins} {t} {a[0]}, {safe}")
    if m1 is not None:
      alt = self._ins("alu", f"sub {t} {self.const(0, dt)}, {a[0]}") if op is Ops.IDIV else self.const(0, dt)
      q = self._ins("alu", f"select {bt} {m1}, {t} {alt}, {t} {q}")
    return self._ins("alu", f"select {bt} {zero}, {t} {self.const(0, dt)}, {t} {q}")

  def _cast(self, u: UOp) -> str: return self._convert(self.r[u.src[0]], u.src[0].dtype, u.dtype)
  def _convert(self, x: str, sfull: DType, full: DType) -> str:
    sdt, dt = sfull.scalar(), full.scalar()
    st, t = self.ty(sfull), self.ty(full)
    if dt == dtypes.bool:
      return self._ins("cast", f"fcmp une {st} {x}, {self.const(0.0, sfull)}" if _is_f(sdt) else f"icmp ne {st} {x}, {self.const(0, sfull)}")
    if _is_f(dt) and _is_f(sdt):
      sb, db = self.ty(sdt), self.ty(dt)
      sz = {"half": 2, "float": 4, "double": 8}
      if sb == db: return self._round(x, dt)
      return self._round(self._ins("cast", f"{'fpext' if sz[db] > sz[sb] else 'fptrunc'} {st} {x} to {t}"), dt)
    if _is_f(dt): return self._round(self._ins("cast", f"{'sitofp' if _sgn(sdt) else 'uitofp'} {st} {x} to {t}"), dt)
    if _is_f(sdt): return self._ins("cast", f"{'fptosi' if _sgn(dt) else 'fptoui'} {st} {x} to {t}")
    if st == t: return x
    if dt.itemsize < sdt.itemsize: return self._ins("cast", f"trunc {st} {x} to {t}")
    return self._ins("cast", f"{'sext' if _sgn(sdt) else 'zext'} {st} {x} to {t}")

  def _to_mem(self, v: str, dt: DType) -> str:
    if dt.scalar() == dtypes.bool: return self._ins("cast", f"zext {self.ty(dt)} {v} to {self.mty(dt)}")
    if dt.scalar() == dtypes.bfloat16: return self._ins("cast", f"call i16 @__f2b(float {v})")
    return v
  def _from_mem(self, v: str, dt: DType) -> str:
    if dt.scalar() == dtypes.bool: return self._ins("cast", f"icmp ne {self.mty(dt)} {v}, {self.const(0, dtypes.uint8.vec(dt.count))}")
    if dt.scalar() == dtypes.bfloat16: return self._ins("cast", f"call float @__b2f(i16 {v})")
    return v
  def _gated(self, gate: UOp | None, kind: str) -> tuple[str, str] | None:
    if gate is None: return None
    n = self._new(kind)[1:]
    self._emit(f"br i1 {self.r[gate]}, label %{n}.t, label %{n}.e")
    start = self.block
    self._label(f"{n}.t")
    return n, start

  # ---- target hooks ----
  def extra_args(self) -> list[str]: return []
  def loop_bounds(self, u: UOp, nm: str, end: str) -> tuple[str, str]:
    """The start and stop of loop `u` (named `nm`, counting to `end`); a target may emit instructions to compute them."""
    return "0", end
  def render_special(self, u: UOp) -> str: raise NotImplementedError(f"{type(self).__name__} has no launch index {u.arg}")
  def render_barrier(self) -> None: pass
  def render_local(self, u: UOp, nm: str) -> None:
    """Storage for a DEFINE_LOCAL: by default a function-local array, like DEFINE_REG."""
    assert isinstance(u.dtype, PtrDType)
    self.alloca(nm, f"[{u.dtype.size} x {self.mty(u.dtype.base)}]", 16)
  def render_wmma(self, u: UOp) -> str:
    """A tensor core's WMMA uop (codegen/tc.py), for a target that declares `tensor_cores`: its vector result."""
    raise NotImplementedError(f"{type(self).__name__} has no tensor core {u.arg[0]}")
  def fn_attrs(self, uops: list[UOp]) -> str: return "nounwind"
  def render_kernel(self, name: str, args: list[str], uops: list[UOp]) -> str:
    """The module: declarations, helpers, module-level globals, then the function around the rendered body."""
    body = "\n".join(self.body)   # either bfloat16 helper may be used alone (a kernel that only stores bfloat16 calls @__f2b)
    helpers = [_bf16_llvm] if "@__b2f" in body or "@__f2b" in body else []
    head = f"define {self.kernel_cc}void @{name}({', '.join(args)}) {self.fn_attrs(uops)} {{"
    # non-temporal stores are weakly ordered: a fence makes them visible before the kernel returns (to the thread that waits)
    fence = ["  fence seq_cst"] if self.nt_meta is not None else []
    return "\n".join([*sorted(self.decls), *helpers, *self.globals, head, "entry:", *self.allocas, *self.body, *fence, "  ret void", "}", *self.meta]) + "\n"

  def _nt_meta(self) -> int:
    """The module's `!{i32 1}` node that marks a store non-temporal."""
    if self.nt_meta is None:
      self.nt_meta = 1000 + len(self.meta)
      self.meta.append(f"!{self.nt_meta} = !{{i32 1}}")
    return self.nt_meta

  def render(self, uops: list[UOp], name: str = "kernel") -> str:
    """LLVM IR for the linearized `uops`: a function `@name(bufs..., i32 vars..., extra args...)`."""
    self.r: dict[UOp, str] = {}
    self.body: list[str] = []
    self.counters: dict[str, int] = {}
    self.decls: set[str] = set()
    self.globals: list[str] = []
    self.allocas: list[str] = []
    self.meta: list[str] = []   # module metadata (loop hints)
    self.nt_meta = None
    self.block = "entry"
    args: list[str] = []
    loops: list[tuple[UOp, str]] = []
    ifs: list[str] = []
    for u in uops:
      if u.op is Ops.DEFINE_GLOBAL:
        self.r[u] = f"%data{u.arg}"
        args.append(f"{self.ty(u.dtype)} noalias %data{u.arg}")
      elif u.op is Ops.DEFINE_VAR:
        # the launch contract passes every variable as a 32-bit int; a wider one (Variable(..., dtype=dtypes.long)) is extended
        self.r[u] = nm = f"%{self.var_name(u)}"
        if u.dtype.itemsize == 4: args.append(f"i32 {nm}")
        else:
          args.append(f"i32 {nm}.arg")
          self.allocas.append(f"  {nm} = {'sext' if u.dtype.itemsize > 4 else 'trunc'} i32 {nm}.arg to {self.ty(u.dtype)}")
      elif u.op is Ops.CONST: self.r[u] = self.const(u.arg, u.dtype)
      elif u.op is Ops.VCONST: self.r[u] = f"<{', '.join(f'{self.ty(u.dtype.scalar())} {self.const(v, u.dtype.scalar())}' for v in u.arg)}>"
      elif u.op in (Ops.SINK, Ops.NOOP): continue
      elif u.op is Ops.BARRIER: self.render_barrier()
      elif u.op is Ops.SPECIAL: self.r[u] = self.render_special(u)
      elif u.op is Ops.DEFINE_LOCAL:
        self.r[u] = nm = f"@{self._new('temp')[1:]}" if self.addrspaces.get(AddrSpace.LOCAL) else self._new("temp")
        self.render_local(u, nm)
      elif u.op is Ops.DEFINE_REG:
        assert isinstance(u.dtype, PtrDType)
        self.r[u] = nm = self._new("acc")
        self.alloca(nm, f"[{u.dtype.size} x {self.mty(u.dtype.base)}]", 16)
      elif u.op is Ops.RANGE:
        nm = f"ridx{u.arg[0]}" if isinstance(u.arg, tuple) else self._new("ridx")[1:]
        t, end = self.ty(u.dtype), self.r[u.src[0]]
        self.alloca(f"%{nm}.addr", t)
        start, stop = self.loop_bounds(u, nm, end)
        self._emit(f"store {t} {start}, {self.ptr(AddrSpace.REG)} %{nm}.addr")
        self._emit(f"br label %{nm}.head")
        self._label(f"{nm}.head")
        self._emit(f"%{nm} = load {t}, {self.ptr(AddrSpace.REG)} %{nm}.addr")
        self._emit(f"%{nm}.go = icmp slt {t} %{nm}, {stop}")
        self._emit(f"br i1 %{nm}.go, label %{nm}.body, label %{nm}.exit")
        self._label(f"{nm}.body")
        self.r[u] = f"%{nm}"
        loops.append((u, nm))
      elif u.op is Ops.END:
        rng, nm = loops.pop()
        t = self.ty(rng.dtype)
        self._emit(f"%{nm}.inc = add nsw {t} %{nm}, 1")   # (the counter is below its end, itself a value of the type)
        self._emit(f"store {t} %{nm}.inc, {self.ptr(AddrSpace.REG)} %{nm}.addr")
        # a loop of fewer than 16 iterations is not for LLVM's loop vectorizer (its own minimum trip count, which it cannot
        # see where the loop is split across cores): vectorizing an unrolled body over 5 rows cost a GPT-2 layer norm
        # 63 instead of 25 ms of compile, for a vector body that never runs
        if rng.src[0].op is Ops.CONST and rng.src[0].arg < 16:
          k = 1000 + len(self.meta)   # (ids from 1000: a compiler may add its own module flags from !0)
          self.meta += [f"!{k} = distinct !{{!{k}, !{k+1}}}", f'!{k+1} = !{{!"llvm.loop.vectorize.enable", i1 false}}']
          self._emit(f"br label %{nm}.head, !llvm.loop !{k}")
        else: self._emit(f"br label %{nm}.head")
        self._label(f"{nm}.exit")
      elif u.op is Ops.IF:
        n = self._new("if")[1:]
        ifs.append(n)
        self._emit(f"br i1 {self.r[u.src[0]]}, label %{n}.t, label %{n}.e")
        self._label(f"{n}.t")
      elif u.op is Ops.ENDIF:
        n = ifs.pop()
        self._emit(f"br label %{n}.e")
        self._label(f"{n}.e")
      elif u.op is Ops.INDEX:
        buf = u.src[0]
        elem = self.mty(buf.dtype.base) if isinstance(buf.dtype, PtrDType) else "i8"
        self.r[u] = self._ins("idx", f"getelementptr inbounds {elem}, {self.ty(buf.dtype)} {self.r[buf]}, {self.ty(u.src[1].dtype)} {self.r[u.src[1]]}")
      elif u.op is Ops.CAST and isinstance(u.dtype, PtrDType): self.r[u] = self.r[u.src[0]]   # opaque pointers: nothing to do
      elif u.op is Ops.LOAD:
        idx = u.src[0]
        gate = (idx.src[0] if idx.op is Ops.CAST else idx)
        g = self._gated(gate.src[2] if gate.op is Ops.INDEX and len(gate.src) > 2 else None, "gl")
        v = self._from_mem(self._ins("val", f"load {self.mty(u.dtype)}, {self.ty(idx.dtype)} {self.r[idx]}, align {u.dtype.scalar().itemsize}"), u.dtype)
        if g is not None:
          n, start = g
          end_block = self.block
          self._emit(f"br label %{n}.e")
          self._label(f"{n}.e")
          v = self._ins("val", f"phi {self.ty(u.dtype)} [{v}, %{end_block}], [{self.const(0, u.dtype)}, %{start}]")
        self.r[u] = v
      elif u.op is Ops.STORE:
        idx, val = u.src[0], u.src[1]
        gate = (idx.src[0] if idx.op is Ops.CAST else idx)
        g = self._gated(gate.src[2] if gate.op is Ops.INDEX and len(gate.src) > 2 else None, "gs")
        st = f"store {self.mty(val.dtype)} {self._to_mem(self.r[val], val.dtype)}, {self.ty(idx.dtype)} {self.r[idx]}"
        if u.arg == "nontemporal" and self.nontemporal_stores and (nb := val.dtype.itemsize) >= 16 and nb & (nb - 1) == 0:
          # movntps needs the vector's own alignment (LLVM writes a less aligned one as 8-byte movnti's): checked per store
          a = self._ins("nt", f"ptrtoint {self.ty(idx.dtype)} {self.r[idx]} to i64")
          ok = self._ins("nt", f"icmp eq i64 {self._ins('nt', f'and i64 {a}, {nb - 1}')}, 0")
          n = self._new("nt")[1:]
          self._emit(f"br i1 {ok}, label %{n}.t, label %{n}.f")
          self._label(f"{n}.t")
          self._emit(f"{st}, align {nb}, !nontemporal !{self._nt_meta()}")
          self._emit(f"br label %{n}.e")
          self._label(f"{n}.f")
          self._emit(f"{st}, align {val.dtype.scalar().itemsize}")
          self._emit(f"br label %{n}.e")
          self._label(f"{n}.e")
        else: self._emit(f"{st}, align {val.dtype.scalar().itemsize}")
        if g is not None:
          self._emit(f"br label %{g[0]}.e")
          self._label(f"{g[0]}.e")
      elif u.op is Ops.PREFETCH:   # (a hint: read, keep in every cache level)
        if self.ty(u.src[0].dtype) == "ptr":
          self.decls.add("declare void @llvm.prefetch.p0(ptr, i32, i32, i32)")
          self._emit(f"call void @llvm.prefetch.p0(ptr {self.r[u.src[0]]}, i32 0, i32 3, i32 1)")
      elif u.op is Ops.CAST: self.r[u] = self._cast(u)
      elif u.op is Ops.BITCAST:
        x, sdt = self.r[u.src[0]], u.src[0].dtype
        if sdt.scalar() == dtypes.bfloat16: x = self._to_mem(x, sdt)
        v = self._ins("cast", f"bitcast {self.mty(sdt)} {x} to {self.mty(u.dtype)}")
        self.r[u] = self._from_mem(v, u.dtype) if u.dtype.scalar() == dtypes.bfloat16 else v
      elif u.op is Ops.VECTORIZE:
        # zeros make zeroinitializer, one value a splat (two instructions): LLVM's time goes by the IR's length, and an
        # upcast kernel broadcasts scalars (a zero accumulator, a gate, a constant, a row's value) to every width it uses
        t, et = self.ty(u.dtype), self.ty(u.dtype.scalar())
        if all(s.op is Ops.CONST and self.r[s] == self.const(0, s.dtype) for s in u.src): self.r[u] = "zeroinitializer"
        elif len(u.src) > 2 and all(s is u.src[0] for s in u.src):
          one = self._ins("vec", f"insertelement {t} poison, {et} {self.r[u.src[0]]}, i32 0")
          self.r[u] = self._ins("vec", f"shufflevector {t} {one}, {t} poison, <{len(u.src)} x i32> zeroinitializer")
        else:
          v = "poison"
          for i, s in enumerate(u.src): v = self._ins("vec", f"insertelement {t} {v}, {et} {self.r[s]}, i32 {i}")
          self.r[u] = v
      elif u.op is Ops.GEP:
        src = self.r[u.src[0]]
        if len(u.arg) == 1: self.r[u] = self._ins("gep", f"extractelement {self.ty(u.src[0].dtype)} {src}, i32 {u.arg[0]}")
        else:
          mask = ", ".join(f"i32 {i}" for i in u.arg)
          self.r[u] = self._ins("gep", f"shufflevector {self.ty(u.src[0].dtype)} {src}, {self.ty(u.src[0].dtype)} poison, <{len(u.arg)} x i32> <{mask}>")
      elif u.op in GroupOp.ALU: self.r[u] = self._alu(u)
      elif u.op is Ops.WMMA: self.r[u] = self.render_wmma(u)
      else: raise NotImplementedError(f"{type(self).__name__} cannot render {u.op} with dtype {u.dtype} (arg={u.arg!r})")
    return self.render_kernel(name, args + self.extra_args(), uops)

_intrinsic_ops = set(_llvm_intrinsic)

__all__ = ["LLVMIRRenderer"]
