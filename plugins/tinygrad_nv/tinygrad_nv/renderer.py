"""NV renderers: CUDARenderer (CUDA C for NVRTC/nvcc, on the core's CStyleLanguage) and PTXRenderer (our own PTX).

Both need no CUDA headers: half and bfloat16 live as their 16 bits in memory and as float in registers (rounded to
their width after every op, exact for + - * / sqrt), converted with PTX `cvt` (half) and integer bit tricks (bfloat16,
which sm_75 has no cvt for). So NVRTC from a pip wheel (no toolkit, no include path) compiles every kernel.

Device quirks live in the tables here: `nv_code_for_op`, `pm_nv_launch` (blocks of threads instead of blocks of one),
the core's GPU rules (renderer/gpu.py: blocks of threads, lane-wise vector ALU: CUDA's float4 has no operators).
"""
from __future__ import annotations
import struct
from typing import Any, Callable
from tinygrad.plugin_api import (Ops, GroupOp, UOp, UPat, PatternMatcher, DType, PtrDType, AddrSpace, dtypes, Renderer, CStyleLanguage,
  base_code_for_op, safe_div, base_rewrite, pm_split_launch, pm_devectorize_alu, launch_threads)
from tinygrad.codegen.tc import NV_TENSOR_CORES

# ---------------------------------------------------------------- shared rules ----------------------------------------------------------------

LOCAL_TARGET = 128   # threads per block the launch rule aims for (a multiple of the 32-thread warp)

def nv_extra_matcher(local_max: tuple[int, ...]) -> PatternMatcher:
  return pm_split_launch(LOCAL_TARGET, local_max) + pm_devectorize_alu   # blocks of threads; CUDA's float4 has no operators

# ---- tensor cores: mma.sync.m16n8k16 with fp32 accumulate (sm_80+). Inputs are held as f32 in registers (exactly their
# half/bfloat16 value), packed in pairs into the .f16x2/.bf16x2 registers the instruction reads, lower element in the low half;
# the WMMA's name (codegen/tc.py) is layout_input_output in PTX type spellings

def mma_lines(name: str, a: list[str], b: list[str], c: list[str], d: list[str], pack: Callable[[str, str, str], str]) -> list[str]:
  """The PTX of one WMMA uop: pack a/b pairs with `pack(dtype, hi, lo) -> b32 register`, then the mma into registers d."""
  ty = name.split("_")[1]
  ra = [pack(ty, a[2*i+1], a[2*i]) for i in range(len(a) // 2)]
  rb = [pack(ty, b[2*i+1], b[2*i]) for i in range(len(b) // 2)]
  return [f"mma.sync.aligned.m16n8k16.row.col.f32.{ty}.{ty}.f32 {{{', '.join(d)}}}, {{{', '.join(ra)}}}, {{{', '.join(rb)}}}, {{{', '.join(c)}}};"]

def cuda_mma_function(name: str, ea: int, eb: int, ec: int) -> str:
  """A CUDA device function running the WMMA uop `name` with inline PTX: float args in, float4 (D) out."""
  ty = name.split("_")[1]
  args = [f"float a{i}" for i in range(ea)] + [f"float b{i}" for i in range(eb)] + [f"float c{i}" for i in range(ec)]
  packs = [f'  asm("cvt.rn.{ty}x2.f32 %0, %1, %2;" : "=r"({v}[{i}]) : "f"({v}{2*i+1}), "f"({v}{2*i}));'
           for v, n in (("a", ea), ("b", eb)) for i in range(n // 2)]
  regs = [f"%{i}" for i in range(ec + ea // 2 + eb // 2 + ec)]
  cut = [ec, ec + ea // 2, ec + ea // 2 + eb // 2]
  mma = (f"mma.sync.aligned.m16n8k16.row.col.f32.{ty}.{ty}.f32 {{{','.join(regs[:cut[0]])}}}, {{{','.join(regs[cut[0]:cut[1]])}}}, "
         f"{{{','.join(regs[cut[1]:cut[2]])}}}, {{{','.join(regs[cut[2]:])}}};")
  outs = ", ".join(f'"=f"(d.{"xyzw"[i]})' for i in range(ec))
  ins = ", ".join([f'"r"(a[{i}])' for i in range(ea // 2)] + [f'"r"(b[{i}])' for i in range(eb // 2)] + [f'"f"(c{i})' for i in range(ec)])
  return "\n".join([f"__device__ __forceinline__ float{ec} __{name}({', '.join(args)}) {{",
                    f"  unsigned int a[{ea // 2}], b[{eb // 2}]; float{ec} d;", *packs,
                    f'  asm volatile("{mma}" : {outs} : {ins});', "  return d;", "}"])

def arch_number(arch: str) -> int:
  """'sm_90' -> 90, 'sm_90a' -> 90."""
  return int("".join(c for c in arch.split("_")[-1] if c.isdigit()))

# ---------------------------------------------------------------- CUDA C ----------------------------------------------------------------

def _math(f32: str, f64: str) -> Callable[..., str]:
  return lambda x, dtype: f"{f64 if dtype.scalar() == dtypes.float64 else f32}({x})"

nv_code_for_op: dict[Ops, Callable[..., str]] = {**base_code_for_op,
  Ops.IDIV: safe_div("/"), Ops.MOD: safe_div("%"),
  Ops.SQRT: _math("sqrtf", "sqrt"), Ops.EXP2: _math("exp2f", "exp2"), Ops.LOG2: _math("log2f", "log2"),
  Ops.SIN: _math("sinf", "sin"), Ops.TRUNC: _math("truncf", "trunc")}

_cuda_fp16 = """__device__ __forceinline__ float __h2f(unsigned short h) { float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f; }
__device__ __forceinline__ unsigned short __f2h(float f) { unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h; }"""
_cuda_bf16 = """__device__ __forceinline__ float __b2f(unsigned short b) { return __uint_as_float((unsigned int)b << 16); }
__device__ __forceinline__ unsigned short __f2b(float f) {
  unsigned int u = __float_as_uint(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return (unsigned short)(0x7fc0u | ((u >> 16) & 0x8000u));
  return (unsigned short)((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}"""
# CUDA's built-in vector types (with make_<name>N constructors) by scalar C type
_cuda_vec = {"float": "float", "double": "double", "int": "int", "unsigned int": "uint", "signed char": "char", "unsigned char": "uchar",
             "short": "short", "unsigned short": "ushort", "long long": "longlong", "unsigned long long": "ulonglong"}

# a bit copy through a union: C's `*(T*)&x` needs an lvalue, and a bitcast operand is often an inlined expression
_cuda_bitcast = "template <class T, class F> __device__ __forceinline__ T __tg_bitcast(F x) { union { F f; T t; } u; u.f = x; return u.t; }"

class NVAbilities:
  """What a CUDA device offers both NV renderers: launch limits (overridable from the device's attributes), the target
  arch, thread blocks chosen by the extra matcher, and the source -> uops record the mock driver reads."""
  device = "NV"
  has_local = True
  has_shared = True
  global_max: tuple[int, ...] | None = (2**31 - 1, 65535, 65535)
  local_max: tuple[int, ...] | None = (1024, 1024, 64)
  shared_max = 49152
  def __init__(self, arch: str = "sm_80", local_max: tuple[int, ...] | None = None, shared_max: int | None = None,
               global_max: tuple[int, ...] | None = None):
    self.arch = arch
    if local_max is not None: self.local_max = local_max
    if shared_max is not None: self.shared_max = shared_max
    if global_max is not None: self.global_max = global_max
    self.extra_matcher: PatternMatcher | None = nv_extra_matcher(self.local_max or (1024,))
    self.tensor_cores = NV_TENSOR_CORES if arch_number(arch) >= 80 else []   # mma.m16n8k16 needs sm_80
    self.record: dict[str, list[UOp]] | None = None   # source -> uops, kept when the mock driver needs them (see runtime.py)
  def __reduce__(self): return type(self), (self.arch, self.local_max, self.shared_max, self.global_max)
  def __repr__(self) -> str: return f"{type(self).__name__}({self.arch!r})"

class CUDARenderer(NVAbilities, CStyleLanguage):
  """CUDA C: `extern "C" __global__` kernels with launch bounds, blockIdx/threadIdx launch indices, `__shared__` memory,
  `__syncthreads()`, built-in vector types (or a small struct where CUDA has none). `arch` ("sm_90") is the target."""
  barrier = "__syncthreads();"
  smem_prefix = "__shared__ "
  smem_align = " __attribute__((aligned(16)))"
  arg_int_prefix = "const int"
  infinity = "__int_as_float(0x7f800000)"
  nan = "__int_as_float(0x7fc00000)"
  code_for_workitem = {"g": lambda a: f"((int)blockIdx.{'xyz'[int(a)]})", "l": lambda a: f"((int)threadIdx.{'xyz'[int(a)]})",
                       "i": lambda a: f"((int)(blockIdx.{'xyz'[int(a)]}*blockDim.{'xyz'[int(a)]}+threadIdx.{'xyz'[int(a)]}))"}
  type_map = {dtypes.bool: "bool", dtypes.int64: "long long", dtypes.uint64: "unsigned long long"}
  emulated_floats = {dtypes.float16: (dtypes.uint16, "__h2f({})", "__f2h({})", "__h2f(__f2h({}))"),
                     dtypes.bfloat16: (dtypes.uint16, "__b2f({})", "__f2b({})", "__b2f(__f2b({}))")}
  code_for_op = nv_code_for_op
  unaligned_vectors = False   # CUDA's float4 dereference needs 16-byte alignment
  string_rewrite = PatternMatcher([
    (UPat(Ops.WMMA, name="x"), lambda ctx, x: f"__{x.arg[0]}({', '.join(ctx.r[s] for s in x.src)})"),   # tensor core: see prelude
  ]) + base_rewrite

  # ---- vector types ----
  def _vec_name(self, dt: DType) -> str:
    base = self.render_dtype(dt.scalar())
    return f"{_cuda_vec[base]}{dt.count}" if base in _cuda_vec and dt.count <= 4 else f"tg_{base.replace(' ', '_')}{dt.count}"
  def render_dtype(self, dt: DType, mutable: bool = True) -> str:
    if not isinstance(dt, PtrDType) and dt.count > 1: return self._vec_name(dt)
    return super().render_dtype(dt, mutable)
  def render_vectorize(self, elems: list[str], dt: DType) -> str:
    name = self._vec_name(dt)
    return f"{name}{{{{{','.join(elems)}}}}}" if name.startswith("tg_") else f"make_{name}({','.join(elems)})"
  def render_gep(self, vec: str, lane: int, dt: DType) -> str:
    return f"{vec}.v[{lane}]" if self._vec_name(dt).startswith("tg_") else f"{vec}.{'xyzw'[lane]}"

  def render_bitcast(self, to: str, frm: str, x: str) -> str: return f"__tg_bitcast<{to}>({x})"
  def prelude(self, uops: list[UOp]) -> list[str]:
    used = {u.dtype.scalar() for u in uops} | {u.dtype.base.scalar() for u in uops if isinstance(u.dtype, PtrDType)}
    ret = [_cuda_fp16] if dtypes.float16 in used else []
    if dtypes.bfloat16 in used: ret.append(_cuda_bf16)
    vecs = {self.storage_dtype(u.dtype.base if isinstance(u.dtype, PtrDType) else u.dtype) for u in uops}
    vecs |= {self.compute_dtype(d) for d in vecs}
    for dt in sorted(d for d in vecs if d.count > 1 and self._vec_name(d).startswith("tg_")):
      base = self.render_dtype(dt.scalar())
      ret.append(f"struct __attribute__((aligned({min(16, dt.itemsize)}))) {self._vec_name(dt)} {{ {base} v[{dt.count}]; }};")
    if any(u.op is Ops.BITCAST for u in uops): ret.append(_cuda_bitcast)
    for w in {u.arg: u for u in uops if u.op is Ops.WMMA}.values():
      ea, eb = w.arg[3]
      ret.append(cuda_mma_function(w.arg[0], ea, eb, w.dtype.count))
    return ret
  def render_kernel(self, name: str, body: list[str], args: list[str], uops: list[UOp], prelude: list[str]) -> str:
    head = f'extern "C" __global__ void __launch_bounds__({launch_threads(uops)}) {name}({", ".join(args)}) {{'
    return "\n".join(prelude + [head] + body + ["}"]) + "\n"
  def render(self, uops: list[UOp], name: str = "kernel") -> str:
    src = super().render(uops, name)
    if self.record is not None: self.record[src] = uops
    return src

# ---------------------------------------------------------------- PTX ----------------------------------------------------------------

# lowest PTX ISA version that knows each target: the lower the version, the older the driver that JITs it
_PTX_VERSION = [(75, "6.4"), (80, "7.0"), (86, "7.1"), (89, "7.8"), (90, "7.8"), (100, "8.6"), (120, "8.7")]

def ptx_version(arch: str) -> str:
  n = arch_number(arch)
  return next((v for a, v in reversed(_PTX_VERSION) if n >= a), "6.4")

def _rty(dt: DType) -> str:
  """Register type: bool is a predicate, narrow ints live in 32-bit registers, half/bfloat16 in f32."""
  s = dt.scalar()
  if s == dtypes.bool: return "pred"
  if s in (dtypes.float16, dtypes.bfloat16, dtypes.float32): return "f32"
  if s == dtypes.float64: return "f64"
  return ("u" if dtypes.is_unsigned(s) else "s") + ("64" if s.itemsize == 8 else "32")

def _mty(dt: DType) -> str:
  """Memory type of one element."""
  s = dt.scalar()
  if s == dtypes.bool: return "u8"
  if s in (dtypes.float16, dtypes.bfloat16): return "b16"
  if dtypes.is_float(s): return f"f{s.itemsize*8}"
  return ("u" if dtypes.is_unsigned(s) else "s") + str(s.itemsize*8)

def _bits_of(rty: str) -> str: return "b" + rty[1:]

def _fimm(v: float, dt: DType) -> str:
  if dt.scalar() == dtypes.float64: return f"0d{struct.unpack('>Q', struct.pack('>d', float(v)))[0]:016X}"
  return f"0f{struct.unpack('>I', struct.pack('>f', float(v)))[0]:08X}"

# the ops the PTX renderer emits itself; the rest (EXP2, LOG2, SIN: PTX has only approximate ones) are decomposed by codegen
_ptx_ops = [Ops.ADD, Ops.SUB, Ops.MUL, Ops.FDIV, Ops.IDIV, Ops.MOD, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ, Ops.AND, Ops.OR, Ops.XOR,
            Ops.SHL, Ops.SHR, Ops.NEG, Ops.RECIPROCAL, Ops.MAX, Ops.WHERE, Ops.MULACC, Ops.SQRT, Ops.TRUNC]

class PTXRenderer(NVAbilities, Renderer):
  """Linearized uops -> PTX text: one virtual register per value (ptxas allocates), constants moved into registers, loops as
  labelled branches, `.local` arrays for accumulators, `.shared` for DEFINE_LOCAL. Float ops carry `.rn` so ptxas never
  fuses a*b+c (results match numpy); narrow ints compute in 32-bit registers and are re-wrapped after each op."""
  code_for_op: dict[Ops, Callable[..., str]] = {op: (lambda *a, **k: "") for op in _ptx_ops}
  unaligned_vectors = False   # ld.v4/st.v4 need the vector's alignment

  # ---- registers and emission ----
  def _reg(self, rty: str) -> str:
    nm = f"%{'p' if rty == 'pred' else rty[0]}{rty[1:] if rty != 'pred' else ''}_{len(self.regs)}"
    self.regs.append((rty, nm))
    return nm
  def _e(self, line: str) -> None: self.lines.append(f"\t{line}")
  def _ins(self, rty: str, text: str) -> str:
    d = self._reg(rty)
    self._e(text.format(d=d))
    return d
  def _wrap(self, r: str, dt: DType) -> str:
    """Re-wrap a narrow int held in 32 bits; round a half/bfloat16 held in f32 to its width."""
    s = dt.scalar()
    if dtypes.is_int(s) and s.itemsize < 4:
      if dtypes.is_unsigned(s): return self._ins("u32", f"and.b32 {{d}}, {r}, {(1 << (8*s.itemsize)) - 1};")
      sh = 32 - 8*s.itemsize
      return self._ins("s32", f"shr.s32 {{d}}, {self._ins('s32', f'shl.b32 {{d}}, {r}, {sh};')}, {sh};")
    if s in (dtypes.float16, dtypes.bfloat16): return self._from_bits(self._to_bits(r, s), s)
    return r
  def _to_bits(self, f: str, s: DType) -> str:
    """An f32 register -> the 16 bits of half/bfloat16 (round to nearest even), in a b16 (half) or u32 (bfloat16) register."""
    if s == dtypes.float16: return self._ins("b16", f"cvt.rn.f16.f32 {{d}}, {f};")
    u = self._ins("u32", f"mov.b32 {{d}}, {f};")
    a = self._ins("u32", f"and.b32 {{d}}, {u}, 2147483647;")
    nan = self._ins("pred", f"setp.gt.u32 {{d}}, {a}, 2139095040;")
    h = self._ins('u32', f'shr.u32 {{d}}, {u}, 16;')
    lsb = self._ins("u32", f"and.b32 {{d}}, {h}, 1;")
    t = self._ins("u32", f"add.u32 {{d}}, {u}, {self._ins('u32', f'add.u32 {{d}}, {lsb}, 32767;')};")
    t = self._ins("u32", f"shr.u32 {{d}}, {t}, 16;")
    qnan = self._ins("u32", f"or.b32 {{d}}, {self._ins('u32', f'and.b32 {{d}}, {h}, 32768;')}, 32704;")   # a quiet NaN of f's sign
    return self._ins("u32", f"selp.u32 {{d}}, {qnan}, {t}, {nan};")
  def _from_bits(self, b: str, s: DType) -> str:
    if s == dtypes.float16: return self._ins("f32", f"cvt.f32.f16 {{d}}, {b};")
    return self._ins("f32", f"mov.b32 {{d}}, {self._ins('u32', f'shl.b32 {{d}}, {b}, 16;')};")
  def _const(self, v: Any, dt: DType) -> str:
    rty = _rty(dt)
    if rty == "pred": return self._ins("pred", f"setp.ne.s32 {{d}}, {1 if v else 0}, 0;")
    if rty[0] == "f":
      return self._ins(rty, f"mov.{_bits_of(rty)} {{d}}, {_fimm(v, dtypes.float64 if rty == 'f64' else dtypes.float32)};")
    return self._ins(rty, f"mov.{_bits_of(rty)} {{d}}, {int(v) & ((1 << int(rty[1:])) - 1)};")

  # ---- ALU ----
  def _alu(self, u: UOp, a: list[str]) -> str:
    dt = u.dtype
    # operands whose dtype differs from the result's (seen: a float ADD of an int WHERE) are converted, as C does implicitly
    same = range(1, 3) if u.op is Ops.WHERE else range(len(u.src)) if u.op not in GroupOp.Comparison | {Ops.SHL, Ops.SHR} else range(0)
    a = [self._cast(a[i], s.dtype, dt) if i in same and s.dtype.scalar() != dt.scalar() else a[i] for i, s in enumerate(u.src)]
    rty, sty = _rty(dt), _rty(u.src[0].dtype)
    isf = sty[0] == "f"
    if u.op in (Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ):
      if sty == "pred":
        x = self._ins("pred", f"xor.pred {{d}}, {a[0]}, {a[1]};")
        if u.op is Ops.CMPNE: return x
        if u.op is Ops.CMPEQ: return self._ins("pred", f"not.pred {{d}}, {x};")
        return self._ins("pred", f"and.pred {{d}}, {self._ins('pred', f'not.pred {{d}}, {a[0]};')}, {a[1]};")
      cmp = {Ops.CMPLT: "lt", Ops.CMPNE: "neu" if isf else "ne", Ops.CMPEQ: "eq"}[u.op]
      return self._ins("pred", f"setp.{cmp}.{sty} {{d}}, {a[0]}, {a[1]};")
    if u.op is Ops.WHERE:
      if rty == "pred":
        t = self._ins("pred", f"and.pred {{d}}, {a[0]}, {a[1]};")
        f = self._ins("pred", f"and.pred {{d}}, {self._ins('pred', f'not.pred {{d}}, {a[0]};')}, {a[2]};")
        return self._ins("pred", f"or.pred {{d}}, {t}, {f};")
      return self._ins(rty, f"selp.{rty} {{d}}, {a[1]}, {a[2]}, {a[0]};")
    if u.op in (Ops.AND, Ops.OR, Ops.XOR): return self._wrap(self._ins(rty, f"{u.op.name.lower()}.{'pred' if rty == 'pred' else _bits_of(rty)} {{d}}, {a[0]}, {a[1]};"), dt)
    if u.op is Ops.NEG:
      if rty == "pred": return self._ins("pred", f"not.pred {{d}}, {a[0]};")
      return self._wrap(self._ins(rty, f"neg.{rty if isf or rty[0] == 's' else 's' + rty[1:]} {{d}}, {a[0]};"), dt)
    if u.op in (Ops.SHL, Ops.SHR):
      amt = a[1] if rty[1:] == "32" else self._ins("u32", f"cvt.u32.{rty} {{d}}, {a[1]};")
      ins = f"shl.{_bits_of(rty)}" if u.op is Ops.SHL else f"shr.{rty}"
      return self._wrap(self._ins(rty, f"{ins} {{d}}, {a[0]}, {amt};"), dt)
    if u.op is Ops.MAX:
      if rty == "pred": return self._ins("pred", f"or.pred {{d}}, {a[0]}, {a[1]};")
      if not isf: return self._ins(rty, f"max.{rty} {{d}}, {a[0]}, {a[1]};")
      # numpy.maximum: a NaN in either operand wins (PTX max returns the other operand)
      gt = self._ins("pred", f"setp.gt.{rty} {{d}}, {a[0]}, {a[1]};")
      nan = self._ins("pred", f"setp.nan.{rty} {{d}}, {a[0]}, {a[0]};")
      return self._ins(rty, f"selp.{rty} {{d}}, {a[0]}, {a[1]}, {self._ins('pred', f'or.pred {{d}}, {gt}, {nan};')};")
    if u.op in (Ops.IDIV, Ops.MOD):
      if isf: raise NotImplementedError(f"PTXRenderer: {u.op} on {dt}")
      ins = "div" if u.op is Ops.IDIV else "rem"
      z = self._ins("pred", f"setp.eq.{rty} {{d}}, {a[1]}, 0;")
      safe = self._ins(rty, f"selp.{rty} {{d}}, 1, {a[1]}, {z};")
      q = self._ins(rty, f"{ins}.{rty} {{d}}, {a[0]}, {safe};")
      return self._wrap(self._ins(rty, f"selp.{rty} {{d}}, 0, {q}, {z};"), dt)   # x/0 and x%0 give 0, as on every device
    if u.op is Ops.MULACC:
      m = self._wrap(self._ins(rty, f"mul.{'rn.' + rty if isf else 'lo.' + rty} {{d}}, {a[0]}, {a[1]};"), dt)
      return self._wrap(self._ins(rty, f"add.{'rn.' if isf else ''}{rty} {{d}}, {m}, {a[2]};"), dt)
    if isf and u.op in (Ops.SQRT, Ops.RECIPROCAL, Ops.TRUNC):
      ins = {Ops.SQRT: "sqrt.rn", Ops.RECIPROCAL: "rcp.rn", Ops.TRUNC: "cvt.rzi"}[u.op]
      return self._wrap(self._ins(rty, f"{ins}.{rty}{'.' + rty if u.op is Ops.TRUNC else ''} {{d}}, {a[0]};"), dt)
    ins = {Ops.ADD: "add", Ops.SUB: "sub", Ops.MUL: "mul", Ops.FDIV: "div"}[u.op]
    if isf: ins += ".rn"
    elif u.op is Ops.MUL: ins += ".lo"
    if rty == "pred":   # bool + bool is or, bool * bool is and
      return self._ins("pred", f"{'or' if u.op is Ops.ADD else 'and' if u.op is Ops.MUL else 'xor'}.pred {{d}}, {a[0]}, {a[1]};")
    return self._wrap(self._ins(rty, f"{ins}.{rty} {{d}}, {a[0]}, {a[1]};"), dt)

  def _cast(self, x: str, sdt: DType, dt: DType) -> str:
    sty, rty = _rty(sdt), _rty(dt)
    if rty == "pred":
      if sty == "pred": return x
      return self._ins("pred", f"setp.{'neu' if sty[0] == 'f' else 'ne'}.{sty} {{d}}, {x}, {_fimm(0, sdt) if sty[0] == 'f' else 0};")
    if sty == "pred":
      one = _fimm(1, dtypes.float64 if rty == "f64" else dtypes.float32) if rty[0] == "f" else "1"
      zero = _fimm(0, dtypes.float64 if rty == "f64" else dtypes.float32) if rty[0] == "f" else "0"
      return self._ins(rty, f"selp.{rty} {{d}}, {one}, {zero}, {x};")
    if sty[0] == "f" and rty[0] == "f":
      r = x if sty == rty else self._ins(rty, f"cvt{'.rn' if rty == 'f32' else ''}.{rty}.{sty} {{d}}, {x};")
      return self._wrap(r, dt)
    if sty[0] == "f":   # float -> int truncates (PTX saturates out-of-range values and gives 0 for NaN)
      full = ("u" if dtypes.is_unsigned(dt) else "s") + ("64" if dt.itemsize == 8 else "32")
      r = self._ins(full, f"cvt.rzi.{full}.{sty} {{d}}, {x};")
      return self._wrap(r if full == rty else self._ins(rty, f"mov.{_bits_of(rty)} {{d}}, {r};"), dt)
    if rty[0] == "f": return self._wrap(self._ins(rty, f"cvt.rn.{rty}.{sty} {{d}}, {x};"), dt)
    r = x if sty == rty else self._ins(rty, f"cvt.{rty}.{sty} {{d}}, {x};")
    return self._wrap(r, dt)   # int -> narrower int wraps at the target's width

  def _bitcast(self, x: str, sdt: DType, dt: DType) -> str:
    s, t = sdt.scalar(), dt.scalar()
    if s in (dtypes.float16, dtypes.bfloat16):
      b = self._to_bits(x, s)
      x = self._ins("u32", f"cvt.u32.u16 {{d}}, {b};") if s == dtypes.float16 else b
      sdt = dtypes.uint32
    if t in (dtypes.float16, dtypes.bfloat16):
      bits = self._ins("b16", f"cvt.u16.u32 {{d}}, {x};") if t == dtypes.float16 else self._ins("u32", f"and.b32 {{d}}, {x}, 65535;")
      return self._from_bits(bits, t)
    rty = _rty(dt)
    return self._wrap(self._ins(rty, f"mov.{_bits_of(rty)} {{d}}, {x};"), dt)

  # ---- memory ----
  def _space(self, buf: UOp) -> str:
    sp = buf.dtype.addrspace if isinstance(buf.dtype, PtrDType) else AddrSpace.GLOBAL
    return {AddrSpace.GLOBAL: "global", AddrSpace.LOCAL: "shared", AddrSpace.REG: "local"}[sp]
  def _ld(self, space: str, addr: str, dt: DType, gate: str | None) -> str:
    s, rty = dt.scalar(), _rty(dt)
    pre = f"@{gate} " if gate else ""
    if s in (dtypes.float16, dtypes.bfloat16):
      b = self._reg("b16" if s == dtypes.float16 else "u32")
      self._e(f"mov.{'b16' if s == dtypes.float16 else 'b32'} {b}, 0;")
      self._e(f"{pre}ld.{space}.{'b16' if s == dtypes.float16 else 'u16'} {b}, [{addr}];")
      return self._from_bits(b, s)
    if rty == "pred":
      b = self._reg("u32")
      self._e(f"mov.b32 {b}, 0;")
      self._e(f"{pre}ld.{space}.u8 {b}, [{addr}];")
      return self._ins("pred", f"setp.ne.u32 {{d}}, {b}, 0;")
    d = self._reg(rty)
    self._e(f"mov.{_bits_of(rty)} {d}, {_fimm(0, dt) if rty[0] == 'f' else 0};")
    self._e(f"{pre}ld.{space}.{_mty(dt)} {d}, [{addr}];")
    return d
  def _st(self, space: str, addr: str, v: str, dt: DType, gate: str | None) -> None:
    s, pre = dt.scalar(), (f"@{gate} " if gate else "")
    if s in (dtypes.float16, dtypes.bfloat16): v, mt = self._to_bits(v, s), "b16" if s == dtypes.float16 else "u16"
    elif s == dtypes.bool: v, mt = self._ins("u32", f"selp.u32 {{d}}, 1, 0, {v};"), "u8"
    else: mt = _mty(dt)
    self._e(f"{pre}st.{space}.{mt} [{addr}], {v};")

  def render(self, uops: list[UOp], name: str = "kernel") -> str:
    """PTX for the linearized `uops`: `.visible .entry name(.param .u64 data0, ..., .param .s32 var, ...)`."""
    self.regs: list[tuple[str, str]] = []
    self.lines: list[str] = []
    r: dict[UOp, Any] = {}
    params: list[str] = []
    decls: list[str] = []
    loops: list[tuple[UOp, str, str]] = []
    ifs: list[str] = []
    nlabel = 0
    for u in uops:
      if u.op in (Ops.SINK, Ops.NOOP): continue
      if u.op is Ops.DEFINE_GLOBAL:
        params.append(f".param .u64 data{u.arg}")
        raw = self._ins("u64", f"ld.param.u64 {{d}}, [data{u.arg}];")
        r[u] = self._ins("u64", f"cvta.to.global.u64 {{d}}, {raw};")
      elif u.op is Ops.DEFINE_VAR:
        params.append(f".param .s32 {self.var_name(u)}")
        r[u] = self._ins("s32", f"ld.param.s32 {{d}}, [{self.var_name(u)}];")
      elif u.op in (Ops.DEFINE_LOCAL, Ops.DEFINE_REG):
        assert isinstance(u.dtype, PtrDType)
        nm = f"{'smem' if u.op is Ops.DEFINE_LOCAL else 'acc'}{len(decls)}"
        decls.append(f"\t.{'shared' if u.op is Ops.DEFINE_LOCAL else 'local'} .align 16 .b8 {nm}[{max(1, u.dtype.size * u.dtype.base.itemsize)}];")
        r[u] = self._ins("u64", f"mov.u64 {{d}}, {nm};")
      elif u.op is Ops.CONST: r[u] = self._const(u.arg, u.dtype)
      elif u.op is Ops.VCONST: r[u] = [self._const(v, u.dtype.scalar()) for v in u.arg]
      elif u.op is Ops.SPECIAL:
        ax = "xyz"[int(u.arg[-1])]
        if u.arg[0] == "i":
          c = self._ins("u32", f"mov.u32 {{d}}, %ctaid.{ax};")
          n = self._ins("u32", f"mov.u32 {{d}}, %ntid.{ax};")
          t = self._ins("u32", f"mov.u32 {{d}}, %tid.{ax};")
          r[u] = self._ins("s32", f"mad.lo.s32 {{d}}, {c}, {n}, {t};")
        else: r[u] = self._ins("s32", f"mov.u32 {{d}}, %{'ctaid' if u.arg[0] == 'g' else 'tid'}.{ax};")
      elif u.op is Ops.RANGE:
        nlabel += 1
        head, done = f"$L{nlabel}_loop", f"$L{nlabel}_end"
        i = r[u] = self._ins(_rty(u.dtype), f"mov.{_bits_of(_rty(u.dtype))} {{d}}, 0;")
        go = self._ins("pred", f"setp.lt.{_rty(u.dtype)} {{d}}, {i}, {r[u.src[0]]};")
        self._e(f"@!{go} bra {done};")
        self.lines.append(f"{head}:")
        loops.append((u, head, done))
      elif u.op is Ops.END:
        rng, head, done = loops.pop()
        i, t = r[rng], _rty(rng.dtype)
        self._e(f"add.{t} {i}, {i}, 1;")
        go = self._ins("pred", f"setp.lt.{t} {{d}}, {i}, {r[rng.src[0]]};")
        self._e(f"@{go} bra {head};")
        self.lines.append(f"{done}:")
      elif u.op is Ops.IF:
        nlabel += 1
        ifs.append(lbl := f"$L{nlabel}_endif")
        self._e(f"@!{r[u.src[0]]} bra {lbl};")
      elif u.op is Ops.ENDIF: self.lines.append(f"{ifs.pop()}:")
      elif u.op is Ops.BARRIER: self._e("bar.sync 0;")
      elif u.op is Ops.INDEX:
        buf, idx = u.src[0], u.src[1]
        size = buf.dtype.base.itemsize if isinstance(buf.dtype, PtrDType) else 1
        off = r[idx] if _rty(idx.dtype) == "s64" else self._ins("s64", f"cvt.s64.{_rty(idx.dtype)} {{d}}, {r[idx]};")
        r[u] = (self._ins("s64", f"mad.lo.s64 {{d}}, {off}, {size}, {r[buf]};"), self._space(buf),
                r[u.src[2]] if len(u.src) > 2 else None)
      elif u.op is Ops.CAST and isinstance(u.dtype, PtrDType): r[u] = r[u.src[0]]
      elif u.op is Ops.LOAD:
        addr, space, gate = r[u.src[0]]
        if u.dtype.count > 1:
          isz = u.dtype.scalar().itemsize
          r[u] = [self._ld(space, self._ins("s64", f"add.s64 {{d}}, {addr}, {i*isz};") if i else addr, u.dtype.scalar(), gate)
                  for i in range(u.dtype.count)]
        else: r[u] = self._ld(space, addr, u.dtype, gate)
      elif u.op is Ops.STORE:
        addr, space, gate = r[u.src[0]]
        val, vdt = r[u.src[1]], u.src[1].dtype
        if vdt.count > 1:
          for j, v in enumerate(val):
            self._st(space, self._ins("s64", f"add.s64 {{d}}, {addr}, {j*vdt.scalar().itemsize};") if j else addr, v, vdt.scalar(), gate)
        else: self._st(space, addr, val, vdt, gate)
      elif u.op is Ops.VECTORIZE: r[u] = [r[s] for s in u.src]
      elif u.op is Ops.GEP: r[u] = r[u.src[0]][u.arg[0]] if len(u.arg) == 1 else [r[u.src[0]][i] for i in u.arg]
      elif u.op is Ops.CAST: r[u] = self._cast(r[u.src[0]], u.src[0].dtype, u.dtype)
      elif u.op is Ops.BITCAST: r[u] = self._bitcast(r[u.src[0]], u.src[0].dtype, u.dtype)
      elif u.op in GroupOp.ALU: r[u] = self._alu(u, [r[s] for s in u.src])
      elif u.op is Ops.WMMA:
        ea, eb = u.arg[3]
        srcs, d = [r[s] for s in u.src], [self._reg("f32") for _ in range(u.dtype.count)]
        for line in mma_lines(u.arg[0], srcs[:ea], srcs[ea:ea+eb], srcs[ea+eb:], d,
                              lambda ty, hi, lo: self._ins("b32", f"cvt.rn.{ty}x2.f32 {{d}}, {hi}, {lo};")): self._e(line)
        r[u] = d
      else: raise NotImplementedError(f"PTXRenderer cannot render {u.op} with dtype {u.dtype} (arg={u.arg!r})")
    regs = [f"\t.reg .{t} {n};" for t, n in self.regs]
    src = "\n".join([f"//\n// generated by tinygrad_nv PTXRenderer\n//\n.version {ptx_version(self.arch)}", f".target {self.arch}",
                     ".address_size 64", "", f".visible .entry {name}(", ",\n".join(f"\t{p}" for p in params), f") .maxntid {launch_threads(uops)}, 1, 1", "{",
                     *decls, *regs, *self.lines, "\tret;", "}"]) + "\n"
    if self.record is not None: self.record[src] = uops
    return src
