# mypy: disable-error-code="misc"
"""Tensor methods, hashing on the device: keccak (SHA-3, SHAKE) over the last dimension, and public tinygrad's 16-byte
tree hash of a whole tensor. The permutation is FIPS 202's Keccak-f[1600]: the state is 25 uint64 lanes, lane (x, y) at
x + 5y, the message's bytes little-endian in them."""
from __future__ import annotations
import functools, math
from typing import TYPE_CHECKING, Callable
from tinygrad.dtype import dtypes
from tinygrad.mixin.common import ArgumentError
from tinygrad.helpers import prod, leaf_lock
from tinygrad.uop.ops import UOp
if TYPE_CHECKING: from tinygrad.tensor import Tensor

# the sponges by name: (rate in bytes, domain-separation byte); the digest is (200 - rate) // 2 bytes
KECCAK_CFGS = {"sha3_224": (144, 6), "sha3_256": (136, 6), "sha3_384": (104, 6), "sha3_512": (72, 6), "shake_128": (168, 31),
               "shake_256": (136, 31)}

def _round_constants() -> list[int]:
  # iota's 24 constants from FIPS 202's LFSR rc(t) (x^8 + x^6 + x^5 + x^4 + 1): bit 2^j - 1 of round i is rc(j + 7i)
  bits, r = [], 1
  for _ in range(7 * 24):
    bits.append(r & 1)
    r = ((r << 1) ^ 0x171) if r & 0x80 else r << 1
  return [sum(bits[j + 7 * i] << ((1 << j) - 1) for j in range(7)) for i in range(24)]

def _rho_pi() -> tuple[list[int], list[int]]:
  # rho: lane (x, y)'s rotation, (t+1)(t+2)/2 along the walk (x, y) -> (y, 2x + 3y) from (1, 0); pi: B[y, 2x + 3y] = A[x, y],
  # as the source lane of each destination lane
  rot, (x, y) = [0] * 25, (1, 0)
  for t in range(24):
    rot[x + 5 * y] = (t + 1) * (t + 2) // 2 % 64
    x, y = y, (2 * x + 3 * y) % 5
  src = [0] * 25
  for x in range(5):
    for y in range(5): src[y + 5 * ((2 * x + 3 * y) % 5)] = x + 5 * y
  return rot, src
RC, (ROT, PI_SRC) = _round_constants(), _rho_pi()

@functools.cache
def _keccak_consts(device: str) -> tuple[Tensor, Tensor]:
  """rho's rotation per lane (5, 5), and iota's constant as a row of 25 lanes per round (24, 25), on `device`."""
  from tinygrad.tensor import Tensor
  rot = Tensor(ROT, dtype=dtypes.uint64, device=device).reshape(5, 5)
  rcs = Tensor([[rc] + [0] * 24 for rc in RC], dtype=dtypes.uint64, device=device)
  return rot.realize(), rcs.realize()

_JIT_LOCK = leaf_lock()
@functools.lru_cache(maxsize=8)
def _permutation_jit(device: str, rows: int) -> Callable[[Tensor], Tensor]:
  from tinygrad.engine.jit import TinyJit
  rot, rcs = _keccak_consts(device)
  return TinyJit(lambda state: state._keccak_f(rot, rcs))

class HashingMixin:
  def _keccak_f(self: Tensor, rot: Tensor, rcs: Tensor) -> Tensor:
    """Keccak-f[1600] of each row of a realized (batch, 25) uint64 state, one kernel per round: every lane is a fixed
    function of the lanes before the round, written with movement ops only (a gather would be a reduce). Each round is
    realized: its lanes read one another, so fused across rounds every lane would compute the rounds before it again.
    The round is a bound Variable: all 24 rounds run one kernel, compiled once for each batch size."""
    bs, a = self.shape[0], self
    def nxt(t: Tensor, k: int) -> Tensor: return t.repeat(*[1] * (t.ndim - 1), 2)[..., k:k + 5]   # t[..., (x + k) % 5]
    def rotl(t: Tensor, r: Tensor | int) -> Tensor: return t << r | t >> ((64 - r) & 63)   # (r = 0: t | t, no shift by 64)
    for i in range(24):
      a5 = a.reshape(bs, 5, 5)   # [y][x]
      c = a5[:, 0] ^ a5[:, 1] ^ a5[:, 2] ^ a5[:, 3] ^ a5[:, 4]         # theta: the columns' parities
      a5 = rotl(a5 ^ (nxt(c, 4) ^ rotl(nxt(c, 1), 1)).unsqueeze(1), rot)   # ^ C[x-1] ^ rot(C[x+1], 1), then rho
      # pi, B[y, 2x + 3y] = A[x, y]: B's lane (X, Y) is A's lane ((X + 3Y) % 5, X); as u[X][Y] = a5[X][(X + 3Y) % 5], the
      # row X read from column X on (the rows tiled, then skewed one place per row by a row length of 21), every third
      u = a5.repeat(1, 1, 4).reshape(bs, 100).pad((None, (0, 5))).reshape(bs, 5, 21)[:, :, :15].reshape(bs, 5, 5, 3)[..., 0]
      b = u.transpose(1, 2)   # [Y][X]
      rc = rcs[UOp.variable("keccak_round", 0, 23).bind(i)]
      a = ((b ^ (~nxt(b, 1) & nxt(b, 2))).reshape(bs, 25) ^ rc).realize()   # chi, iota
    return a

  def keccak(self: Tensor, cfg: str | tuple[int, int] = "sha3_256") -> Tensor:
    """Keccak over the last dimension's bytes (any dtype, its bytes as they are in memory): "sha3_224", "sha3_256" (the
    default), "sha3_384", "sha3_512", "shake_128" (16 bytes out), "shake_256" (32), or (rate in bytes, domain byte). A
    uint8 tensor with the last dimension replaced by the digest's bytes; hashlib's digests for the same bytes.

    ```python
    t = Tensor(b"Hello World!").keccak()   # hashlib.sha3_256(b"Hello World!").digest()
    ```"""
    from tinygrad.tensor import Tensor
    if isinstance(cfg, str):
      if cfg not in KECCAK_CFGS: raise ArgumentError(f"keccak: unknown cfg {cfg!r}; one of {', '.join(KECCAK_CFGS)}, or (rate, domain byte)")
      cfg = KECCAK_CFGS[cfg]
    rate, dsbyte = cfg
    if not (0 < rate < 200 and rate % 8 == 0) or not 0 < dsbyte < 0x80:
      raise ArgumentError(f"keccak: rate {rate} must be a multiple of 8 below 200 and the domain byte {dsbyte} in 1..127")
    if self.ndim == 0: raise ArgumentError("keccak hashes the last dimension: a 0-d tensor has none (reshape it to (1,))")
    if not isinstance(n := self.shape[-1] * self.dtype.itemsize, int):
      raise ArgumentError("keccak needs the last dimension's size (the message length) known; the others may be symbolic")
    rows = prod(self.shape[:-1])
    data = self.contiguous().bitcast(dtypes.uint8).reshape(rows, n) if self.dtype != dtypes.uint8 else self.reshape(rows, n)
    # pad10*1 with the domain bits: the byte after the message gets dsbyte, the block's last byte 0x80 (one byte: both)
    blocks = n // rate + 1
    pad = [dsbyte] + [0] * (blocks * rate - n - 1)
    pad[-1] |= 0x80
    msg = data.cat(Tensor(pad, dtype=dtypes.uint8, device=self.device).reshape(1, -1).expand(rows, -1), dim=1)
    # each block's rate bytes xor into the state's first rate / 8 lanes
    # (realized: the blocks below are views of one buffer, not 25 lazy graphs that every TinyJit replay looks through)
    words = msg.reshape(rows, blocks, rate).bitcast(dtypes.uint64).pad((None, None, (0, 25 - rate // 8))).contiguous().realize()
    state = Tensor.zeros(rows, 25, dtype=dtypes.uint64, device=self.device).contiguous()
    from tinygrad.engine import realize as engine
    def block(k: int) -> Tensor: return words[:, UOp.variable("keccak_block", 0, blocks - 1).bind(k)]   # (one kernel for every k)
    # (inside a TinyJit's capture, or a symbolic batch: no jit of our own)
    if blocks < 3 or not isinstance(rows, int) or engine.capturing is not None or engine.observing is not None:
      rot, rcs = _keccak_consts(self.device)
      for k in range(blocks): state = (state ^ block(k)).realize()._keccak_f(rot, rcs)
    else:
      # many blocks: a TinyJit of the permutation for this batch size, so the graph of its 24 rounds is built twice, not
      # once per block (public tinygrad's 1 MiB chunk is 25 blocks of 256 rows); one caller at a time (it reuses buffers)
      with _JIT_LOCK:
        f = _permutation_jit(self.device, rows)
        for k in range(blocks): state = f((state ^ block(k)).realize())
        state = state.clone().realize()   # (the jit's output buffer is written again by its next replay)
    out = (200 - rate) // 2
    return state.bitcast(dtypes.uint8)[:, :out].reshape(*self.shape[:-1], out)

  def hash(self: Tensor) -> Tensor:
    """Public tinygrad's 16-byte hash of the whole tensor's bytes (uint8, shape (16,)): the bytes zero-padded to whole
    1 MiB chunks, each chunk as 256 rows of 4096 bytes hashed with shake_128, those 4096 bytes with shake_128 again, and
    the chunks' 16-byte digests hashed the same way until one chunk is left. The same digest as tinygrad 0.14's."""
    data = self.flatten()
    if data.dtype != dtypes.uint8: data = data.contiguous().bitcast(dtypes.uint8)
    if not isinstance(n := data.shape[0], int): raise ArgumentError("hash needs a concrete shape")
    chunks = max(1, math.ceil(n / 2**20))
    while True:
      data = data.pad((0, chunks * 2**20 - data.shape[0])).reshape(chunks * 256, 4096).keccak("shake_128").reshape(chunks, 4096)
      data = data.keccak("shake_128").flatten()
      if chunks == 1: return data
      chunks = math.ceil(chunks / 65536)
