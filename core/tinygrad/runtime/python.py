"""The PYTHON device, built into the core: its renderer serialises linearized uops, its runtime interprets them exactly.

Execution is lockstep over every launch lane at once (numpy arrays, one element per GPU-style thread): integer ops wrap
at their width and divide like C, floats compute at their declared width (bfloat16 is rounded after every op).
With EMULATE=NV|AMD|METAL the renderer takes that device's abilities so GPU code paths run here. Lockstep would hide two
GPU-only defects, so they are made visible: shared memory and registers start as garbage (NaN, 0xA5 bytes), and a shared
memory access racing with another lane's (no BARRIER between) raises.
"""
from __future__ import annotations
import ast as pyast, math, os, time
from typing import Any
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp, AxisType
from tinygrad.dtype import DType, PtrDType, dtypes, AddrSpace, to_dtype, INVERSE_DTYPES_DICT
from tinygrad.helpers import prod, EMULATE
from tinygrad.renderer import Renderer
from tinygrad.device import Allocator, Compiled, CompilerSet, CompilerPair

# ---- serialisation: one line per uop, `index op dtype (src indices) arg` ----
def _dtype_str(dt: DType) -> str:
  if isinstance(dt, PtrDType): return f"{_dtype_str(dt.base)}*{dt.size}@{dt.addrspace.name}"
  if dt.count > 1: return f"{INVERSE_DTYPES_DICT[dt.scalar().name]}x{dt.count}"
  return INVERSE_DTYPES_DICT[dt.name]

def _parse_dtype(s: str) -> DType:
  if "*" in s:
    base, rest = s.split("*")
    size, space = rest.split("@")
    return _parse_dtype(base).ptr(int(size), AddrSpace[space])
  if "x" in s and s.split("x")[-1].isdigit() and not s.startswith("x"):
    base, cnt = s.rsplit("x", 1)
    return to_dtype(base).vec(int(cnt))
  return to_dtype(s)

def _arg_str(u: UOp) -> str:
  if u.op is Ops.RANGE: return repr((u.arg[0], u.arg[1].name))
  if isinstance(u.arg, float) and not math.isfinite(u.arg): return f"float('{u.arg}')"
  return repr(u.arg)

def serialize(uops: list[UOp]) -> str:
  idx = {u: i for i, u in enumerate(uops)}
  return "\n".join(f"{i} {u.op.name} {_dtype_str(u.dtype)} {tuple(idx[s] for s in u.src)!r} {_arg_str(u)}" for i, u in enumerate(uops))

_NONFINITE = {"float('nan')": math.nan, "float('inf')": math.inf, "float('-inf')": -math.inf}
def _literal(text: str) -> Any:
  # literals only (the program may come from the on-disk cache, which must never run code): no eval
  return _NONFINITE[text] if text in _NONFINITE else pyast.literal_eval(text)

def deserialize(src: str) -> list[tuple[Ops, DType, tuple[int, ...], Any]]:
  out: list[tuple[Ops, DType, tuple[int, ...], Any]] = []
  for line in src.splitlines():
    _, op, dt, rest = line.split(" ", 3)
    # the src tuple ends at the first ") " (it holds only ints)
    cut = rest.index(")") + 1
    srcs, arg = _literal(rest[:cut]), _literal(rest[cut+1:])
    if Ops[op] is Ops.RANGE: arg = (arg[0], AxisType[arg[1]])
    # a program reads only values computed before it (the cache's rows are checked here, before anything runs)
    if not (isinstance(srcs, tuple) and all(type(i) is int and 0 <= i < len(out) for i in srcs)): raise ValueError(f"line {len(out)}: bad sources {srcs!r}")
    out.append((Ops[op], _parse_dtype(dt), srcs, arg))
  return out

class PythonRenderer(Renderer):
  device = "PYTHON"
  has_local = True   # lockstep lanes: global loops become launch indices
  has_shared = True  # DEFINE_LOCAL is one array per block; lockstep needs no BARRIER, but accesses across one are checked
  global_max = (2**31-1, 65535, 65535)
  code_for_op = {op: (lambda *a: "") for op in GroupOp.ALU}
  def __init__(self, **abilities: Any) -> None:
    emu = EMULATE.value
    if emu:
      from tinygrad.runtime.emulate import abilities as emulated  # device abilities table
      abilities = {**emulated(emu), **abilities}
    super().__init__(**abilities)
  def render(self, uops: list[UOp], name: str = "kernel") -> str: return serialize(uops)

# ---- the interpreter ----
def _np():
  import numpy as np
  return np

def _np_dtype(dt: DType):
  np = _np()
  if dt.scalar() == dtypes.bfloat16: return np.float32  # computed in float32, rounded to bfloat16 after each op
  return np.dtype(INVERSE_DTYPES_DICT[dt.scalar().name])

def _round_bf16(x):
  np = _np()
  a = np.asarray(x, dtype=np.float32)
  u = a.view(np.uint32).astype(np.uint64)
  r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint32)
  r = np.where(np.isnan(a), ((u >> 16) & 0x8000).astype(np.uint32) | np.uint32(0x7FC0), r)   # a quiet NaN of a's sign
  return (r << 16).astype(np.uint32).view(np.float32)

def _c_idiv(a, b):
  np = _np()
  bs = np.where(b == 0, 1, b)
  q = np.floor_divide(a, bs)
  q = q + ((np.remainder(a, bs) != 0) & ((a < 0) != (bs < 0)))
  return np.where(b == 0, 0, q).astype(np.result_type(a, b))

def _alu(op: Ops, dt: DType, srcs: list):
  np = _np()
  ndt = _np_dtype(dt)
  a = srcs
  if op is Ops.ADD: r = np.add(a[0], a[1])
  elif op is Ops.SUB: r = np.subtract(a[0], a[1])
  elif op is Ops.MUL: r = np.multiply(a[0], a[1])
  elif op is Ops.FDIV: r = np.true_divide(a[0], a[1])
  elif op is Ops.IDIV: r = _c_idiv(a[0], a[1]) if dtypes.is_int(dt) else np.trunc(np.true_divide(a[0], a[1]))
  elif op is Ops.MOD: r = (a[0] - _c_idiv(a[0], a[1]) * a[1]) if dtypes.is_int(dt) else np.fmod(a[0], a[1])
  elif op is Ops.MAX: r = np.maximum(a[0], a[1])
  elif op is Ops.CMPLT: return np.less(a[0], a[1])
  elif op is Ops.CMPNE: return np.not_equal(a[0], a[1])
  elif op is Ops.CMPEQ: return np.equal(a[0], a[1])
  elif op is Ops.AND: r = np.logical_and(a[0], a[1]) if dt == dtypes.bool else np.bitwise_and(a[0], a[1])
  elif op is Ops.OR: r = np.logical_or(a[0], a[1]) if dt == dtypes.bool else np.bitwise_or(a[0], a[1])
  elif op is Ops.XOR: r = np.logical_xor(a[0], a[1]) if dt == dtypes.bool else np.bitwise_xor(a[0], a[1])
  elif op is Ops.SHL: r = np.left_shift(a[0], np.asarray(a[1]).astype(ndt))
  elif op is Ops.SHR: r = np.right_shift(a[0], np.asarray(a[1]).astype(ndt))
  elif op is Ops.WHERE: r = np.where(a[0], a[1], a[2])
  elif op is Ops.MULACC: r = a[0] * a[1] + a[2]
  elif op is Ops.NEG: r = np.logical_not(a[0]) if dt == dtypes.bool else np.negative(a[0])
  elif op is Ops.EXP2: r = np.exp2(a[0])
  elif op is Ops.LOG2: r = np.log2(a[0])
  elif op is Ops.SIN: r = np.sin(a[0])
  elif op is Ops.SQRT: r = np.sqrt(a[0])
  elif op is Ops.RECIPROCAL: r = np.true_divide(ndt.type(1) if hasattr(ndt, "type") else 1, a[0])
  elif op is Ops.TRUNC: r = np.trunc(a[0])
  elif op is Ops.POW:
    # C's pow: numpy takes an exponent of one value 0.5 as sqrt, which gives NaN at -inf and -0.0 at -0.0 (C: inf and 0.0)
    r = np.where(np.equal(a[1], 0.5) & (np.equal(a[0], 0) | np.isneginf(a[0])), np.abs(a[0]), np.power(a[0], a[1]))
  elif op is Ops.LDEXP: r = np.ldexp(a[0], np.asarray(a[1]).astype(np.int32))
  else: raise NotImplementedError(f"PYTHON device cannot run {op}")
  r = np.asarray(r).astype(ndt, copy=False)
  return _round_bf16(r) if dt.scalar() == dtypes.bfloat16 else r

def _cast(x, src_dt: DType, dt: DType):
  np = _np()
  ndt = _np_dtype(dt)
  x = np.asarray(x)
  if dt.scalar() == dtypes.bool: return x != 0
  if dtypes.is_int(dt) and dtypes.is_float(src_dt):
    # truncate toward zero, saturate, NaN -> 0 (the codegen's numerics pass already guards casts; this keeps the rule here too)
    info = np.iinfo(ndt)
    f = np.nan_to_num(np.trunc(x.astype(np.float64)), nan=0.0, posinf=float(info.max), neginf=float(info.min))
    big = f >= float(info.max)   # float(max) is 2**bits for a 64-bit int: the one value astype cannot take
    return np.where(big, np.array(info.max, ndt), np.maximum(np.where(big, 0.0, f), info.min).astype(ndt))
  r = x.astype(ndt)
  return _round_bf16(r) if dt.scalar() == dtypes.bfloat16 else r

def _bitcast(x, src_dt: DType, dt: DType):
  np = _np()
  x = np.asarray(x)
  if src_dt.scalar() == dtypes.bfloat16: x = (x.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)
  else: x = np.ascontiguousarray(x.astype(_np_dtype(src_dt.scalar())))   # the source's own bits (a float16 is not its value)
  if dt.scalar() == dtypes.bfloat16: return (x.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
  return np.ascontiguousarray(x).view(_np_dtype(dt))

def _poison(np: Any, shape: tuple[int, ...], dt: DType) -> Any:
  """Fresh shared memory or registers: a GPU gives them whatever was there, so a read before a write must not see zeros
  (the identity of a sum): NaN for floats, 0xA5 bytes for ints, True for bools."""
  npdt = _np_dtype(dt)
  if dtypes.is_float(dt.scalar()): return np.full(shape, np.nan, dtype=npdt)
  return np.full(shape, True) if npdt == np.bool_ else np.full(int(np.prod(shape)) * npdt.itemsize, 0xA5, np.uint8).view(npdt).reshape(shape)

def _ptr_size(dt: DType) -> int:
  if not isinstance(dt, PtrDType): raise TypeError(f"expected a pointer dtype, got {dt}")
  return dt.size

class PythonProgram:
  """Runs serialised uops over all launch lanes at once."""
  def __init__(self, name: str, lib: bytes):
    self.name = name
    self.last_span: tuple[float, float] | None = None
    self.uops = deserialize(lib.decode())
    # loop structure: RANGE index -> END index and back
    self.end_of: dict[int, int] = {}
    for i, (op, _, srcs, _) in enumerate(self.uops):
      if op is Ops.END: self.end_of[srcs[0]] = i

  def __call__(self, *bufs: Any, global_size: tuple[int, ...] = (1, 1, 1), local_size: tuple[int, ...] | None = None,
               vals: tuple[int, ...] = (), wait: bool = False) -> float | None:
    np = _np()
    st = time.perf_counter()
    lsize = tuple(local_size) if local_size is not None else (1, 1, 1)
    ngroups, nlocal = prod(global_size), prod(lsize)
    lanes = ngroups * nlocal
    lane = np.arange(lanes)
    group, local = lane // nlocal, lane % nlocal
    uops = self.uops
    values: list[Any] = [None] * len(self.uops)
    counters: dict[int, int] = {}
    self.race: dict[int, tuple[Any, Any]] = {}
    mask_stack: list = []
    nvar = 0
    with np.errstate(all="ignore"):
      pc = 0
      while pc < len(uops):
        op, dt, srcs, arg = uops[pc]
        v = [values[s] for s in srcs]
        if op is Ops.DEFINE_GLOBAL:
          base = dt.base
          raw = np.frombuffer(bufs[arg], dtype=np.uint16 if base.scalar() == dtypes.bfloat16 else _np_dtype(base))
          values[pc] = ("global", raw, base)
        elif op is Ops.DEFINE_VAR:
          values[pc] = np.int32(vals[nvar])
          nvar += 1
        elif op is Ops.DEFINE_REG: values[pc] = ("reg", _poison(np, (lanes, _ptr_size(dt)), dt.base), dt.base)
        elif op is Ops.DEFINE_LOCAL:
          values[pc] = ("local", _poison(np, (ngroups, _ptr_size(dt)), dt.base), dt.base)
          # the lane that last wrote / read each slot since the last BARRIER (-1: none, -2: several lanes read it)
          self.race[id(values[pc][1])] = (np.full((ngroups, _ptr_size(dt)), -1), np.full((ngroups, _ptr_size(dt)), -1))
        elif op is Ops.CONST: values[pc] = np.asarray(arg, dtype=_np_dtype(dt))[()] if not isinstance(arg, tuple) else arg
        elif op is Ops.SPECIAL:
          axis = int(arg[-1])
          gcoord = (group // prod(global_size[:axis])) % global_size[axis]
          lcoord = (local // prod(lsize[:axis])) % lsize[axis]
          values[pc] = (gcoord if arg[0] == "g" else lcoord if arg[0] == "l" else gcoord * lsize[axis] + lcoord).astype(np.int32)
        elif op is Ops.RANGE:
          end = v[0]
          if np.ndim(end) != 0: raise RuntimeError("PYTHON device: loop bounds must be the same on every lane")
          counters[pc] = 0
          if int(end) <= 0:
            pc = self.end_of[pc] + 1
            continue
          values[pc] = np.int32(0)
        elif op is Ops.END:
          r = srcs[0]
          counters[r] += 1
          if counters[r] < int(values[uops[r][2][0]]):
            values[r] = np.int32(counters[r])
            pc = r + 1
            continue
        elif op is Ops.INDEX: values[pc] = (v[0], v[1], v[2] if len(v) > 2 else None)
        elif op is Ops.LOAD: values[pc] = self._load(v[0], lanes, group, lane, dt, mask_stack[-1] if mask_stack else None)
        elif op is Ops.STORE:
          mask = mask_stack[-1] if mask_stack else None
          self._store(v[0], v[1], lanes, group, lane, mask, uops[srcs[1]][1])
        elif op is Ops.IF:
          cond = np.broadcast_to(np.asarray(v[0], dtype=bool), (lanes,))
          mask_stack.append(cond if not mask_stack else cond & mask_stack[-1])
        elif op is Ops.ENDIF: mask_stack.pop()
        elif op is Ops.BARRIER:   # lockstep execution: every lane has finished the previous uops; accesses are ordered again
          for seen in (a for pair in self.race.values() for a in pair): seen.fill(-1)
        elif op is Ops.VECTORIZE: values[pc] = tuple(v)
        elif op is Ops.GEP: values[pc] = v[0][arg[0]] if len(arg) == 1 else tuple(v[0][i] for i in arg)
        elif op is Ops.CAST and isinstance(dt, PtrDType): values[pc] = v[0]   # (a pointer cast: the access's dtype says how to read)
        elif op is Ops.CAST: values[pc] = _cast(v[0], uops[srcs[0]][1], dt)
        elif op is Ops.BITCAST: values[pc] = _bitcast(v[0], uops[srcs[0]][1], dt)
        elif op in GroupOp.ALU:
          if isinstance(v[0], tuple): values[pc] = tuple(_alu(op, dt.scalar(), list(x)) for x in zip(*[s if isinstance(s, tuple) else (s,)*dt.count for s in v]))
          else: values[pc] = _alu(op, dt, v)
        elif op is Ops.WMMA:
          from tinygrad.codegen.tc import wmma_emulate
          ea, eb = arg[3]
          values[pc] = tuple(wmma_emulate(arg, v[:ea], v[ea:ea+eb], v[ea+eb:], lane, nlocal, np))
        elif op is Ops.NOOP: values[pc] = v[0]
        else: raise NotImplementedError(f"PYTHON device cannot run {op}")
        pc += 1
    if not wait: return None
    self.last_span = (st, time.perf_counter())   # PROFILE's span of this run (the optional runtime hook, docs/plugins.md)
    return self.last_span[1] - st

  @staticmethod
  def _addr(ptr, lanes: int, group, lane):
    (kind, arr, base), idx, gate = ptr
    np = _np()
    idx = np.broadcast_to(np.asarray(idx, dtype=np.int64), (lanes,))
    gate = None if gate is None else np.broadcast_to(np.asarray(gate, dtype=bool), (lanes,))
    return kind, arr, base, idx, gate

  def _load(self, ptr, lanes: int, group, lane, dt: DType, mask=None):
    np = _np()
    kind, arr, base, idx, gate = self._addr(ptr, lanes, group, lane)
    safe = idx if gate is None else np.where(gate, idx, 0)
    if kind == "global":
      if arr.size == 0: return np.zeros(lanes, dtype=_np_dtype(base))
      if gate is None and (idx.min(initial=0) < 0 or idx.max(initial=0) >= arr.size):
        raise IndexError(f"PYTHON device: out of bounds load from a buffer of {arr.size} at {int(idx.min())}..{int(idx.max())}")
      out = arr[safe]
      # a 16-bit float's bits loaded as uint16 (codegen's keep_bits) are read as they are
      if base.scalar() == dtypes.bfloat16 and dt.scalar() == dtypes.bfloat16: out = (out.astype(np.uint32) << 16).view(np.float32)
      elif base.scalar() != dt.scalar() and out.dtype.itemsize == _np_dtype(dt).itemsize: out = out.view(_np_dtype(dt))
    elif kind == "reg": out = arr[lane, safe]
    else:
      self._check_race(arr, group, lane, idx, gate if mask is None else mask if gate is None else gate & mask, None)
      out = arr[group, safe]
    return out if gate is None else np.where(gate, out, out.dtype.type(0))

  def _store(self, ptr, val, lanes: int, group, lane, mask, dt: DType) -> None:
    np = _np()
    kind, arr, base, idx, gate = self._addr(ptr, lanes, group, lane)
    if mask is not None: gate = mask if gate is None else gate & mask
    val = np.broadcast_to(np.asarray(val), (lanes,))
    if kind == "global" and base.scalar() == dtypes.bfloat16 and dt.scalar() == dtypes.bfloat16:
      val = (_round_bf16(val).view(np.uint32) >> 16).astype(np.uint16)
    elif kind == "global" and base.scalar() != dt.scalar() and val.dtype.itemsize == arr.dtype.itemsize: val = val.view(arr.dtype)
    sel = slice(None) if gate is None else gate
    if kind == "global":
      if gate is None and lanes and (idx.min() < 0 or idx.max() >= arr.size):
        raise IndexError(f"PYTHON device: out of bounds store to a buffer of {arr.size} at {int(idx.min())}..{int(idx.max())}")
      arr[idx[sel]] = val[sel]
    elif kind == "reg": arr[lane[sel], idx[sel]] = val[sel]
    else:
      self._check_race(arr, group, lane, idx, gate, val)
      arr[group[sel], idx[sel]] = val[sel]

  def _check_race(self, arr, group, lane, idx, gate, val) -> None:
    """Shared memory: a GPU orders one lane's access after another lane's only across a BARRIER. A read of a slot another
    lane wrote, or a write of a slot another lane read or wrote, since the last BARRIER is a race there, whatever
    lockstep execution here happens to give: raise instead of hiding a codegen defect."""
    np = _np()
    writer, reader = self.race[id(arr)]
    sel = slice(None) if gate is None else gate
    g, i, ln = group[sel], idx[sel], lane[sel]
    if len(i) and (i.min() < 0 or i.max() >= arr.shape[1]):
      raise IndexError(f"PYTHON device: {self.name}: shared memory access out of bounds of {arr.shape[1]} at {int(i.min())}..{int(i.max())}")
    w = writer[g, i]
    if val is None:
      if ((w >= 0) & (w != ln)).any():
        raise RuntimeError(f"PYTHON device: {self.name}: a lane reads shared memory another lane wrote with no BARRIER between (a race on a GPU)")
      r = reader[g, i]
      key = g * arr.shape[1] + i
      _, first, counts = np.unique(key, return_index=True, return_counts=True)
      many = (r == -2) | ((r >= 0) & (r != ln))
      reader[g, i] = np.where(many, -2, ln)
      dup = first[counts > 1]
      reader[g[dup], i[dup]] = -2
      return
    r = reader[g, i]
    v = np.broadcast_to(np.asarray(val), group.shape)[sel]
    if ((w >= 0) & (w != ln)).any() or ((r == -2) | ((r >= 0) & (r != ln))).any():
      raise RuntimeError(f"PYTHON device: {self.name}: a lane writes shared memory another lane used with no BARRIER between (a race on a GPU)")
    key = g * arr.shape[1] + i
    order = np.argsort(key, kind="stable")
    same = key[order][1:] == key[order][:-1]
    a, b = v[order][1:][same], v[order][:-1][same]
    if ((a != b) & ~((a != a) & (b != b))).any():   # (NaN == NaN here: the same bits)
      raise RuntimeError(f"PYTHON device: {self.name}: lanes write different values to one shared memory slot at once (a race on a GPU)")
    writer[g, i] = ln

class PythonAllocator(Allocator):
  """Host memory as bytearrays (memoryviews are what the interpreter reads)."""
  def _alloc(self, size: int, options: Any) -> memoryview:
    try: return memoryview(bytearray(size))
    except MemoryError:
      try: free = f"{os.sysconf('SC_AVPHYS_PAGES') * os.sysconf('SC_PAGE_SIZE') / 2**30:.1f} GiB of memory free"
      except (ValueError, OSError, AttributeError): free = "an unknown amount of memory free"
      raise MemoryError(f"out of memory on PYTHON: requested {size} bytes ({size / 2**30:.1f} GiB), the host has {free}; "
                        f"use smaller tensors or another device") from None
  def copyin(self, dest: memoryview, src: memoryview) -> None: dest[:] = src
  def copyout(self, dest: memoryview, src: memoryview) -> None: dest[:] = src
  def _as_buffer(self, src: memoryview) -> memoryview: return src
  def _offset(self, opaque: memoryview, size: int, offset: int) -> memoryview: return opaque[offset:offset + size]

class PythonDevice(Compiled):
  def __init__(self, device: str):
    super().__init__(device, PythonAllocator(), CompilerSet([CompilerPair(PythonRenderer, None, name="PYTHON")]), PythonProgram)
