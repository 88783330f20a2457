"""The program cache: a kernel's rendered program, on disk, so a new process skips codegen for kernels it has seen.

Codegen (optimizer, rewrites, linearize, render) is Python and costs 0.1-1 s a kernel; the compile cache (Compiler.
compile_cached) already holds the machine code for a source. This cache maps a kernel AST to that source and the
launch facts of its ProgramSpec, so a warm process goes AST -> source -> machine code with two lookups.

The key is everything the program depends on: the AST (every node's op, dtype, arg, tag and sources, encoded exactly:
a kind of value the encoder does not know makes the kernel uncacheable, never a guess), the renderer (class and
abilities), the device and compiler names, every flag's value (ContextVar, minus those that only steer output), and
a hash of the code that generates programs (the core package and the packages of the renderer's classes), so an edited or upgraded
tinygrad never reuses a stale program. Rows carry that code version and the device (diskcache's version and device
columns): two installs, or two devices, sharing one cache keep their programs side by side, and old ones go by the cache's
LRU eviction. Values are JSON (diskcache): source text, sizes (ints or small expressions of the kernel's variables),
buffer indices, estimates. Anything malformed on read is a miss; so is a program that fails to compile or load (the
runner renders it again, engine/realize.py). CACHELEVEL=2 (the default)
uses it; CACHELEVEL=1 keeps only the compile cache, 0 neither. A traced (VIZ) or DEBUG>=5 run always renders.
The same exact encoding stores whole graphs (encode_graph/decode_graph: the scheduler's kernels, engine/schedule.py);
decoding builds only UOps, and enums, dtypes and frozen dataclasses of tinygrad's already imported modules, by name.
"""
from __future__ import annotations
import enum, functools, hashlib, json, json.encoder, os, sys, dataclasses
from typing import Any, Callable
from tinygrad.uop import Ops
from tinygrad.uop.ops import UOp
from tinygrad.dtype import DType, dtypes
from tinygrad.helpers import ContextVar, CACHELEVEL, DEBUG
from tinygrad.renderer import ProgramSpec, Estimates
# (the code hashes live with the disk cache, which the compile cache of device.py keys by them too)
from tinygrad.diskcache import Uncacheable, code_hash as _code_hash, class_modules as _class_modules, package_hash as _package_hash
from tinygrad.diskcache import compiler_version  # noqa: F401 (re-exported)

VERSION = 1
# flags that change what is printed, traced or timed, or where things run, never the program of a kernel
# (by each ContextVar's key, the name of its environment variable; WINO, FUSE_OPTIM and TRACK_MATCH_STATS are accepted and
# change nothing)
_OUTPUT_ONLY = frozenset({"DEBUG", "CACHELEVEL", "VIZ", "VIZ_PORT", "VIZ_MAX_STEPS", "PROFILE", "PROFILE_PATH", "PARALLEL_COMPILE", "PARALLEL_CODEGEN",
                          "BEAM_THREADS", "CAPTURING", "JIT", "DEV", "DISABLE_HTTP_CACHE", "TINYGRAD_DIST_TIMEOUT", "RING", "RING_BYTES", "TRAINING",
                          "CACHEDB_MAX_BYTES", "CACHEDB_MAX_DAYS", "WINO", "FUSE_OPTIM", "TRACK_MATCH_STATS"})


def _enc(x: Any) -> Any:
  # tagged so values that compare equal in Python stay apart (1, 1.0, True; 0.0, -0.0; a tuple and a list)
  if x is None or isinstance(x, str): return x
  if isinstance(x, bool): return ["b", x]
  if isinstance(x, enum.Enum): return ["e", f"{type(x).__module__}.{type(x).__qualname__}", x.name]   # (before int: Ops is an IntEnum)
  if isinstance(x, int): return ["i", str(x)]
  if isinstance(x, float): return ["f", x.hex()]
  if isinstance(x, tuple): return ["t", [_enc(v) for v in x]]
  if isinstance(x, list): return ["l", [_enc(v) for v in x]]
  if isinstance(x, (frozenset, set)): return ["s", sorted(json.dumps(_enc(v)) for v in x)]
  if isinstance(x, DType): return ["d", type(x).__name__, [_enc(getattr(x, f.name)) for f in dataclasses.fields(x)]]
  if dataclasses.is_dataclass(x) and not isinstance(x, type) and getattr(type(x), "__dataclass_params__").frozen:
    return ["c", f"{type(x).__module__}.{type(x).__qualname__}", [[f.name, _enc(getattr(x, f.name))] for f in dataclasses.fields(x)]]
  if isinstance(x, UOp): return ["u", _enc_expr(x, [0])]
  raise Uncacheable(f"{type(x).__name__} {x!r:.60}")

# an expression of variables in an arg (a symbolic shape's size, a shrink's bound: start_pos+1), written out as a tree: only
# the ops of size expressions (never a buffer's identity), and at most _EXPR_NODES of them (a tree repeats shared nodes)
_EXPR_NODES = 256
def _enc_expr(u: UOp, seen: list[int]) -> list:
  seen[0] += 1
  if seen[0] > _EXPR_NODES or u.op not in _EXPR_OPS: raise Uncacheable(f"expression with {u.op} (or over {_EXPR_NODES} nodes) in an arg")
  return [u.op.name, _enc(u.dtype), _enc(u.arg), _enc(u.tag), [_enc_expr(s, seen) for s in u.src]]
def _dec_expr(x: Any, seen: list[int]) -> UOp:
  seen[0] += 1
  if not (seen[0] <= _EXPR_NODES and isinstance(x, list) and len(x) == 5 and x[0] in Ops.__members__ and Ops[x[0]] in _EXPR_OPS and
          isinstance(dtype := _dec_val(x[1]), DType) and isinstance(x[4], list)): raise ValueError("not an expression")
  return UOp(Ops[x[0]], dtype, tuple(_dec_expr(s, seen) for s in x[4]), _dec_val(x[2]), _dec_val(x[3]))

def _text(x: Any) -> str:
  # json.dumps(_enc(x), separators=(",", ":")) written directly: the json module costs ~3 us a call on a small value (a
  # new C encoder each time), and a warm process encodes every node of its graphs (tests/core/test_progcache.py checks
  # the two agree)
  if x is None: return "null"
  if isinstance(x, str): return _quote(x)
  if isinstance(x, bool): return '["b",true]' if x else '["b",false]'
  if isinstance(x, enum.Enum):
    if (e := _enum_text.get((type(x), x))) is None: e = _enum_text[(type(x), x)] = f'["e",{_quote(f"{type(x).__module__}.{type(x).__qualname__}")},{_quote(x.name)}]'
    return e
  if isinstance(x, int): return '["i","' + str(x) + '"]'
  if isinstance(x, float): return f'["f","{x.hex()}"]'
  if isinstance(x, tuple): return '["t",[' + ",".join([_text(v) for v in x]) + "]]"
  if isinstance(x, list): return '["l",[' + ",".join([_text(v) for v in x]) + "]]"
  if isinstance(x, DType): return f'["d",{_quote(type(x).__name__)},[' + ",".join([_text(getattr(x, f.name)) for f in dataclasses.fields(x)]) + "]]"
  return json.dumps(_enc(x), separators=(",", ":"))   # (sets, dataclasses: rare)
_quote = json.encoder.encode_basestring_ascii   # (json.dumps's own quoting of a str, in C)
_enum_text: dict[tuple[type, enum.Enum], str] = {}   # (keyed with the class: two IntEnums' equal members encode apart)

_dtype_json: dict[int, tuple[DType, str]] = {}   # id -> (dtype, its JSON): dtypes are interned, few, and on every node
# ints and (nested) tuples of ints -> their JSON: a graph's shapes and axes repeat on many nodes (equal keys of exactly
# these types encode alike: 1 and True, or an IntEnum and its value, never share an entry)
_int_json: dict[Any, str] = {}
def _ints_only(x: Any) -> bool:
  for e in x:
    if type(e) is not int and (type(e) is not tuple or not _ints_only(e)): return False
  return True
def _json(x: Any) -> str:
  if x is None: return "null"
  if type(x) is int or (type(x) is tuple and _ints_only(x)):
    if (hit := _int_json.get(x)) is None:
      if len(_int_json) >= 4096: _int_json.clear()
      hit = _int_json[x] = _text(x)
    return hit
  if isinstance(x, DType):
    if (hit2 := _dtype_json.get(id(x))) is None or hit2[0] is not x: hit2 = _dtype_json[id(x)] = (x, _text(x))
    return hit2[1]
  return _text(x)

_PLAIN_TAGS = frozenset({"b", "i", "f", "t"})
def _dec_val(x: Any, plain: bool = False) -> Any:
  # the inverse of _enc: plain values, and the enums, dtypes and frozen dataclasses of tinygrad's own modules, found by
  # name among the modules already imported (nothing is imported or evaluated); ValueError for anything else. plain: only
  # the kinds a size expression's args hold (None, str, bool, int, float and tuples of them)
  if x is None or isinstance(x, str): return x
  if not (isinstance(x, list) and len(x) in ((2,) if plain else (2, 3)) and isinstance(x[0], str)): raise ValueError("not an encoded value")
  tag, v = x[0], x[1]
  if plain and tag not in _PLAIN_TAGS: raise ValueError("not a size argument")
  if tag == "b" and isinstance(v, bool): return v
  if tag == "i" and isinstance(v, str): return int(v)
  if tag == "f" and isinstance(v, str): return float.fromhex(v)
  if tag in ("t", "l") and isinstance(v, list): return (tuple if tag == "t" else list)(_dec_val(e, plain) for e in v)
  if tag == "s" and isinstance(v, list) and all(isinstance(e, str) for e in v): return frozenset(_dec_val(json.loads(e)) for e in v)
  if tag == "u": return _dec_expr(v, [0])
  if tag == "d" and len(x) == 3 and isinstance(x[2], list):
    import tinygrad.dtype as dt
    cls = getattr(dt, v, None) if isinstance(v, str) and v.isidentifier() else None
    if not (isinstance(cls, type) and issubclass(cls, DType) and len(x[2]) == len(dataclasses.fields(cls))): raise ValueError(f"not a dtype class: {v!r}")
    return dt._intern(cls, *(_dec_val(e) for e in x[2]))
  if tag in ("e", "c") and len(x) == 3 and isinstance(v, str):
    mod, _, qual = v.rpartition(".")
    cls = sys.modules.get(mod) if mod.split(".")[0] == "tinygrad" or mod.startswith("tinygrad_") else None
    for part in qual.split(".") if cls is not None else ():
      cls = getattr(cls, part, None) if part.isidentifier() else None
    if tag == "e" and isinstance(cls, type) and issubclass(cls, enum.Enum) and isinstance(x[2], str) and x[2] in cls.__members__: return cls[x[2]]
    if tag == "c" and isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen and isinstance(x[2], list):  # type: ignore[attr-defined]
      fs = {f.name for f in dataclasses.fields(cls) if f.init}
      if all(isinstance(e, list) and len(e) == 2 and e[0] in fs for e in x[2]) and len(x[2]) == len(dataclasses.fields(cls)):
        return cls(**{e[0]: _dec_val(e[1]) for e in x[2]})
  raise ValueError(f"not an encoded value: {tag!r}")

# nodes no graph on disk may hold: a buffer's identity in this process (UNIQUE), and nodes built through the multi-device
# lowering (a rebuilt one would be lowered again)
_NOT_STORED = frozenset({Ops.UNIQUE, Ops.MULTI})

def encode_graph(roots: list[UOp]) -> tuple[list[str], list[list[int]], dict[UOp, int]]:
  """`roots`' nodes exactly, as plain data: the distinct node fields (_fields' JSON texts, which the program keys' digests
  share) and per node, sources first, [its fields' index, *its sources' node indices]; and node -> index. Raises
  Uncacheable for an arg the encoder does not know and for nodes that must not be stored (_NOT_STORED, a DEVICE of several
  devices)."""
  vals: dict[str, int] = {}
  pos: dict[UOp, int] = {}
  nodes: list[list[int]] = []
  for r in roots:
    for u in r.toposort(gate=lambda x: x not in pos):
      if u in pos: continue
      if u.op in _NOT_STORED or (u.op is Ops.DEVICE and not isinstance(u.arg, str)): raise Uncacheable(f"a {u.op} node")
      pos[u] = len(nodes)
      nodes.append([vals.setdefault(_fields(u).decode(), len(vals)), *[pos[s] for s in u.src]])
  return list(vals), nodes, pos

def decode_graph(vals: Any, nodes: Any) -> list[UOp]:
  """encode_graph's nodes built again (hash-consing gives back the very nodes where they are alive); ValueError for
  anything malformed, and for fields that do not encode back to their text (the decoder must give what was stored)."""
  if not (isinstance(vals, list) and isinstance(nodes, list) and all(isinstance(t, str) for t in vals)): raise ValueError("not a graph")
  fields = []
  for t in vals:
    # '["OP",dtype,arg,tag]' (_fields): each value decoded by its text, which repeats across nodes (a few dtypes, shapes)
    q = t.find('",', 2)
    if not (t.startswith('["') and q > 2 and (name := t[2:q]) in Ops.__members__): raise ValueError("not a node's fields")
    dtype, e1 = _dec_at(t, q + 2)
    arg, e2 = _dec_at(t, e1 + 1) if t[e1:e1 + 1] == "," else _bad()
    tag, e3 = _dec_at(t, e2 + 1) if t[e2:e2 + 1] == "," else _bad()
    if t[e3:] != "]": raise ValueError("not a node's fields")
    op = Ops[name]
    if op in _NOT_STORED or not isinstance(dtype, DType) or (op is Ops.DEVICE and not isinstance(arg, str)): raise ValueError(f"not a stored node: {op}")
    fields.append((op, dtype, arg, tag))
  built: list[UOp] = []
  first = [-1] * len(fields)   # per fields text, the first node built from it
  for n in nodes:
    # (min/max: every index an int in range, checked in C; a node costs ~2 us to build, the checks must not cost more)
    if not (type(n) is list and n and min(n) >= 0 and n[0] < len(fields) and (len(n) == 1 or max(n[1:]) < len(built))): raise ValueError("not a graph node")
    op, dtype, arg, tag = fields[n[0]]
    if first[n[0]] < 0: first[n[0]] = len(built)
    built.append(UOp(op, dtype, tuple([built[i] for i in n[1:]]), arg, tag))
  # exact: each text is what the encoder writes for what was built from it (_fields is kept on the node: the program keys
  # of these kernels, asked for next, read it again)
  for t, i in zip(vals, first):
    if i >= 0 and _fields(built[i]) != t.encode(): raise ValueError(f"fields {t[:60]} do not decode exactly")
  return built

_scan = json.JSONDecoder().raw_decode
_MISS = object()
_decoded: dict[str, Any] = {}   # an encoded value's text -> the value, where it is hashable (immutable: nodes may share it)
def _dec_at(t: str, i: int) -> tuple[Any, int]:
  # the encoded value whose text starts at t[i], and where its text ends
  obj, end = _scan(t, i)
  if (v := _decoded.get(text := t[i:end], _MISS)) is _MISS:
    v = _dec_val(obj)
    try: hash(v)
    except TypeError: return v, end
    if len(_decoded) >= 8192: _decoded.clear()
    _decoded[text] = v
  return v, end
def _bad() -> Any: raise ValueError("not a node's fields")

def _fields(u: UOp) -> bytes:
  # a node's own fields as a JSON array, once per node: a schedule's kernels share most of their nodes (GPT-2's 34: 1494,
  # 865 distinct)
  if (e := u.__dict__.get("_pc_fields")) is None: e = u.__dict__["_pc_fields"] = f'["{u.op.name}",{_json(u.dtype)},{_json(u.arg)},{_json(u.tag)}]'.encode()
  return e

def ast_digest(ast: UOp) -> str:
  """The sha256 of the kernel's exact encoding (raises Uncacheable for an arg the encoder does not know): per node, its
  fields (a JSON array) and the positions of its sources. Kept on the node (a function of the node alone): the schedule
  cache stores its kernels' digests with them, and a warm process's program lookups read them back (set_digests)."""
  if (d := ast.__dict__.get("_pc_digest")) is not None: return d
  pos: dict[UOp, int] = {}
  h = hashlib.sha256()
  for u in ast.toposort():
    pos[u] = len(pos)
    h.update(_fields(u) + repr([pos[s] for s in u.src]).encode() + b"\n")
  d = ast.__dict__["_pc_digest"] = h.hexdigest()
  return d

def set_digests(pairs: list[tuple[UOp, Any]]) -> None:
  """Give each kernel the digest a cache row stored for it (the row that holds the graphs holds their digests: both are
  read back or neither). ValueError, and none set, for anything but a sha256's hex text or one that differs from the
  digest a kernel already has."""
  for ast, d in pairs:
    if not (isinstance(d, str) and len(d) == 64 and all(c in "0123456789abcdef" for c in d)) or ast.__dict__.get("_pc_digest", d) != d:
      raise ValueError("not the kernel's digest")
  for ast, d in pairs: ast.__dict__["_pc_digest"] = d

def code_version(ren: Any) -> str:
  """The hash of the code that turns a kernel into a program for renderer `ren` (the core and the packages of the
  renderer's class and of every class it derives from): every cached result of codegen (programs, BEAM's actions) is
  keyed by it. Raises Uncacheable without a source folder."""
  return _code_hash("tinygrad", *_class_modules(type(ren)))

_flag_memo: dict[tuple, str] = {}
def _flags() -> str:
  # every flag's value, encoded: asked for each kernel, so kept per set of values (type too: 1 and True encode apart)
  vals = tuple((k, type(v.value), v.value) for k, v in ContextVar._cache.items() if k not in _OUTPUT_ONLY)
  try: ret = _flag_memo.get(vals)
  except TypeError: ret, vals = None, ()   # an unhashable value: encoded every time
  if ret is None:
    ret = json.dumps(sorted((k, json.dumps(_enc(v.value))) for k, v in ContextVar._cache.items() if k not in _OUTPUT_ONLY))
    if vals: _flag_memo[vals] = ret
  return ret

def program_key(ast: UOp, dev: Any) -> tuple | None:
  """The cache key of kernel `ast` on opened device `dev`, or None when it must not be cached (off, traced, unknown arg)."""
  from tinygrad.uop import upat as _upat
  ren = dev.renderer
  if CACHELEVEL.value < 2 or DEBUG >= 5 or _upat.TRACER is not None or not ren.cache_programs: return None
  try:
    return ("program", VERSION, code_version(ren), dev.device, dev.compiler_name, f"{type(ren).__module__}.{type(ren).__qualname__}",
            repr(ren.ability_key()), _flags(), ast_digest(ast))
  except Uncacheable as e:
    if DEBUG >= 3: print(f"program cache: kernel not cached ({e})")
    return None

def decision_key(kind: str, graph: UOp) -> tuple | None:
  """The cache key of a decision of `kind` that is a function of `graph` alone, given the code and the flags (the
  scheduler's arange collapse), or None when it must not be cached."""
  from tinygrad.uop import upat as _upat
  if CACHELEVEL.value < 2 or DEBUG >= 5 or _upat.TRACER is not None: return None
  try: return (kind, VERSION, _code_hash("tinygrad"), _flags(), ast_digest(graph))
  except Uncacheable: return None

# ---- sizes and estimates: ints, or small expressions of the kernel's variables ----
_EXPR_OPS = frozenset({Ops.CONST, Ops.DEFINE_VAR, Ops.ADD, Ops.SUB, Ops.MUL, Ops.IDIV, Ops.MOD, Ops.MAX, Ops.NEG, Ops.CMPLT, Ops.CMPNE,
                       Ops.WHERE, Ops.CAST})
def _enc_size(x: int | UOp) -> Any:
  if isinstance(x, int) and not isinstance(x, bool): return x
  if not isinstance(x, UOp): raise Uncacheable(f"size {x!r:.60}")
  pos: dict[UOp, int] = {}
  nodes: list[list[Any]] = []
  for u in x.toposort():
    if u.op not in _EXPR_OPS or u.dtype.count != 1 or u.dtype.name not in _SCALARS: raise Uncacheable(f"size expression with {u.op} {u.dtype}")
    pos[u] = len(nodes)
    nodes.append([u.op.name, u.dtype.name, _enc(u.arg), [pos[s] for s in u.src]])
  return {"expr": nodes}

_SCALARS = {d.name: d for d in (dtypes.index, dtypes.bool, dtypes.int8, dtypes.int16, dtypes.int32, dtypes.int64, dtypes.uint8, dtypes.uint16,
                                dtypes.uint32, dtypes.uint64, dtypes.float32, dtypes.float64)}

def _dec_size(x: Any) -> int | UOp:
  if isinstance(x, int) and not isinstance(x, bool): return x
  if not (isinstance(x, dict) and isinstance(nodes := x.get("expr"), list) and nodes): raise ValueError("not a size")
  built: list[UOp] = []
  for n in nodes:
    if not (isinstance(n, list) and len(n) == 4 and n[0] in Ops.__members__ and Ops[n[0]] in _EXPR_OPS and n[1] in _SCALARS and
            isinstance(n[3], list) and all(isinstance(i, int) and 0 <= i < len(built) for i in n[3])): raise ValueError("not a size node")
    built.append(UOp(Ops[n[0]], _SCALARS[n[1]], tuple(built[i] for i in n[3]), _dec_val(n[2], plain=True)))
  return built[-1]

def _ints(x: Any) -> list[int]:
  if not (isinstance(x, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in x)): raise ValueError("not a list of ints")
  return x

def encode(p: ProgramSpec) -> dict[str, Any]:
  """The JSON form of a rendered (not compiled) program: what a warm process needs to compile, load and launch it."""
  return {"name": p.name, "src": p.src, "device": p.device, "global_size": [_enc_size(s) for s in p.global_size],
          "local_size": None if p.local_size is None else [_enc_size(s) for s in p.local_size], "vars": [_enc_size(v) for v in p.vars],
          "globals": p.globals, "outs": p.outs, "ins": p.ins, "estimates": [_enc_size(p.estimates.ops), _enc_size(p.estimates.lds), _enc_size(p.estimates.mem)],
          "thread_work": p.thread_work}

class CachedProgramSpec(ProgramSpec):
  """A ProgramSpec from the cache: `uops` (not stored) are rebuilt by running codegen again, on first read only."""
  relinearize: Callable[[], list[UOp] | None] | None = None
  @property   # type: ignore[override]
  def uops(self) -> list[UOp] | None:
    if self.__dict__.get("_uops") is None and self.relinearize is not None: self.__dict__["_uops"], self.relinearize = self.relinearize(), None
    return self.__dict__.get("_uops")
  @uops.setter
  def uops(self, v: list[UOp] | None) -> None: self.__dict__["_uops"] = v

def decode(v: Any, ast: UOp, relinearize: Callable[[], list[UOp] | None] | None = None) -> ProgramSpec:
  """A ProgramSpec from encode's JSON for kernel `ast`; ValueError for anything malformed or not matching the kernel."""
  if not isinstance(v, dict) or not all(isinstance(v.get(k), str) for k in ("name", "src", "device")): raise ValueError("not a program")
  gl = [_dec_size(s) for s in v["global_size"]]
  lc = None if v["local_size"] is None else [_dec_size(s) for s in v["local_size"]]
  dvars = [d for d in map(_dec_size, v["vars"]) if isinstance(d, UOp) and d.op is Ops.DEFINE_VAR]
  if len(gl) != 3 or (lc is not None and len(lc) != 3) or len(dvars) != len(v["vars"]):
    raise ValueError("bad launch sizes or variables")
  # the kernel's own buffers and variables: a row that disagrees is not this kernel's program
  topo = ast.toposort()
  args = sorted(u.arg for u in topo if u.op is Ops.DEFINE_GLOBAL)
  glob, outs, ins = _ints(v["globals"]), _ints(v["outs"]), _ints(v["ins"])
  if not set(glob) <= set(args) or not set(outs) | set(ins) <= set(glob): raise ValueError("buffers differ from the kernel's")
  if not set(dvars) <= {u for u in topo if u.op is Ops.DEFINE_VAR}: raise ValueError("variables differ from the kernel's")
  est = v["estimates"]
  if not (isinstance(est, list) and len(est) == 3): raise ValueError("bad estimates")
  if not (isinstance(tw := v.get("thread_work"), int) and not isinstance(tw, bool) and tw >= 0): raise ValueError("bad thread_work")
  p = CachedProgramSpec(v["name"], v["src"], v["device"], ast, None, None, gl, lc, dvars, glob, outs, ins, Estimates(*(_dec_size(e) for e in est)), tw)
  p.relinearize = relinearize
  return p

def _row(key: tuple) -> dict[str, str]:
  # the code version and the device (device, compiler) a row belongs to: several of each coexist in one cache
  return {"version": key[2], "device": f"{key[3]}:{key[4]}"}

def load(key: tuple, ast: UOp, relinearize: Callable[[], list[UOp] | None] | None = None) -> ProgramSpec | None:
  """The cached program of `key`, or None (a miss, or a row that does not decode); `relinearize` rebuilds its uops."""
  from tinygrad.diskcache import diskcache_get
  try: return decode(diskcache_get("program", key, **_row(key)), ast, relinearize)
  except (ValueError, TypeError, KeyError): return None

def store(key: tuple, p: ProgramSpec) -> None:
  from tinygrad.diskcache import diskcache_put
  try: diskcache_put("program", key, encode(p), **_row(key))
  except Uncacheable as e:
    if DEBUG >= 3: print(f"program cache: {p.name} not stored ({e})")
