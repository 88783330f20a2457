"""Tensor.keccak (SHA-3 and SHAKE over the last dimension) and Tensor.hash (public tinygrad's 16-byte tree hash), checked
against hashlib: a wrong lane, rotation or padding changes every digest."""
import hashlib, math
import numpy as np
import pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, TinyJit, dtypes
from tinygrad.mixin.common import ArgumentError

REF = {"sha3_224": lambda m: hashlib.sha3_224(m).digest(), "sha3_256": lambda m: hashlib.sha3_256(m).digest(),
       "sha3_384": lambda m: hashlib.sha3_384(m).digest(), "sha3_512": lambda m: hashlib.sha3_512(m).digest(),
       "shake_128": lambda m: hashlib.shake_128(m).digest(16), "shake_256": lambda m: hashlib.shake_256(m).digest(32)}

def _t(m: bytes, device=None) -> Tensor:
  return Tensor(np.frombuffer(m, np.uint8).copy(), device=device) if m else Tensor.empty(0, dtype=dtypes.uint8, device=device)

@pytest.mark.parametrize("cfg", list(REF))
def test_keccak_matches_hashlib_at_the_padding_edges(cfg):
  rate = {"sha3_224": 144, "sha3_256": 136, "sha3_384": 104, "sha3_512": 72, "shake_128": 168, "shake_256": 136}[cfg]
  # empty, one byte, a block less one (the pad's two bits in one byte), a whole block, a block and one, several blocks
  for n in (0, 1, rate - 1, rate, rate + 1, 3 * rate + 5):
    m = bytes((i * 7 + 3) % 256 for i in range(n))
    assert _t(m).keccak(cfg).numpy().tobytes() == REF[cfg](m), (cfg, n)

def test_keccak_default_and_a_custom_sponge():
  assert Tensor(b"Hello World!").keccak().numpy().tobytes() == hashlib.sha3_256(b"Hello World!").digest()
  # (rate, domain byte) as public tinygrad takes them: (168, 31) is shake_128
  assert Tensor(b"abc").keccak((168, 31)).numpy().tobytes() == hashlib.shake_128(b"abc").digest(16)

@settings(max_examples=8, deadline=None)
@given(st.integers(1, 3), st.integers(1, 3), st.integers(0, 300), st.sampled_from(["sha3_256", "shake_128"]))
def test_keccak_hashes_each_row_of_a_batch(b0, b1, n, cfg):
  m = np.random.default_rng(n).integers(0, 256, (b0, b1, n), dtype=np.uint8)
  got = Tensor(m).keccak(cfg).numpy()
  assert got.shape == (b0, b1, len(REF[cfg](b"")))
  for i in range(b0):
    for j in range(b1): assert got[i, j].tobytes() == REF[cfg](m[i, j].tobytes())

def test_keccak_of_other_dtypes_hashes_their_bytes():
  x = np.arange(12, dtype=np.float32).reshape(3, 4) * 1.5 - 2
  got = Tensor(x).keccak().numpy()
  for i in range(3): assert got[i].tobytes() == hashlib.sha3_256(x[i].tobytes()).digest()

def test_keccak_many_blocks_through_its_jit_and_inside_a_users_jit():
  # 25 blocks of 8 rows (the permutation's own TinyJit), twice: the second result must not overwrite the first
  rng = np.random.default_rng(1)
  m1, m2 = (rng.integers(0, 256, (8, 4096), dtype=np.uint8) for _ in range(2))
  h1 = Tensor(m1).keccak("shake_128")
  h2 = Tensor(m2).keccak("shake_128")
  for m, h in ((m1, h1), (m2, h2)):
    got = h.numpy()
    for i in range(8): assert got[i].tobytes() == hashlib.shake_128(m[i].tobytes()).digest(16)
  @TinyJit
  def f(x: Tensor) -> Tensor: return (x ^ 1).keccak().realize()
  for k in range(4):   # run, capture, replays with new inputs
    m = rng.integers(0, 256, (2, 3 * 136 + 1), dtype=np.uint8)
    got = f(Tensor(m)).numpy()
    for i in range(2): assert got[i].tobytes() == hashlib.sha3_256((m[i] ^ 1).tobytes()).digest(), k

def _tree_hash(data: bytes) -> bytes:
  # public tinygrad's Tensor.hash: 1 MiB chunks of 256 rows of 4096 bytes, shake_128 of each row, then of the 4096 bytes
  def chunk(c: bytes) -> bytes: return hashlib.shake_128(b"".join(hashlib.shake_128(c[i:i + 4096]).digest(16) for i in range(0, 2**20, 4096))).digest(16)
  chunks = max(1, math.ceil(len(data) / 2**20))
  while True:
    data = data.ljust(chunks * 2**20, b"\0")
    data = b"".join(chunk(data[i:i + 2**20]) for i in range(0, len(data), 2**20))
    if chunks == 1: return data
    chunks = math.ceil(chunks / 65536)

def test_hash_is_public_tinygrads_tree_of_shake_128():
  # e02b050b...: Tensor(b"Hello World!").hash() in public tinygrad 0.14 too
  assert Tensor(b"Hello World!").hash().numpy().tobytes().hex() == "e02b050b7b6e9bb60f9c033633502ee3" == _tree_hash(b"Hello World!").hex()
  x = np.arange(300_000, dtype=np.float32)   # 1.2 MB: two chunks, then their digests hashed again
  h = Tensor(x).hash()
  assert h.shape == (16,) and h.dtype == dtypes.uint8 and h.numpy().tobytes() == _tree_hash(x.tobytes())

def test_keccak_refuses_what_it_cannot_hash():
  with pytest.raises(ArgumentError, match="unknown cfg"): Tensor(b"x").keccak("md5")
  with pytest.raises(ArgumentError, match="rate"): Tensor(b"x").keccak((100, 6))
  with pytest.raises(ArgumentError, match="0-d"): Tensor(3, dtype=dtypes.uint8).keccak()

def test_keccak_and_hash_of_empty_tensors():
  assert Tensor.empty(0, 10, dtype=dtypes.uint8).keccak().shape == (0, 32)
  assert Tensor.empty(2, 0, 10, dtype=dtypes.uint8).keccak("shake_128").numpy().shape == (2, 0, 16)
  assert Tensor.empty(0, dtype=dtypes.float32).hash().numpy().tobytes() == _tree_hash(b"")

def test_rows_of_bytes_and_a_symbolic_batch():
  # public tinygrad's test_variable_bs: a list of bytes is a uint8 matrix, and the batch may be a bound Variable
  from tinygrad.uop.ops import UOp
  data = Tensor([b"abc", b"abc", b"def"], dtype=dtypes.uint8).repeat(5, 1)
  assert data.shape == (15, 3) and Tensor([b"ab", b"cd"]).dtype == dtypes.uint8
  out = data.shrink_to(UOp.variable("bs", 1, 15).bind(3), 3).keccak().shrink_to(3, 32).numpy()
  assert [r.tobytes() for r in out] == [hashlib.sha3_256(m).digest() for m in (b"abc", b"abc", b"def")]
  with pytest.raises(ValueError, match="ragged"): Tensor([b"ab", b"abc"])
