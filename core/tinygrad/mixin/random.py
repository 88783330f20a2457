# mypy: disable-error-code="misc"
"""Tensor methods, random numbers (threefry2x32-20 on the device), dropout, multinomial, randperm, initialisers."""
from __future__ import annotations
import math
import functools
import operator
from typing import TYPE_CHECKING, Any, Callable
from tinygrad.dtype import DType, dtypes, to_dtype, truncate_float
from tinygrad.helpers import prod, argfix, all_int, engine_locked, ENGINE_LOCK
from tinygrad.mixin.common import _canon_device, _dtname, ArgumentError, AssertedArgumentError, DTypeKindError
if TYPE_CHECKING: from tinygrad.tensor import Tensor


def _below(x: float, dt: DType) -> float:
  """The largest value of float dtype `dt` below x."""
  if dt == dtypes.float64: return math.nextafter(x, -math.inf)
  v = truncate_float(x, dt)
  if v < x: return v
  e, m = dtypes.finfo(dt)
  emin = 2 - 2 ** (e - 1)   # the smallest normal exponent: |v| in [2**emin, 2**(emin+1)) has the subnormals' spacing
  if v == 0: return -2.0 ** (emin - m)
  ex = math.frexp(v)[1] - 1   # |v| in [2**ex, 2**(ex+1))
  ulp = 2.0 ** (max(ex, emin) - m)
  return v - (ulp / 2 if v > 0 and abs(v) == 2.0 ** ex and ex > emin else ulp)   # below a power of two the spacing halves

def _requires_grad_kwarg(name: str, kwargs: dict) -> bool | None:
  # the random constructors' only other keywords (public tinygrad's rand also takes contiguous=, which changes no value
  # here): anything else is a typo or torch's generator=, and raises instead of being dropped
  if bad := sorted(set(kwargs) - {"requires_grad", "contiguous"}):
    raise TypeError(f"Tensor.{name}() got unexpected keyword argument(s) {', '.join(bad)}; valid: device, dtype, requires_grad")
  return kwargs.get("requires_grad")

_DRAW_MAX = 2**32 - 1   # the most elements one call of the generator draws (its per-element counter is a uint32)

class RandomMixin:
  # the Tensor class is assembled from mixins (tensor.py); `Tensor` here is bound to it once it exists
  # ---- random: threefry2x32-20 run as kernels on the tensor's device, keyed by the seed, counted per device ----
  # Each device holds a realized uint32 state [key0, key1, calls]. A random call snapshots it and bumps `calls` in place
  # (one schedule: the scheduler orders the snapshot's read before the assign's write), then hashes the counter block
  # (element index, calls) under the key. Under TinyJit the snapshot and the bump are captured kernels, so every replay
  # draws fresh numbers; manual_seed rewrites the same buffers, so it also reaches captured jits. The snapshot and the bump
  # run when the random tensor is built (two 3-element kernels), so the numbers follow call order, not realize order.
  # (a state lives in a buffer of the opened device it was made on: after Device.reset() that device is gone, and a state
  # of it is dropped, never assigned: a reopened WEBGPU rejects the old device's buffers)
  _rng_states: dict[str, tuple[Any, Tensor]] = {}
  _draws = 0   # random calls so far (graphcache.py: a method that draws is no graph template)
  @staticmethod
  @engine_locked   # (a draw on another thread between the key's and the counters' reset would use the new key, old counter)
  def manual_seed(seed: int = 0) -> None:
    """Seed the random generator: key = seed, every device's counter back to 0, so what follows is reproducible on any device."""
    from tinygrad.device import Device
    # (as torch) the key is the seed's 64 bits: 2**64 was silently the stream of 0; a float failed on '&' in the first draw
    if hasattr(type(seed), "__index__"): seed = operator.index(seed)   # (numpy ints too)
    if not isinstance(seed, int) or not -2**63 <= seed < 2**64:
      raise ValueError(f"manual_seed: seed must be an int in [-2**63, 2**64), got {seed!r}")
    Tensor._seed = seed
    for dev, (opened, st) in list(Tensor._rng_states.items()):
      if Device.opened(dev) is opened: st.assign(Tensor._rng_init(dev)).realize()
      else: del Tensor._rng_states[dev]
  @staticmethod
  def _rng_state(dev: str) -> Tensor:
    """The device's generator state (made on first use, and again when the device was reopened)."""
    from tinygrad.device import Device
    opened = Device[dev]
    if (ent := Tensor._rng_states.get(dev)) is None or ent[0] is not opened: ent = Tensor._rng_states[dev] = (opened, Tensor._rng_init(dev))
    return ent[1]
  @staticmethod
  def _rng_init(dev: str) -> Tensor:
    return Tensor([Tensor._seed & 0xFFFFFFFF, (Tensor._seed >> 32) & 0xFFFFFFFF, 0], dtype=dtypes.uint32, device=dev)
  @staticmethod
  def _iota(n: int, dev: str) -> Tensor:
    """0..n-1 as uint32 from base-256 digits (tiny uploaded aranges, broadcast and summed): no O(n) scan, no host n-array."""
    digits = max(1, math.ceil(math.log(max(n, 2), 256) - 1e-9))
    base = Tensor(list(range(256)), dtype=dtypes.uint32, device=dev)
    ret = functools.reduce(Tensor.add, (base.reshape(*[1] * k, 256, *[1] * (digits - k - 1)) * (256 ** (digits - k - 1)) for k in range(digits)))
    return ret.expand((256,) * digits).flatten().shrink(((0, n),))
  @staticmethod
  def _threefry2x32(c0: Tensor, c1: Tensor, k0: Tensor, k1: Tensor) -> tuple[Tensor, Tensor]:
    """Random123's threefry2x32 with 20 rounds on uint32 tensors (counter block (c0, c1), key (k0, k1)) -> 2 output words."""
    ks = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA)
    x0, x1 = c0 + k0, c1 + k1
    for i in range(20):
      r = (13, 15, 26, 6, 17, 29, 16, 24)[i % 8]   # the rotation constants R_32x2
      x0 = x0 + x1
      x1 = ((x1 << r) | (x1 >> (32 - r))) ^ x0
      if i % 4 == 3:   # key injection every 4 rounds
        s = i // 4 + 1
        x0, x1 = x0 + ks[s % 3], x1 + ks[(s + 1) % 3] + s
    return x0, x1
  @staticmethod
  def _random_bits(shape: tuple[int, ...], device: str | None) -> tuple[Tensor, Tensor]:
    """Two independent uint32 words per element of `shape` (numel > 0), advancing the device's counter by one call."""
    if isinstance(device, (tuple, list)):
      raise ValueError(f"random tensors are drawn on one device, got {device}: draw on one and .shard() it, or use rand_like of a sharded tensor")
    # (a symbolic size counted draws with a UOp: TypeError deep in here; public tinygrad raises ValueError, as this does)
    if not all_int(shape):
      raise ArgumentError(f"random tensors need a concrete shape, got {shape}: draw the variable's largest size and shrink it to the variable")
    dev, num = _canon_device(device), prod(shape)
    if num > _DRAW_MAX:
      # the counter of one call is a uint32 per element: a larger draw is several calls' draws, one after another (as many
      # counter steps); public tinygrad draws them too
      parts = [Tensor._random_bits((min(_DRAW_MAX, num - i),), dev) for i in range(0, num, _DRAW_MAX)]
      return Tensor.cat(*[p[0] for p in parts]).reshape(shape), Tensor.cat(*[p[1] for p in parts]).reshape(shape)
    # the state is shared by every thread: its snapshot and bump run as one step under ENGINE_LOCK (two threads interleaving
    # them drew the same numbers, or failed with a KeyError in realize; two first draws made two states)
    with ENGINE_LOCK:
      st = Tensor._rng_state(dev)
      Tensor._draws += 1
      snap = st.contiguous()
      st.assign(st + Tensor.ones(1, dtype=dtypes.uint32, device=dev).pad(((2, 0),)))
      Tensor.realize(snap, st)
    k0, k1, calls = (snap.shrink(((i, i + 1),)) for i in range(3))
    x0, x1 = Tensor._threefry2x32(Tensor._iota(num, dev), calls, k0, k1)
    return x0.reshape(shape), x1.reshape(shape)
  @staticmethod
  def _uniform_bits(x0: Tensor, x1: Tensor, dtype: DType) -> Tensor:
    """Bits -> [0, 1): float64 from 52 bits (26 of each word, exact sum); other floats by mantissa fill in float32 with only
    as many bits as the target keeps (float32 23, float16 10, bfloat16 7, fp8 3 or 2), so the cast is exact and never rounds up to 1."""
    if dtype == dtypes.float64: return (x0 >> 6).cast(dtypes.float64) * 2.0**-26 + (x1 >> 6).cast(dtypes.float64) * 2.0**-52
    m = min(dtypes.finfo(dtype)[1], 23)   # (fp8: 3 or 2 bits)
    return (((x0 >> (32 - m)) << (23 - m)) | 0x3F800000).bitcast(dtypes.float32).sub(1.0).cast(dtype)
  @staticmethod
  def _random_dtype(name: str, dtype: DType | str | None, kind: str = "float") -> DType:
    dt = to_dtype(dtype) if dtype is not None else dtypes.default_float
    ok, valid = (dtypes.is_float, dtypes.floats) if kind == "float" else (dtypes.is_int, dtypes.ints)
    if not ok(dt): raise DTypeKindError(f"{name} needs {'a float' if kind == 'float' else 'an int'} dtype, got {_dtname(dt)}; valid: {', '.join(map(_dtname, valid))}")
    return dt
  @staticmethod
  def rand(*shape: Any, device: str | None = None, dtype: DType | str | None = None, **kwargs: Any) -> Tensor:
    """Uniform random values in [0, 1), generated on `device` (threefry2x32; see manual_seed)."""
    sh, dt, rg = argfix(*shape), Tensor._random_dtype("rand", dtype), _requires_grad_kwarg("rand", kwargs)
    ret = Tensor.zeros(sh, dtype=dt, device=device) if prod(sh) == 0 else Tensor._uniform_bits(*Tensor._random_bits(sh, device), dt)
    ret.requires_grad = rg
    return ret
  @staticmethod
  def randn(*shape: Any, device: str | None = None, dtype: DType | str | None = None, **kwargs: Any) -> Tensor:
    """Standard normal random values (Box-Muller on two uniforms per element, in float32; float64 in float64)."""
    sh, dt, rg = argfix(*shape), Tensor._random_dtype("randn", dtype), _requires_grad_kwarg("randn", kwargs)
    if prod(sh) == 0: ret = Tensor.zeros(sh, dtype=dt, device=device)
    else:
      x0, x1 = Tensor._random_bits(sh, device)
      cdt = dtypes.float64 if dt == dtypes.float64 else dtypes.float32
      # 1 - u is in (0, 1]: the log stays finite (|z| <= 5.8 in float32)
      u1, u2 = (1.0 - (x0 >> 8).cast(cdt) * 2.0**-24), (x1 >> 8).cast(cdt) * 2.0**-24
      ret = ((-2.0 * u1.log()).sqrt() * (u2 * (2 * math.pi)).cos()).cast(dt)
    ret.requires_grad = rg
    return ret
  @staticmethod
  def randint(*shape: Any, low: int = 0, high: int = 10, device: str | None = None, dtype: DType | str = dtypes.int32, **kwargs: Any) -> Tensor:
    """Random integers in [low, high): the high word of bits * (high - low) (bias below (high-low)/2**32), or for a range
    above 2**32 (64-bit dtypes) the 64-bit bits modulo the range (bias below range/2**64)."""
    if not isinstance(low, int) or not isinstance(high, int): raise TypeError(f"randint: low and high must be ints, got {low!r}, {high!r}")
    if high <= low: raise ValueError(f"randint: high ({high}) must be greater than low ({low})")
    _requires_grad_kwarg("randint", kwargs)
    dt, sh = Tensor._random_dtype("randint", dtype, "int"), argfix(*shape)
    if low < dtypes.min(dt) or high - 1 > dtypes.max(dt):  # type: ignore[operator]
      raise ValueError(f"randint: [{low}, {high}) does not fit {_dtname(dt)} ([{dtypes.min(dt)}, {dtypes.max(dt)}]); use a wider dtype")
    if prod(sh) == 0: return Tensor.zeros(sh, dtype=dt, device=device)
    x0, x1 = Tensor._random_bits(sh, device)
    r = high - low
    if r > 2**32: v = ((x1.cast(dtypes.uint64) << 32) | x0.cast(dtypes.uint64)) % r
    else:   # mulhi32(x0, r) from 16-bit limbs: every partial product fits uint32
      al, ah, bl, bh = x0 & 0xFFFF, x0 >> 16, r & 0xFFFF, r >> 16
      mid = ((al * bl) >> 16) + ((al * bh) & 0xFFFF) + ((ah * bl) & 0xFFFF)
      v = ah * bh + ((al * bh) >> 16) + ((ah * bl) >> 16) + (mid >> 16)
    udt, sdt = (dtypes.uint64, dtypes.int64) if dt.itemsize == 8 else (dtypes.uint32, dtypes.int32)
    w = v.cast(udt) + low % 2**(8 * udt.itemsize)   # unsigned adds wrap: exact modulo 2**bits, and the result fits dt
    return w.cast(dt) if dtypes.is_unsigned(dt) else w.bitcast(sdt).cast(dt)
  @staticmethod
  def randperm(n: int, device: str | None = None, dtype: DType | str = dtypes.int32, **kwargs: Any) -> Tensor:
    """A random permutation of 0..n-1: the rank of each index's random key (ties by index), as n x n kernels (for modest n)."""
    dt = Tensor._random_dtype("randperm", dtype, "int")
    _requires_grad_kwarg("randperm", kwargs)
    if n < 0: raise ValueError(f"randperm: n must be >= 0, got {n}")
    # like torch: n-1 must fit the dtype, else the cast wraps large indices into repeats
    if n - 1 > dtypes.max(dt): raise ValueError(f"randperm: {n} indices do not fit {_dtname(dt)} (max {dtypes.max(dt)}); use a wider dtype")
    if n == 0: return Tensor.zeros(0, dtype=dt, device=device)
    keys = Tensor._random_bits((n,), device)[0]
    return Tensor._rank_select(keys.unsqueeze(0), n)[0].cast(dt)
  @staticmethod
  def _rank_select(keys: Tensor, k: int) -> Tensor:
    """For each row of `keys` (b, n), the indices of its k largest keys, largest first (equal keys: lower index first)."""
    n, dev = keys.shape[-1], keys.device
    ar = Tensor._iota(n, dev).cast(dtypes.int32)
    ki, kj = keys.unsqueeze(-1), keys.unsqueeze(-2)
    before = (kj > ki) | ((kj == ki) & (ar.unsqueeze(0) < ar.unsqueeze(1)))   # [.., i, j]: j ranks ahead of i
    rank = before.sum(-1, dtype=dtypes.int32)                                    # (b, n): a permutation of 0..n-1 per row
    hit = rank.unsqueeze(-2) == ar.shrink(((0, k),)).unsqueeze(-1)               # (b, k, n): index i has rank r
    return hit.where(ar, 0).sum(-1, dtype=dtypes.int32)
  def multinomial(self: Tensor, num_samples: int = 1, replacement: bool = False) -> Tensor:
    """Indices (int32) drawn from the categories weighted by this 1-d (n,) or 2-d (b, n) tensor, like torch.multinomial:
    with replacement by searching the normalized cumulative sum, without it by the largest log(u)/w keys (exponential races,
    the same law as drawing one by one); zero-weight categories come only after every positive one."""
    if self.ndim not in (1, 2): raise AssertedArgumentError(f"multinomial needs 1-d or 2-d weights, got shape {self.shape}")
    if num_samples < 1: raise AssertedArgumentError(f"multinomial: num_samples must be >= 1, got {num_samples}")
    w = (self.unsqueeze(0) if self.ndim == 1 else self)._float()
    if w.dtype.itemsize < 4: w = w.cast(dtypes.float32)   # (a half cumsum overflows past 65504)
    # each row over its largest weight: the cumsum of [3e38, 3e38] was inf (always index 1), and log(u)/w of weights near
    # 1e-40 was -inf for all (a tie, won by the lowest index); rows with no positive weight stay as they are
    top = w.max(1, keepdim=True)
    w = w / (top > 0).where(top, 1)
    b, n = w.shape
    if n == 0: raise AssertedArgumentError(f"multinomial: the weights have no categories (shape {self.shape})")
    if not replacement and num_samples > n:
      raise AssertedArgumentError(f"multinomial without replacement: num_samples ({num_samples}) > number of categories ({n}); use replacement=True")
    if replacement:
      cdf = w.cumsum(1)
      cdf = cdf / cdf.shrink((None, (n - 1, n)))
      u = Tensor.rand(b, num_samples, 1, device=self.device, dtype=cdf.dtype)
      ret = (cdf.unsqueeze(1) <= u).sum(2, dtype=dtypes.int32).minimum(n - 1)
    else:
      u = 1.0 - Tensor.rand(b, n, device=self.device, dtype=w.dtype)   # (0, 1]
      ret = Tensor._rank_select((w > 0).where(u.log() / w, -math.inf), num_samples)
    return ret[0] if self.ndim == 1 else ret
  def dropout(self: Tensor, p: float = 0.5) -> Tensor:
    """While Tensor.training, zero each element with probability p and scale the rest by 1/(1-p); else the tensor itself."""
    if not 0 <= p <= 1: raise ValueError(f"dropout probability must be in [0, 1], got {p}")
    if p == 0 or not Tensor.training: return self
    if p == 1: return self * 0   # everything dropped (torch: x * 0, so NaN stays NaN; the gradient is 0)
    return (self.rand_like(dtype=dtypes.float32) >= p).where(self, 0) * (1 / (1 - p))
  @staticmethod
  def uniform(*shape: Any, low: float = 0.0, high: float = 1.0, **kwargs: Any) -> Tensor:
    """Uniform random values in [low, high) (float64 ones from 52 random bits)."""
    dt, rg = to_dtype(kwargs.pop("dtype", None) or dtypes.default_float), kwargs.pop("requires_grad", None)
    u = Tensor.rand(*shape, dtype=dtypes.float64 if dt == dtypes.float64 else dtypes.float32, **kwargs)   # (checks the shape first)
    # (torch: from <= to; public tinygrad: low < high, an empty range draws nothing)
    if not low < high: raise ArgumentError(f"uniform: low ({low}) must be less than high ({high})")
    # (as torch) bounds past the dtype's range drew inf, and a span past float32's (-3e38, 3e38) drew only values next to high
    if not all(math.isfinite(truncate_float(v, d)) for v, d in ((low, dt), (high, dt), (high - low, u.dtype)) if dtypes.is_float(d)):
      raise ArgumentError(f"uniform: [{low}, {high}) is out of range: the bounds must be finite in {_dtname(dt)} and high - low in {_dtname(u.dtype)}")
    ret = u * (high - low) + low
    # an int dtype takes the floor, as public tinygrad's (high-low)*u cast then + low: uniform(-5, 5, dtype=int32) is uniform on
    # -5..4 (a truncating cast gave 0 twice as often and -5 never), below high also where u*(high-low) rounds up to it
    if dtypes.is_int(dt): ret = ret.floor().minimum(math.ceil(high) - 1)
    ret = ret.cast(dt)
    # u*(high-low)+low rounds to high itself for u near 1 (uniform(0, 1, dtype=half): 1 draw in 4096; float32 (100, 101): 1 in
    # 2**18): the largest value below high instead, as if rounded down
    if dtypes.is_float(dt) and low < high and (top := _below(high, dt)) >= truncate_float(low, dt): ret = ret.minimum(top)
    ret.requires_grad = rg
    return ret
  @staticmethod
  def normal(*shape: Any, mean: float = 0.0, std: float = 1.0, **kwargs: Any) -> Tensor:
    """Normal random values with `mean` and `std`."""
    rg = kwargs.pop("requires_grad", None)
    z = Tensor.randn(*shape, **kwargs)   # (checks the shape first: kaiming_normal's std of a negative size is complex)
    if not std >= 0: raise ArgumentError(f"normal: std must be >= 0, got {std}")   # (as torch and public tinygrad)
    ret = z * std + mean
    ret.requires_grad = rg
    return ret
  @staticmethod
  def scaled_uniform(*shape: Any, **kwargs: Any) -> Tensor:
    """Uniform in [-1, 1) scaled by 1/sqrt(numel)."""
    # (an empty shape's scale is moot: 1, where 0 ** -0.5 raised ZeroDivisionError; torch initialises an empty tensor as a no-op)
    return Tensor.uniform(*shape, low=-1.0, high=1.0, **kwargs) * (max(prod(argfix(*shape)), 1) ** -0.5)
  @staticmethod
  def glorot_uniform(*shape: Any, **kwargs: Any) -> Tensor:
    """Glorot/Xavier uniform initialization."""
    sh = argfix(*shape)
    bound = (6 / max(sh[0] + prod(sh[1:]), 1)) ** 0.5   # (fans of 0 only in an empty tensor, whose bound is moot)
    return Tensor.uniform(*sh, low=-bound, high=bound, **kwargs)
  @staticmethod
  def kaiming_uniform(*shape: Any, a: float = 0.01, **kwargs: Any) -> Tensor:
    """Kaiming/He uniform initialization (leaky-relu gain with slope `a`)."""
    sh = argfix(*shape)
    bound = math.sqrt(3.0) * math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(max(prod(sh[1:]), 1))   # (fan_in 0: empty, moot)
    return Tensor.uniform(*sh, low=-bound, high=bound, **kwargs)
  @staticmethod
  def kaiming_normal(*shape: Any, a: float = 0.01, **kwargs: Any) -> Tensor:
    """Kaiming/He normal initialization."""
    sh = argfix(*shape)
    std = math.sqrt(2.0 / (1 + a ** 2)) / math.sqrt(max(prod(sh[1:]), 1))   # (fan_in 0: empty, moot)
    return Tensor.normal(*sh, mean=0.0, std=std, **kwargs)
  def _random_like(self: Tensor, fn: Callable[..., Tensor], kwargs: dict) -> Tensor:
    # an int or bool tensor's random values are the default float; a dtype given is rand's/randn's to check (an int one raises:
    # rand_like(dtype=dtypes.int32) gave float32)
    dt = kwargs.pop("dtype", None) or (self.dtype if dtypes.is_float(self.dtype) else dtypes.default_float)
    if isinstance(self.device, tuple):   # sharded like this tensor: each device draws its own shard
      if kwargs.pop("device", None) is not None: raise RuntimeError("rand_like/randn_like of a multi-device tensor take no device: the result is laid out like it")
      from tinygrad.multi import multi, shard_regions
      m = self.uop
      if m.arg is None: return self._multi_like(lambda shape, dev: fn(*shape, device=dev, dtype=dt, **kwargs))   # (drawn once, copied)
      # every device keys its generator alike: each draws the whole tensor's numbers and keeps its shard's (only those are
      # computed), so the shards differ (drawn as shards, they were the same numbers wherever the devices' counters agreed,
      # as after manual_seed) and, while the counters agree, they are the numbers one device draws for the whole tensor
      return Tensor(multi([fn(*self.shape, device=s.device, dtype=dt, **kwargs).shrink(r).uop for s, r in zip(m.src, shard_regions(m))], m.arg))
    return fn(*self.shape, device=kwargs.pop("device", self.device), dtype=dt, **kwargs)
  def rand_like(self: Tensor, **kwargs: Any) -> Tensor:
    """Uniform random values shaped (and, for a multi-device tensor, sharded) like this tensor."""
    return self._random_like(Tensor.rand, kwargs)
  def randn_like(self: Tensor, dtype: DType | str | None = None, **kwargs: Any) -> Tensor:
    """Normal random values shaped (and, for a multi-device tensor, sharded) like this tensor."""
    if dtype is not None: kwargs["dtype"] = dtype
    return self._random_like(Tensor.randn, kwargs)
