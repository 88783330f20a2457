"""The IR: one Ops enum for every level, the hash-consed UOp, and the rewrite engine."""
from enum import auto, IntEnum

class FastEnum(IntEnum):
  def __str__(self) -> str: return f"Ops.{self.name}"
  @staticmethod
  def _generate_next_value_(_, __, ___, last_values): return 1 + max([0, *last_values])

class Ops(FastEnum):
  # ---- tensor level ----
  BUFFER = auto(); UNIQUE = auto(); DEVICE = auto()          # a device buffer (src: UNIQUE, DEVICE), arg = size
  COPY = auto()                                              # copy a tensor to another device (src: x, DEVICE)
  CONTIGUOUS = auto(); DETACH = auto(); ASSIGN = auto()      # realize boundary / stop gradient / write into a buffer
  RESHAPE = auto(); PERMUTE = auto(); EXPAND = auto(); PAD = auto(); SHRINK = auto(); FLIP = auto()  # movement, arg = new shape / order / ...
  REDUCE_AXIS = auto()                                       # arg = (Ops.ADD|MUL|MAX, axes)
  KERNEL = auto()                                            # a scheduled kernel
  # ---- kernel level ----
  SINK = auto()                                              # groups roots
  DEFINE_GLOBAL = auto(); DEFINE_LOCAL = auto(); DEFINE_REG = auto(); DEFINE_VAR = auto()
  SPECIAL = auto()                                           # a GPU launch index, arg = name ("gidx0", "lidx1")
  RANGE = auto(); END = auto()                               # a loop index (src: bound), arg = (axis id, AxisType); END closes it
  REDUCE = auto()                                            # src: (value, *ranges), arg = Ops.ADD|MUL|MAX
  INDEX = auto(); LOAD = auto(); STORE = auto()              # INDEX(buf, idx[, gate]) -> ptr; LOAD(ptr); STORE(ptr, val)
  BARRIER = auto(); IF = auto(); ENDIF = auto()
  VECTORIZE = auto(); GEP = auto(); WMMA = auto()            # build a vector / take lanes / tensor-core op
  CONST = auto(); VCONST = auto()
  CAST = auto(); BITCAST = auto()
  NOOP = auto(); CUSTOM = auto()
  # ---- ALU: unary ----
  EXP2 = auto(); LOG2 = auto(); SIN = auto(); SQRT = auto(); RECIPROCAL = auto(); NEG = auto(); TRUNC = auto()
  # ---- ALU: binary ----
  ADD = auto(); MUL = auto(); SUB = auto(); IDIV = auto(); FDIV = auto(); MOD = auto(); POW = auto()
  MAX = auto(); CMPLT = auto(); CMPNE = auto(); CMPEQ = auto()
  AND = auto(); OR = auto(); XOR = auto(); SHL = auto(); SHR = auto()
  # ---- ALU: ternary ----
  WHERE = auto(); MULACC = auto()
  # ---- program level ----
  PROGRAM = auto(); LINEAR = auto(); SOURCE = auto(); BINARY = auto()
  # ---- tensor level, added later: last, so every other op keeps its value (the kernel corpora pickled in plugins/*/tests/data
  # store ops by value) ----
  BIND = auto()                                              # a DEFINE_VAR with its value (src: var, CONST): a size in a tensor shape
  MULTI = auto()                                             # a multi-device tensor: one graph per device (src), arg = sharded axis or None
  AFTER = auto()                                             # src[0]'s buffer once src[1:] ran: a custom kernel's output / a hand-written kernel's ordering
  CALL = auto()                                              # one step of a LINEAR schedule (Tensor.linear_with_vars): src = (SINK|COPY, *buffers)
  LDEXP = auto()                                             # ALU, binary: x * 2**n (x float, n int32 of x's lane count), rounded once
  PREFETCH = auto()                                          # a hint: bring the line of src[0] (an INDEX) into the cache; void, no value

class GroupOp:
  Unary = {Ops.EXP2, Ops.LOG2, Ops.SIN, Ops.SQRT, Ops.RECIPROCAL, Ops.NEG, Ops.TRUNC}
  Binary = {Ops.ADD, Ops.MUL, Ops.SUB, Ops.IDIV, Ops.FDIV, Ops.MOD, Ops.POW, Ops.MAX, Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ,
            Ops.AND, Ops.OR, Ops.XOR, Ops.SHL, Ops.SHR, Ops.LDEXP}
  Ternary = {Ops.WHERE, Ops.MULACC}
  ALU = Unary | Binary | Ternary
  Movement = {Ops.RESHAPE, Ops.PERMUTE, Ops.EXPAND, Ops.PAD, Ops.SHRINK, Ops.FLIP}
  Commutative = {Ops.ADD, Ops.MUL, Ops.MAX, Ops.CMPNE, Ops.CMPEQ, Ops.AND, Ops.OR, Ops.XOR}
  Comparison = {Ops.CMPLT, Ops.CMPNE, Ops.CMPEQ}
  Associative = {Ops.ADD, Ops.MUL, Ops.AND, Ops.OR, Ops.MAX}
  Idempotent = {Ops.OR, Ops.AND, Ops.MAX}
  Defines = {Ops.DEFINE_GLOBAL, Ops.DEFINE_LOCAL, Ops.DEFINE_REG}
  Reduce = {Ops.ADD, Ops.MUL, Ops.MAX}
  # ops whose result does not depend on evaluation order and can be dropped when unused
  UnsafePad = {Ops.RECIPROCAL, Ops.LOG2, Ops.EXP2, Ops.IDIV, Ops.POW, Ops.FDIV}
