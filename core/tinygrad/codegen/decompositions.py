"""Late decompositions: ops a renderer lacks become ops it has, and exp2/log2/sin/sqrt built from plain arithmetic.

The transcendental functions use only ADD, SUB, MUL, NEG, FDIV (log2 only), CMPLT, CMPNE, WHERE, CAST, BITCAST and
SHL/SHR/AND/OR on the matching unsigned integer type (SUB, NEG and FDIV are themselves lowered when missing).
Float rounding is done by casting to int (never TRUNC). Accuracy against a correctly rounded reference (measured in
tests/core/test_decompositions.py): exp2/log2/sin within 1 ulp in float16, float32 and float64, sqrt correctly rounded;
huge sin arguments (1e30, 1e300) are reduced exactly (Payne-Hanek). sin needs 64-bit integers (uint64 limb products).
float16 and bfloat16 compute in float32; float64 has its own polynomial degrees.
Caveat: the double-float steps (Fast2Sum, Dekker splits) rely on the float ops not being reassociated afterwards.
"""
from __future__ import annotations
import functools, math
from decimal import Decimal, getcontext
from fractions import Fraction
from tinygrad.uop import Ops, GroupOp
from tinygrad.uop.ops import UOp
from tinygrad.uop.upat import UPat, PatternMatcher, graph_rewrite
from tinygrad.dtype import DType, PtrDType, AddrSpace, dtypes, int_of_size

# ---- float format facts: (explicit mantissa bits, exponent bias, same-width unsigned int, same-width signed int) ----
_FMT: dict[DType, tuple[int, int, DType, DType]] = {dtypes.float32: (23, 127, dtypes.uint32, dtypes.int32),
                                                  dtypes.float64: (52, 1023, dtypes.uint64, dtypes.int64)}
_HALF = (dtypes.float16, dtypes.bfloat16)

@functools.cache
def _pi_fixed(bits: int) -> int:
  """floor(pi * 2**bits) by Machin's formula in integer arithmetic (guard bits absorb the truncations)."""
  g = bits + 32
  def atan_inv(n: int) -> int:
    tot, term, k, n2 = 0, (1 << g) // n, 0, n * n
    while term:
      tot += term // (2*k+1) if k % 2 == 0 else -(term // (2*k+1))
      term //= n2
      k += 1
    return tot
  return (16*atan_inv(5) - 4*atan_inv(239)) >> 32

@functools.cache
def _two_over_pi_words(nwords: int, zeros: int) -> tuple[int, ...]:
  """2/pi as 32-bit words, most significant first, after `zeros` leading zero words (bit p of the expansion is 2**-p)."""
  nbits = 32 * (nwords - zeros)
  g = nbits + 64
  v = ((1 << (2*g + 1)) // _pi_fixed(g)) >> 64                # floor(2/pi * 2**nbits), 64 guard bits
  return (0,) * zeros + tuple((v >> (32*(nwords-zeros-1-i))) & 0xffffffff for i in range(nwords - zeros))

def _hi(x: Fraction, bits: int) -> Fraction:
  """x rounded to `bits` significant bits."""
  e = math.floor(math.log2(abs(x))) - bits + 1
  return Fraction(round(x / Fraction(2)**e)) * Fraction(2)**e

@functools.cache
def _consts() -> dict[str, Fraction]:
  getcontext().prec = 80
  ln2 = Fraction(Decimal(2).ln())
  pio2 = Fraction(_pi_fixed(300), 2**301)
  return {"ln2": ln2, "pio2": pio2}

# ---- small graph helpers (all UOps, the float ops in x's dtype) ----
def _poly(x: UOp, coeffs: list[float]) -> UOp:
  """Horner: coeffs[0] + x*(coeffs[1] + x*(...)), highest degree last."""
  acc = x.const_like(coeffs[-1])
  for c in reversed(coeffs[:-1]): acc = acc * x + c
  return acc
def _bits(x: UOp) -> UOp: return x.bitcast(_FMT[x.dtype.scalar()][2].vec(x.dtype.count))
def _f(x: UOp, dt: DType) -> UOp: return x.bitcast(dt)
def _mask_low(x: UOp, nbits: int) -> UOp:
  """x with its lowest `nbits` mantissa bits cleared: the high half of a Dekker split."""
  return _f(_bits(x) & ((1 << (x.dtype.itemsize*8)) - 1 - ((1 << nbits) - 1)), x.dtype)
def _pow2i(k: UOp, dt: DType) -> UOp:
  """2**k for an int k whose result is a normal float of dt."""
  mb, bias, udt, _ = _FMT[dt.scalar()]
  return ((k + bias).cast(udt.vec(dt.count)) << mb).bitcast(dt)
def _not(c: UOp) -> UOp: return c.where(False, True)
def _scalar_math(fxn):
  # the bit-level constructions are written for scalars: a vector is done lane by lane; half types go through float32
  # (further operands, ldexp's exponent, go lane by lane with x and keep their type)
  @functools.wraps(fxn)
  def wrapper(x: UOp, *rest: UOp) -> UOp:
    if x.dtype.count > 1: return UOp(Ops.VECTORIZE, x.dtype, tuple(wrapper(x.gep(i), *(r.gep(i) for r in rest)) for i in range(x.dtype.count)))
    if x.dtype in _HALF: return wrapper(x.cast(dtypes.float32), *rest).cast(x.dtype)
    return fxn(x, *rest)
  return wrapper

# ---- exp2 ----
def _exp2(x: UOp, ldexp: bool = False) -> UOp:
  """2**x from adds, muls and bit assembly: round to k + f (|f| <= 1/2), 2**f by Taylor, 2**k built in the exponent field.
  Overflow gives inf, results below half the smallest denormal give 0, denormal results are rounded once, NaN stays NaN.
  ldexp: the renderer has LDEXP, which does 2**f * 2**k in one op with the same single rounding."""
  mb, bias, _, _ = _FMT[x.dtype.scalar()]
  hi, lo, off = bias + 1, -(bias + mb + 3), (64 if mb == 23 else 128)
  idt = dtypes.int32.vec(x.dtype.count)
  xc = (x < lo).where(lo, (x < hi).where(x, 0.0))              # clamp: also keeps NaN/inf away from the int cast
  k = (xc + (xc < 0).where(-0.5, 0.5)).cast(idt)                # round half away from zero
  f = xc - k.cast(x.dtype)                                     # exact
  ln2, n = _consts()["ln2"], (8 if mb == 23 else 13)
  p = _poly(f, [float(ln2**i / math.factorial(i)) for i in range(n+1)])   # 2**f = sum (f ln2)^i / i!
  if ldexp: ret = p.alu(Ops.LDEXP, k)
  else:
    small, big = k < (1 - bias), (bias < k)
    e = small.where(k + off, big.where(k - 1, k))              # keep 2**e normal, finish with one more (exact or rounding) multiply
    s = small.where(2.0**-off, big.where(2.0, 1.0))
    ret = (p * _pow2i(e, x.dtype)) * s
  return (x < hi).where(ret, x.ne(x).where(x, math.inf))
xexp2 = _scalar_math(_exp2)
@_scalar_math
def xexp2_ldexp(x: UOp) -> UOp: return _exp2(x, ldexp=True)   # (for a renderer with LDEXP)

# ---- ldexp ----
@_scalar_math
def xldexp(x: UOp, n: UOp) -> UOp:
  """x * 2**n as two exact powers 2**(n>>1) * 2**(n - (n>>1)), each normal: rounded once, in the second multiply, where
  |n| <= 2*(bias-1) and x * 2**(n>>1) is normal (Tensor.exp's use: x near 1, n from its clamped argument)."""
  ha = n >> 1
  return (x * _pow2i(ha, x.dtype)) * _pow2i(n - ha, x.dtype)

# ---- log2 ----
@_scalar_math
def xlog2(x: UOp) -> UOp:
  """log2(x) the fdlibm way: x = 2**k * (1+f) with 1+f in [sqrt(1/2), sqrt(2)), log(1+f) = f - f*f/2 + s*(f*f/2 + R(s*s)),
  s = f/(2+f), then a hi/lo split for the multiply by 1/ln2 so that f's leading term is exact.
  Denormals are scaled up first; 0 -> -inf, negative -> NaN, inf -> inf, NaN -> NaN."""
  dt = x.dtype
  mb, bias, udt, _ = _FMT[dt.scalar()]
  off = 64
  tiny = x < 2.0**(1 - bias)
  xs = tiny.where(x * 2.0**off, x)
  b = _bits(xs)
  k = (b >> mb).cast(dt) + tiny.where(-(bias + off), -bias)
  m = _f((b & ((1 << mb) - 1)) | (bias << mb), dt)             # mantissa in [1, 2)
  big = math.sqrt(2) < m
  m, k = big.where(m * 0.5, m), k + big.where(1.0, 0.0)
  f = m - 1.0                                                  # exact (Sterbenz)
  s = f / (f + 2.0)
  z = s * s
  nterms = 5 if mb == 23 else 11
  r = z * _poly(z, [2.0 / (2*i + 3) for i in range(nterms)])  # log((1+s)/(1-s)) = 2s + s*r, r = sum 2/(2i+1) z^i
  hfsq = 0.5 * f * f
  hi = _mask_low(f - hfsq, 12 if mb == 23 else 32)            # hi*ivln2hi is exact
  lo = ((f - hi) - hfsq) + s * (hfsq + r)
  ivln2 = 1 / _consts()["ln2"]
  ivhi = _hi(ivln2, 12 if mb == 23 else 21)
  ivlo = float(ivln2 - ivhi)
  vhi = hi * float(ivhi)
  vlo = (lo + hi) * ivlo + lo * float(ivhi)
  w = k + vhi                                                  # Fast2Sum: |k| >= |vhi| or k == 0
  vlo = vlo + ((k - w) + vhi)
  ret = vlo + w
  ret = x.ne(math.inf).where(ret, math.inf)
  ret = x.ne(0.0).where(ret, -math.inf)
  return (x < 0).where(math.nan, x.ne(x).where(x, ret))

# ---- sin ----
def _sin_kernel(r: UOp, rl: UOp, deg: int) -> UOp:
  """sin(r + rl) for |r| <= pi/4, rl a tail below r's last bit: r + (r^3 S(r^2) + rl (1 - r^2/2))."""
  z = r * r
  sp = _poly(z, [float(Fraction((-1)**(i+1), math.factorial(2*i + 3))) for i in range(deg)])
  return r + ((z * r) * sp + rl * (1.0 - 0.5 * z))

def _cos_kernel(r: UOp, rl: UOp, deg: int) -> UOp:
  """cos(r + rl) for |r| <= pi/4: w = 1 - r^2/2 rounded, the rounding error of w added back (fdlibm's trick)."""
  z = r * r
  cp = _poly(z, [float(Fraction((-1)**i, math.factorial(2*i + 4))) for i in range(deg)])
  hz = 0.5 * z
  w = 1.0 - hz
  return w + (((1.0 - w) - hz) + (z * z * cp - r * rl))

def _take(words: tuple[int, ...], idx: UOp, lo: int, hi: int, dt: DType) -> UOp:
  """words[idx] for idx in [lo, hi] as a chain of WHEREs (no memory: tables are constants)."""
  acc = UOp.const(dt, words[hi])
  for i in range(hi - 1, lo - 1, -1): acc = idx.ne(i).where(acc, UOp.const(dt, words[i]))
  return acc

def _payne_hanek(ax: UOp) -> tuple[UOp, UOp, UOp]:
  """ax (finite, >= pi/4) = n*pi/2 + r: returns (r_hi, r_lo, n mod 4) with r in [-pi/4, pi/4].
  x = M * 2**E, M an integer. Multiply M by the window of 2/pi whose bits are worth between 2**1 and 2**-(L-2) once
  scaled by 2**E (earlier bits give multiples of 4, later ones are below the precision kept), in 32-bit limbs held in
  uint64. The low L bits of the product are n mod 4 (top 2 bits) and the fraction; the fraction goes to float as hi+lo
  and is multiplied by pi/2 with a Dekker split."""
  dt = ax.dtype.scalar()
  mb, bias, udt, _ = _FMT[dt]
  u64, i64, i32 = dtypes.uint64, dtypes.int64, dtypes.int32
  K, Z = (3, 2) if mb == 23 else (6, 2)                        # window words, leading zero words of the table
  b = _bits(ax)
  E = (b >> mb).cast(i32) - (bias + mb)
  M = ((b & ((1 << mb) - 1)) | (1 << mb)).cast(u64)
  mlimbs = [M] if mb == 23 else [M & 0xffffffff, M >> 32]     # least significant first
  start = E + (32*Z - 2)                                       # table bit index of 2/pi bit 2**-(E-1)
  emin, emax = (bias - 1) - (bias + mb), (2*bias) - (bias + mb)
  qlo, qhi = (emin + 32*Z - 2) // 32, (emax + 32*Z - 2) // 32
  words = _two_over_pi_words(qhi + K + 1, Z)
  q0, sh = start >> 5, (start & 31).cast(u64)
  t = [_take(words[j:], q0, qlo, qhi, u64) for j in range(K + 1)]   # table words q0 .. q0+K
  win = [((t[j] << sh) & 0xffffffff) | (t[j+1] >> (32 - sh)) for j in range(K)]   # MS first
  wl = win[::-1]
  cols: list[UOp] = []
  carry: UOp | None = None
  for c in range(K):                                           # schoolbook product, low K words only
    terms = [] if carry is None else [carry]
    for i, mi in enumerate(mlimbs):
      if 0 <= c - i < K: terms.append((mi * wl[c - i]) & 0xffffffff)
      if 0 <= c - i - 1 < K: terms.append((mi * wl[c - i - 1]) >> 32)
    acc = functools.reduce(lambda a, b: a + b, terms)
    cols.append(acc & 0xffffffff)
    carry = acc >> 32
  top = cols[K-1]
  half = (top >> 29) & 1                                       # fraction >= 1/2: round n up, fraction goes negative
  n = ((top >> 30) + half) & 3
  h = (((top & 0x3fffffff) << 32) | cols[K-2]).cast(i64) - half.cast(i64) * (1 << 62)
  a = h.cast(dt)
  hi = a * 2.0**-62
  lo = (h - a.cast(i64)).cast(dt) * 2.0**-62
  if mb == 52: lo = lo + ((cols[K-3] << 32) | cols[K-4]).cast(dt) * 2.0**-126
  pio2 = _consts()["pio2"]
  split = 12 if mb == 23 else 27
  p1 = _hi(pio2, mb + 1 - split)
  p2 = float(pio2 - p1)
  sh_ = _mask_low(hi, split)
  main = sh_ * float(p1)                                       # exact
  rest = (hi - sh_) * float(p1) + (hi * p2 + lo * float(pio2))
  rhi = main + rest
  rlo = rest - (rhi - main)
  return rhi, rlo, n

@_scalar_math
def xsin(x: UOp) -> UOp:
  """sin(x): |x| < pi/4 directly, else Payne-Hanek reduction to r in [-pi/4, pi/4] and the quadrant; then the sin or cos
  Taylor kernel. Exact reduction for every finite input (1e30 included); inf and NaN give NaN; sin(-0) = -0."""
  dt = x.dtype
  mb = _FMT[dt.scalar()][0]
  ax = (x < 0).where(-x, x)
  pio4 = math.pi / 4
  small = ax < pio4
  safe = small.where(1.0, (ax < math.inf).where(ax, 1.0))    # keep the reduction's shifts in range on lanes it doesn't serve
  rhi, rlo, n = _payne_hanek(safe)
  rhi, rlo = small.where(ax, rhi), small.where(0.0, rlo)
  n = small.where(UOp.const(n.dtype, 0), n)
  deg = 5 if mb == 23 else 8
  s, c = _sin_kernel(rhi, rlo, deg), _cos_kernel(rhi, rlo, deg)
  ret = (n & 1).ne(0).where(c, s)
  ret = (n & 2).ne(0).where(-ret, ret)
  ret = (x < 0).where(-ret, ret)
  return (ax < math.inf).where(x.ne(0.0).where(ret, x), math.nan)   # sin(+-0) = +-0

# ---- sqrt ----
@_scalar_math
def xsqrt(x: UOp) -> UOp:
  """sqrt(x): 1/sqrt(x) from the bit-trick start and Newton steps, then x*y corrected by an exactly computed residual
  (Dekker split). Tiny and huge x are scaled by an even power of 2 first; -0 -> -0, negative -> NaN, inf -> inf."""
  dt = x.dtype
  mb, bias, _, _ = _FMT[dt.scalar()]
  magic, steps, off = (0x5f3759df, 3, 64) if mb == 23 else (0x5fe6eb50c7b537a9, 4, 128)
  tiny, huge = x < 2.0**(1 - bias + off), 2.0**(bias - off) < x   # keep x*y*y and the split's squares clear of denormals
  xs = tiny.where(x * 2.0**off, huge.where(x * 2.0**-off, x))
  y = _f(UOp.const(_bits(xs).dtype, magic) - (_bits(xs) >> 1), dt)
  for _ in range(steps): y = y * (1.5 - (0.5 * xs) * (y * y))   # y <- y (3 - x y^2) / 2
  s = xs * y
  split = 12 if mb == 23 else 27
  sh = _mask_low(s, split)
  sl = s - sh
  res = ((xs - sh * sh) - 2.0 * sh * sl) - sl * sl             # x - s*s, exactly up to the last term's rounding
  s = s + (0.5 * y) * res
  s = s * tiny.where(2.0**(-off // 2), huge.where(2.0**(off // 2), 1.0))
  s = x.ne(math.inf).where(s, math.inf)
  s = x.ne(0.0).where(s, x)
  return (x < 0).where(math.nan, x.ne(x).where(x, s))

# ---- trunc, pow ----
def xtrunc(x: UOp) -> UOp:
  """trunc(x) through a cast to int: values >= 2**mantissa_bits are integers already; the sign of zero is kept."""
  mb = {dtypes.float16: 10, dtypes.bfloat16: 7, dtypes.float32: 23, dtypes.float64: 52}[x.dtype.scalar()]
  idt = (dtypes.int32 if mb <= 23 else dtypes.int64).vec(x.dtype.count)
  neg = x < 0
  ax = neg.where(-x, x)
  t = ax.cast(idt).cast(x.dtype)
  ret = (ax < 2.0**mb).where(neg.where(-t, t), x)             # NaN and inf fail the compare and pass through
  return x.ne(0.0).where(ret, x)

def _is_int(y: UOp) -> UOp: return xtrunc(y).ne(y).where(False, True)
def xpow(x: UOp, y: UOp) -> UOp:
  """x**y = 2**(y*log2|x|), negated for a negative x (-0.0 too: (-0.0)**3 is -0.0) and an odd integer y; NaN for a finite
  negative x and a non-integer y (C's pow: (-inf)**y and (-0.0)**y are inf or 0 for such y; 1**y, (-1)**+-inf and x**0
  are 1, also for NaN). float16/bfloat16 compute in float32 and round once: y * log2|x| rounded to 8 bits put bfloat16
  0.039 ** -6.19 9% off."""
  if x.dtype.scalar() in _HALF: return xpow(x.cast(f32 := dtypes.float32.vec(x.dtype.count)), y.cast(f32)).cast(x.dtype)
  neg = x.bitcast(int_of_size(x.dtype.itemsize).vec(x.dtype.count)) < 0   # the sign bit
  ax = neg.where(-x, x)
  ret = ax.ne(1.0).where(y * ax.log2(), 0.0).exp2()   # (not inf * log2(1) = NaN)
  odd = _is_int(y * 0.5).where(False, _is_int(y))
  ret = neg.where(odd.where(-ret, (_is_int(y) | x.eq(-math.inf) | x.eq(0.0)).where(ret, math.nan)), ret)
  return y.ne(0.0).where(ret, 1.0)

# ---- lowering rules: one table per op a renderer may lack ----
_F, _B = UPat.var("x", dtypes.floats), UPat.var("x", dtypes.bool)
def _pow2(c: UOp) -> int | None:
  return int(c.arg).bit_length() - 1 if c.op is Ops.CONST and isinstance(c.arg, int) and c.arg > 0 and c.arg & (c.arg - 1) == 0 else None

def _idiv_pow2(x: UOp, c: UOp) -> UOp | None:
  if (k := _pow2(c)) is None: return None
  if dtypes.is_unsigned(x.dtype) or k == 0: return x >> k
  return ((x < 0).where(x + (c.arg - 1), x)) >> k             # C truncation: bias negatives by c-1 before the floor shift
def _mod_pow2(x: UOp, c: UOp) -> UOp | None:
  if (k := _pow2(c)) is None: return None
  if dtypes.is_unsigned(x.dtype): return x & (c.arg - 1)
  return (x < 0).where(-((-x) & (c.arg - 1)), x & (c.arg - 1)) # C remainder takes the dividend's sign (-INT_MIN wraps: fine)

pm_exp2 = PatternMatcher([(UPat(Ops.EXP2, src=(_F,)), xexp2)])            # 2**x -> poly(f) * 2**k
pm_exp2_ldexp = PatternMatcher([(UPat(Ops.EXP2, src=(_F,)), xexp2_ldexp)])  # 2**x -> ldexp(poly(f), k)
# a float32 vector (lanes the vectorize pass packed): the same construction once on the vector, lane for lane the same ops
def exp2_vector(ldexp: bool) -> PatternMatcher:
  return PatternMatcher([(UPat(Ops.EXP2, src=(UPat.var("x"),)), lambda x: _exp2(x, ldexp) if x.dtype.count > 1 and x.dtype.scalar() == dtypes.float32 else None)])
# before vectorizing, where float32 waits for that: other floats now (float16 computes in float32, lanes the packer keeps)
def exp2_later(ldexp: bool) -> PatternMatcher:
  return PatternMatcher([(UPat(Ops.EXP2, src=(_F,)), lambda x: (xexp2_ldexp if ldexp else xexp2)(x) if x.dtype.scalar() != dtypes.float32 else None)])
pm_log2 = PatternMatcher([(UPat(Ops.LOG2, src=(_F,)), xlog2)])            # log2 x -> k + log2(1+f)
pm_sin = PatternMatcher([(UPat(Ops.SIN, src=(_F,)), xsin)])               # sin x -> +-sin/cos(x - n pi/2)
pm_sqrt = PatternMatcher([(UPat(Ops.SQRT, src=(_F,)), xsqrt)])            # sqrt x -> x * rsqrt(x), Newton
pm_trunc = PatternMatcher([(UPat(Ops.TRUNC, src=(_F,)), xtrunc)])         # trunc x -> float(int(x))
pm_pow = PatternMatcher([(UPat(Ops.POW, src=(_F, UPat.var("y"))), xpow)])  # x**y -> 2**(y log2 x)
pm_ldexp = PatternMatcher([(UPat(Ops.LDEXP, src=(_F, UPat.var("n"))), lambda x, n: xldexp(x, n))])  # x*2**n -> x * 2**(n>>1) * 2**(n-(n>>1))
pm_reciprocal = PatternMatcher([(UPat(Ops.RECIPROCAL, src=(_F,)), lambda x: x.const_like(1.0) / x)])  # 1/x -> FDIV(1, x)
pm_fdiv = PatternMatcher([(UPat(Ops.FDIV, src=(_F, UPat.var("y"))), lambda x, y: x * y.reciprocal())])  # x/y -> x*(1/y)
pm_idiv = PatternMatcher([(UPat(Ops.IDIV, src=(UPat.var("x"), UPat.cvar("c"))), _idiv_pow2)])  # x//2^k -> (x + (x<0)*(2^k-1)) >> k
pm_mod = PatternMatcher([
  (UPat(Ops.MOD, src=(UPat.var("x"), UPat.cvar("c"))), _mod_pow2),                   # x%2^k -> +-(|x| & (2^k-1))
  (UPat(Ops.MOD, src=(UPat.var("x"), UPat.var("y"))), lambda x, y: x - (x // y) * y),  # x%y -> x - (x//y)*y
])
pm_sub = PatternMatcher([(UPat(Ops.SUB, src=(UPat.var("x"), UPat.var("y"))), lambda x, y: x + (-y))])  # x-y -> x+(-y)
pm_neg = PatternMatcher([
  (UPat(Ops.NEG, src=(_B,)), lambda x: x.where(False, True)),                         # -b -> !b
  (UPat(Ops.NEG, src=(UPat.var("x"),)), lambda x: x * -1),                            # -x -> x*-1
])
pm_cmpeq = PatternMatcher([(UPat(Ops.CMPEQ, src=(UPat.var("x"), UPat.var("y"))), lambda x, y: _not(x.ne(y)))])  # x==y -> !(x!=y)
pm_cmpne = PatternMatcher([
  (UPat(Ops.CMPNE, src=(_B, UPat.var("y"))), lambda x, y: x.where(_not(y), y)),       # b!=c -> b ? !c : c
  (UPat(Ops.CMPNE, src=(UPat.var("x", dtypes.ints), UPat.var("y"))), lambda x, y: (x < y).where(True, y < x)),  # x!=y -> x<y | y<x
])
pm_cmplt = PatternMatcher([(UPat(Ops.CMPLT, src=(_B, UPat.var("y"))), lambda x, y: x.where(False, y))])  # b<c -> !b & c
pm_max = PatternMatcher([
  (UPat(Ops.MAX, src=(_F, UPat.var("y"))), lambda x, y: y.ne(y).where(y, (x < y).where(y, x))),  # max(x,y) -> x<y ? y : x, NaN wins
  (UPat(Ops.MAX, src=(UPat.var("x"), UPat.var("y"))), lambda x, y: (x < y).where(y, x)),       # max(x,y) -> x<y ? y : x
])
pm_mulacc = PatternMatcher([(UPat(Ops.MULACC, src=(UPat.var("a"), UPat.var("b"), UPat.var("c"))), lambda a, b, c: a * b + c)])  # a*b+c
pm_bool_and = PatternMatcher([(UPat(Ops.AND, src=(_B, UPat.var("y"))), lambda x, y: x.where(y, False))])  # b&c -> b ? c : false
pm_bool_or = PatternMatcher([(UPat(Ops.OR, src=(_B, UPat.var("y"))), lambda x, y: x.where(True, y))])     # b|c -> b ? true : c
pm_bool_xor = PatternMatcher([(UPat(Ops.XOR, src=(_B, UPat.var("y"))), lambda x, y: x.ne(y))])           # b^c -> b!=c
pm_shl = PatternMatcher([(UPat(Ops.SHL, src=(UPat.var("x", dtypes.ints), UPat.cvar("c"))),
                          lambda x, c: x * (1 << c.arg) if 0 <= c.arg < x.dtype.itemsize*8 else None)])  # x<<c -> x*2^c
pm_shr = PatternMatcher([(UPat(Ops.SHR, src=(UPat.var("x", dtypes.uints), UPat.cvar("c"))),
                          lambda x, c: x // (1 << c.arg) if 0 <= c.arg < x.dtype.itemsize*8 else None)])  # x>>c -> x//2^c (unsigned)

# ---- defined numerics: every renderer computes the same answer as numpy for shifts and bool arithmetic ----
def _shift_guard(x: UOp, a: UOp, left: bool) -> UOp | None:
  """x << a and x >> a for an amount outside [0, bits): C and LLVM leave it undefined (LLVM: poison, the store dropped),
  WGSL masks the amount; numpy and torch give 0 for <<, and for >> the sign fill (0, or -1 for a negative x)."""
  bits = x.dtype.scalar().itemsize * 8
  if dtypes.is_bool(x.dtype) or (0 <= a.vmin and a.vmax < bits): return None   # provably in range: as it is
  fill = (x < 0).where(x.const_like(-1), x.const_like(0)) if not left and not dtypes.is_unsigned(x.dtype) else x.const_like(0)
  if a.op is Ops.CONST: return fill                                               # constant out of range: the fill
  ua = a.cast(dtypes.uints[[1, 2, 4, 8].index(a.dtype.scalar().itemsize)].vec(a.dtype.count)) if not dtypes.is_unsigned(a.dtype) else a
  safe = a & (bits - 1)                                                           # defined on the lane the WHERE drops
  return (ua < bits).where(x << safe if left else x >> safe, fill)               # negative amounts are huge unsigned
def _int_range(x: UOp, dt: DType) -> UOp:
  """x (a float) lies where truncating it to int dtype `dt` is defined: (-1, 2**bits) unsigned, [-2**(bits-1), 2**(bits-1)) signed
  (a bound past the float dtype's range, 2**31 in float16, is the infinity: only finite values pass)."""
  bits, fmax = dt.itemsize * 8, {dtypes.float16: 65504.0, dtypes.bfloat16: 3.39e38, dtypes.float32: 3.4e38}.get(x.dtype.scalar(), math.inf)
  hi = 2.0 ** (bits - (0 if dtypes.is_unsigned(dt) else 1))
  lo_ok = x > x.const_like(-1.0) if dtypes.is_unsigned(dt) else x >= x.const_like(-hi) if hi <= fmax else x > x.const_like(-math.inf)
  return lo_ok & (x < x.const_like(hi if hi <= fmax else math.inf))   # both False for NaN
def _float_to_int(c: UOp, x: UOp) -> UOp | None:
  """int(x) for a float x: C and LLVM leave NaN and out-of-range undefined (x86 gives INT_MIN, ARM and GPUs saturate, WGSL
  clamps); every device gives the saturated value, NaN -> 0 (Rust's and WGSL's rule), truncating the rest toward zero."""
  dt = c.dtype.scalar()
  if x.op is Ops.WHERE and x.src[2].op is Ops.CONST and x.src[2].arg == 0 and x.src[0] is _int_range(x.src[1], dt): return None  # done
  ok = _int_range(x, dt)
  fill = x.ne(x).where(c.const_like(0), (x < x.const_like(0.0)).where(c.const_like(dtypes.min(dt)), c.const_like(dtypes.max(dt))))
  return ok.where(ok.where(x, x.const_like(0.0)).cast(c.dtype), fill)
pm_numerics = PatternMatcher([
  (UPat(Ops.CAST, dtypes.ints, src=(_F,), name="c"), _float_to_int),                             # int(x) -> saturated, NaN -> 0
  (UPat(Ops.SHL, src=(UPat.var("x"), UPat.var("a"))), lambda x, a: _shift_guard(x, a, True)),   # x<<a -> a u< bits ? x<<(a&(bits-1)) : 0
  (UPat(Ops.SHR, src=(UPat.var("x"), UPat.var("a"))), lambda x, a: _shift_guard(x, a, False)),  # x>>a -> a u< bits ? x>>(a&(bits-1)) : sign fill
  (UPat(Ops.ADD, dtype=dtypes.bool, src=(UPat.var("x"), UPat.var("y"))), lambda x, y: x | y),    # b+c -> b|c (LLVM's add i1 is xor)
  (UPat(Ops.MUL, dtype=dtypes.bool, src=(UPat.var("x"), UPat.var("y"))), lambda x, y: x & y),    # b*c -> b&c
  (UPat(Ops.MAX, dtype=dtypes.bool, src=(UPat.var("x"), UPat.var("y"))), lambda x, y: x | y),    # max(b,c) -> b|c (i1 true is -1 signed)
  (UPat(Ops.REDUCE, dtype=dtypes.bool, arg=Ops.ADD, name="r"), lambda r: r.replace(arg=Ops.MAX)),  # sum_r b -> any_r b (its acc += b was add i1)
  # a bool's byte read as an int and back: LLVM's i1 has no bitcast to i8 (its compile failed), and C's bool of a byte 2 was
  # undefined (clang read False): numpy's and torch's reading on every device
  (UPat(Ops.BITCAST, dtype=dtypes.bool, src=(UPat.var("x"),)), lambda x: x.ne(0)),                 # bool(bits x) -> x != 0
  (UPat(Ops.BITCAST, dtypes.ints, src=(UPat.var("x", dtypes.bool),), name="b"), lambda b, x: x.cast(b.dtype)),  # bits(b) -> 0 or 1
])

# the table for a missing op, and the ops its rules emit (a rule is used only when what it emits is available)
_LOWERINGS: list[tuple[Ops, PatternMatcher, frozenset[Ops]]] = [
  (Ops.EXP2, pm_exp2, frozenset()), (Ops.LOG2, pm_log2, frozenset()), (Ops.SIN, pm_sin, frozenset()),
  (Ops.SQRT, pm_sqrt, frozenset()), (Ops.TRUNC, pm_trunc, frozenset()), (Ops.POW, pm_pow, frozenset()),
  (Ops.LDEXP, pm_ldexp, frozenset()),
  (Ops.RECIPROCAL, pm_reciprocal, frozenset({Ops.FDIV})), (Ops.FDIV, pm_fdiv, frozenset({Ops.RECIPROCAL})),
  (Ops.IDIV, pm_idiv, frozenset({Ops.SHR})), (Ops.MOD, pm_mod, frozenset()), (Ops.SUB, pm_sub, frozenset()),
  (Ops.NEG, pm_neg, frozenset()), (Ops.CMPEQ, pm_cmpeq, frozenset()), (Ops.CMPNE, pm_cmpne, frozenset()),
  (Ops.CMPLT, pm_cmplt, frozenset()), (Ops.MAX, pm_max, frozenset()), (Ops.MULACC, pm_mulacc, frozenset()),
  (Ops.AND, pm_bool_and, frozenset()), (Ops.OR, pm_bool_or, frozenset()), (Ops.XOR, pm_bool_xor, frozenset()),
  (Ops.SHL, pm_shl, frozenset()), (Ops.SHR, pm_shr, frozenset({Ops.IDIV})),
]

def get_late_rewrite_patterns(ops: set[Ops] | frozenset[Ops], force_transcendental: bool = False) -> PatternMatcher:
  """Rules that rewrite every ALU op not in `ops` (the renderer's code_for_op keys) into ops that are.

  force_transcendental: use our exp2/log2/sin even where the renderer has them (accuracy independent of the device's
  math library). Apply with graph_rewrite: the rules' output is itself rewritten until only available ops remain."""
  missing = {o for o in GroupOp.ALU if o not in ops}
  if force_transcendental: missing |= {Ops.EXP2, Ops.LOG2, Ops.SIN}
  ret = PatternMatcher([])
  for op, pm, needs in _LOWERINGS:
    if op in missing and not (needs & missing): ret = ret + (pm_exp2_ldexp if pm is pm_exp2 and Ops.LDEXP not in missing else pm)
  return ret

def _half_alu(x: UOp) -> UOp | None:
  # compute half ALU in float32: exact for +,-,*,/,sqrt (float32 has more than 2*11+2 bits), cast back once
  f32 = dtypes.float32.vec(x.dtype.count)
  return x.replace(dtype=f32, src=tuple(s.cast(f32) for s in x.src)).cast(x.dtype)
def _half_cmp(x: UOp) -> UOp | None:
  f32 = dtypes.float32.vec(x.src[0].dtype.count)
  return x.replace(src=tuple(s.cast(f32) for s in x.src))

_halfs = UPat.var(dtype=_HALF)
pm_float16_via_float32 = PatternMatcher([
  (UPat(GroupOp.ALU - GroupOp.Comparison - {Ops.WHERE}, dtype=_HALF, name="x"), _half_alu),  # op_h(a) -> half(op_f(float(a)))
  (UPat(GroupOp.Comparison, src=(_halfs, _halfs), name="x"), _half_cmp),                     # a_h < b_h -> float(a) < float(b)
])

# ---- float64 -> a float narrower than float32, rounded once ----
# Every emulated narrow float (C's and OpenCL's half without the extension, bfloat16 everywhere, fp8) is made from a float32:
# float64 -> float32 -> half rounded twice (1+2**-11+2**-40 became 1.0, 65519.99999999 inf; numpy: 1.0009765625, 65504).
# A float32 rounded to odd (toward 0, its last bit set where inexact) rounds to any format of p <= 22 bits exactly as the
# float64 would (24 >= p + 2: half 11, bfloat16 8, fp8 4 or 3); NaN stays NaN, past float32's range it is FLT_MAX (-> inf)
def to_f32_odd(x: UOp) -> UOp:
  """float32 of the float64 or 32-/64-bit int `x`, rounded to odd. (An int past 2**24 made float32 rounded to nearest, then
  bfloat16 rounded again: 2**25 + 2**17 + 1 became 2**25, not 2**25 + 2**18 as constant folding and ml_dtypes give.)"""
  t = x.cast(dtypes.float32.vec(x.dtype.count))
  # (an int's back saturates where t rounded up past its range, 2**31 from 2**31 - 1: above x or equal to it, as t is)
  back, u = t.cast(x.dtype), t.bitcast(dtypes.uint32.vec(x.dtype.count))
  # rounded away from 0: the float below it in magnitude
  away = (x < back) if dtypes.is_unsigned(x.dtype.scalar()) else (x < 0).where(back < x, x < back)
  # (inexact by < and >, not !=: a NaN keeps its bits, which OpenCL's vstore_half_rte carries into the half's payload)
  return ((x < back) | (back < x)).where(away.where(u - 1, u) | 1, u).bitcast(dtypes.float32.vec(x.dtype.count))
_NARROW_FLOATS = (dtypes.float16, dtypes.bfloat16, *dtypes.fp8s)
_WIDE_INTS = (dtypes.int32, dtypes.uint32, dtypes.int64, dtypes.uint64)
pm_f64_round_once = PatternMatcher([
  (UPat(Ops.CAST, _NARROW_FLOATS, src=(UPat.var("x", dtypes.float64),), name="c"), lambda c, x: to_f32_odd(x).cast(c.dtype)),  # h(d) -> h(f_odd(d))
  # (bfloat16 only: an int that float32 rounds, past 2**24, is past float16's and fp8's range, inf there either way)
  (UPat(Ops.CAST, dtypes.bfloat16, src=(UPat.var("x", _WIDE_INTS),), name="c"), lambda c, x: to_f32_odd(x).cast(c.dtype)),  # b(i) -> b(f_odd(i))
])

# ---- fp8: bytes in memory, float32 in registers (no renderer computes fp8; Renderer.native_fp8 is the hook for one that does) ----
# The conversions are integer ops on the float32 bits, the algorithm of dtype.float_to_fp8 / fp8_to_float: round to nearest
# even, too large (inf too) -> the format's overflow code (e4m3 saturates, e5m2 inf, fnuz NaN), as torch's casts.
def _fp8_decode(bits: UOp, dt: DType) -> UOp:
  """float32 value of the fp8 `bits` (uint8): exact."""
  from tinygrad.dtype import _FP8
  f, n = _FP8[dt], bits.dtype.count
  u32, f32 = dtypes.uint32.vec(n), dtypes.float32.vec(n)
  b = bits.cast(u32)
  mag, sign = b & 0x7f, (b & 0x80) << 24
  normal = (mag << (23 - f.mbits)) + ((127 - f.bias) << 23)                            # e<<23 | m<<(23-M), rebiased
  sub = (mag.cast(f32) * UOp.const(f32, 2.0 ** (1 - f.bias - f.mbits))).bitcast(u32)  # e == 0: m * 2**(1-bias-M), a float32 normal
  ret = (mag < (1 << f.mbits)).where(sub, normal) | sign
  if f.inf is not None: ret = mag.eq(f.inf).where(sign | 0x7f800000, ret)
  isnan = b.eq(f.nan) if f.fnuz else f.maxcode < mag if f.inf is None else (f.inf < mag)
  return isnan.where(UOp.const(u32, 0x7fc00000) | (sign if not f.fnuz else 0), ret).bitcast(f32)

def _fp8_encode(x: UOp, dt: DType) -> UOp:
  """fp8 bits (uint8) of the float32 `x`."""
  from tinygrad.dtype import _FP8
  f, n = _FP8[dt], x.dtype.count
  u32 = dtypes.uint32.vec(n)
  u = x.bitcast(u32)
  sign, a = (u >> 24) & 0x80, u & 0x7fffffff
  e, sh = a >> 23, 23 - f.mbits
  normal = ((a + ((1 << (sh - 1)) - 1) + ((a >> sh) & 1)) >> sh) - ((127 - f.bias) << f.mbits)   # round the low bits to even
  t = UOp.const(u32, sh + 128 - f.bias) - e
  s = (t < 25).where(t, 25)   # an fp8 subnormal: the mantissa (implicit bit set) shifted right by s (25 and more: 0)
  m = (a & 0x7fffff) | 0x800000
  q, rem, half = m >> s, m & ((UOp.const(u32, 1) << s) - 1), UOp.const(u32, 1) << (s - 1)
  sub = q + (half < rem).where(1, rem.eq(half).where(q & 1, 0))
  code = (e > 127 - f.bias).where(normal, sub)
  code = (f.maxcode < code).where(f.overflow, code)
  signed = (code.eq(0).where(code, code | sign) if f.fnuz else code | sign)   # fnuz: no -0 (its NaN 0x80 has no sign to add)
  return (UOp.const(u32, 0x7f800000) < a).where(f.nan if f.fnuz else sign | f.nan, signed).cast(dtypes.uint8.vec(n))

def _fp8_dt(dt: DType, emu: frozenset[DType]) -> DType:
  """`dt` with emulated fp8 replaced by uint8 (scalars, vectors and pointers)."""
  if isinstance(dt, PtrDType):
    if dt.base.scalar() not in emu: return dt
    return dtypes.uint8.vec(dt.base.count).ptr(dt.size, dt.addrspace).vec(dt.v)
  return dtypes.uint8.vec(dt.count) if dt.scalar() in emu else dt

def lower_fp8(sink: UOp, native: frozenset[DType] = frozenset(), topo: dict[UOp, None] | None = None) -> UOp:
  """The kernel with every emulated fp8 value held as its uint8 bits: CONSTs encoded, casts from and to fp8 become
  _fp8_decode/_fp8_encode, an ALU op or REDUCE on fp8 runs in float32 and is rounded to fp8 once (as torch's), WHERE and
  BITCAST move the bits. First a float64 cast to half/bfloat16/fp8 goes through a float32 rounded to odd (pm_f64_round_once;
  here, as this pass walks every kernel anyway: a pass of its own cost ~6% of codegen for a cast few kernels have).
  `topo`: sink.toposort() when the caller has it."""
  emu = frozenset(dtypes.fp8s) - native
  def is8(dt: DType) -> bool: return (dt.base if isinstance(dt, PtrDType) else dt).scalar() in emu
  if topo is None: topo = sink.toposort()
  if any(u.op is Ops.CAST and (u.dtype.scalar() in _NARROW_FLOATS and u.src[0].dtype.scalar() == dtypes.float64 or
                                 u.dtype.scalar() == dtypes.bfloat16 and u.src[0].dtype.scalar() in _WIDE_INTS) for u in topo):
    sink = graph_rewrite(sink, pm_f64_round_once)
    topo = sink.toposort()
  if not any(is8(u.dtype) for u in topo): return sink
  from tinygrad.dtype import float_to_fp8
  new: dict[UOp, UOp] = {}
  for u in topo:
    src = tuple(new[s] for s in u.src)
    def dec(i: int) -> UOp:   # source i as float32 (decoded when it was fp8)
      return _fp8_decode(src[i], u.src[i].dtype.scalar()) if is8(u.src[i].dtype) else src[i]
    f32 = dtypes.float32.vec(u.dtype.count)
    if u.op in (Ops.CONST, Ops.VCONST) and is8(u.dtype):   # (a VCONST's arg is a tuple, one value per lane)
      enc = tuple(float_to_fp8(v, u.dtype.scalar()) for v in u.arg) if isinstance(u.arg, tuple) else float_to_fp8(u.arg, u.dtype.scalar())
      ret = u.replace(dtype=_fp8_dt(u.dtype, emu), arg=enc)
    elif u.op is Ops.CAST and (is8(u.dtype) or is8(u.src[0].dtype)):
      x = dec(0)
      ret = _fp8_encode(x.cast(f32), u.dtype.scalar()) if is8(u.dtype) else x.cast(u.dtype)
    elif u.op is Ops.BITCAST and (is8(u.dtype) or is8(u.src[0].dtype)): ret = src[0].bitcast(_fp8_dt(u.dtype, emu))
    elif (u.op in GroupOp.ALU - {Ops.WHERE} or u.op is Ops.REDUCE) and any(is8(s.dtype) for s in u.src[:1 if u.op is Ops.REDUCE else None]):
      nval = 1 if u.op is Ops.REDUCE else len(src)   # (a REDUCE's other sources are its ranges)
      ret = u.replace(dtype=f32 if is8(u.dtype) else u.dtype, src=tuple(dec(i) for i in range(nval)) + src[nval:])
      if is8(u.dtype): ret = _fp8_encode(ret, u.dtype.scalar())
    elif is8(u.dtype) or src != u.src: ret = u.replace(dtype=_fp8_dt(u.dtype, emu), src=src)
    else: ret = u
    new[u] = ret
  return new[sink]

# ---- 16-bit floats moved, not computed: their bits, as uint16 ----
# A renderer that holds half/bfloat16 as float in registers converts on every load and store, and float->16-bit rounding
# makes every NaN one canonical NaN (0xFFFF -> 0x7FC0): a copy, a select or a bitcast lost the sign and payload that torch
# keeps (a memcpy there). A value that only moves bits (loads, WHERE/GEP/VECTORIZE of them, bitcasts from 16 bits) is
# loaded and stored as its uint16 bits instead; a computed value still rounds once, as it did.
_F16 = (dtypes.float16, dtypes.bfloat16)
def _u16(dt: DType) -> DType:
  if isinstance(dt, PtrDType): return dtypes.uint16.vec(dt.base.count).ptr(dt.size, dt.addrspace).vec(dt.v)
  return dtypes.uint16.vec(dt.count)
def _u16_ptr(idx: UOp) -> UOp:   # the pointer `idx` retyped to the uint16 bits (a pointer CAST already there is retyped)
  return idx.replace(dtype=_u16(idx.dtype)) if idx.op is Ops.CAST else idx.cast(_u16(idx.dtype))
def _global(idx: UOp) -> bool:   # (registers and shared memory hold float on some devices: only global memory is bits everywhere)
  return isinstance(idx.dtype, PtrDType) and idx.dtype.addrspace == AddrSpace.GLOBAL
def _moved_bits(v: UOp) -> UOp | None:
  """The uint16 bits of the 16-bit float `v` where `v` only moves bits, else None (it is computed)."""
  if v.dtype.scalar() not in _F16: return None
  if v.op is Ops.LOAD and _global(idx := v.src[0]):
    return v.replace(dtype=_u16(v.dtype), src=(_u16_ptr(idx), *v.src[1:]))
  if v.op is Ops.BITCAST and v.src[0].dtype.scalar().itemsize == 2 and v.src[0].dtype.count == v.dtype.count:
    if (s := v.src[0]).dtype.scalar() == dtypes.uint16: return s
    return b if (b := _moved_bits(s)) is not None else s.bitcast(_u16(s.dtype))
  if v.op is Ops.GEP and (b := _moved_bits(v.src[0])) is not None: return v.replace(dtype=_u16(v.dtype), src=(b,))
  if v.op in (Ops.WHERE, Ops.VECTORIZE):
    vals = v.src[1:] if v.op is Ops.WHERE else v.src
    bs = [_moved_bits(s) for s in vals]
    if all(b is None for b in bs): return None
    moved = tuple(b if b is not None else s.bitcast(_u16(s.dtype)) for b, s in zip(bs, vals))   # (a computed branch rounds)
    return v.replace(dtype=_u16(v.dtype), src=v.src[:1] + moved if v.op is Ops.WHERE else moved)
  return None
def _store_bits(x: UOp) -> UOp | None:
  if len(x.src) < 2 or not _global(idx := x.src[0]) or (b := _moved_bits(x.src[1])) is None: return None
  return x.replace(src=(_u16_ptr(idx), b, *x.src[2:]))
def _bitcast_bits(x: UOp) -> UOp | None:
  if x.dtype.scalar().itemsize != 2 or x.dtype.count != x.src[0].dtype.count or (b := _moved_bits(x.src[0])) is None: return None
  return b if x.dtype.scalar() == dtypes.uint16 else b.bitcast(x.dtype)
pm_keep_bits = PatternMatcher([
  (UPat(Ops.STORE, name="x"), _store_bits),                                 # store(p, moved f16) -> store((u16*)p, its bits)
  (UPat(Ops.BITCAST, src=(UPat(dtype=_F16),), name="x"), _bitcast_bits),    # bitcast(moved f16) -> its bits, bitcast
])
