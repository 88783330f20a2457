"""Datasets users train on in examples: MNIST (and Fashion-MNIST), downloaded once through helpers.fetch into the cache."""
from __future__ import annotations
import struct
from tinygrad.tensor import Tensor
from tinygrad.helpers import fetch, prod

MNIST_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
FASHION_MNIST_URL = "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/"

def _idx(url: str, subdir: str, magic: int) -> Tensor:
  # the idx format: big-endian u32 magic (0x0801 labels, 0x0803 images: uint8 data, the low byte is the rank), one u32 per dim
  raw = fetch(url, name=url.rsplit("/", 1)[-1].removesuffix(".gz"), subdir=subdir, gunzip=url.endswith(".gz")).read_bytes()
  got = struct.unpack(">I", raw[:4])[0] if len(raw) >= 4 else None
  if got != magic: raise ValueError(f"{url}: not an MNIST idx file (magic {got!r}, expected {magic:#x})")
  ndim = magic & 0xff
  dims = struct.unpack(f">{ndim}I", raw[4:4 + 4 * ndim])
  data = raw[4 + 4 * ndim:]
  if len(data) != prod(dims): raise ValueError(f"{url}: idx header says {dims} ({prod(dims)} bytes) but the file has {len(data)}")
  return Tensor(data).reshape(*dims)

def mnist(device: str | None = None, fashion: bool = False, base_url: str | None = None) -> tuple[Tensor, Tensor, Tensor, Tensor]:
  """(X_train (60000, 1, 28, 28) uint8, Y_train (60000,) uint8, X_test (10000, 1, 28, 28), Y_test (10000,)), as public tinygrad.

  The four .gz files are downloaded once into the cache directory (subdir mnist or fashion-mnist); base_url: another mirror."""
  url = base_url or (FASHION_MNIST_URL if fashion else MNIST_URL)
  sub = "fashion-mnist" if fashion else "mnist"
  def images(f: str) -> Tensor:
    x = _idx(url + f, sub, 0x803)
    return x.reshape(x.shape[0], 1, *x.shape[1:]).to(device)
  def labels(f: str) -> Tensor: return _idx(url + f, sub, 0x801).to(device)
  return images("train-images-idx3-ubyte.gz"), labels("train-labels-idx1-ubyte.gz"), images("t10k-images-idx3-ubyte.gz"), \
         labels("t10k-labels-idx1-ubyte.gz")
