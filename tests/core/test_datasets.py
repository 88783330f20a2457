"""nn.datasets.mnist(): tiny files in MNIST's idx format served from 127.0.0.1, downloaded through helpers.fetch into the cache."""
import functools, gzip, http.server, struct, threading
import numpy as np
import pytest
from tinygrad import dtypes
from tinygrad.nn.datasets import mnist

def _idx(arr: np.ndarray) -> bytes:
  return struct.pack(">I", 0x800 | arr.ndim) + struct.pack(f">{arr.ndim}I", *arr.shape) + arr.astype(np.uint8).tobytes()

@pytest.fixture
def mnist_server(tmp_path):
  root = tmp_path / "www"
  root.mkdir()
  rng = np.random.default_rng(0)
  data = {"train-images-idx3-ubyte": rng.integers(0, 256, (6, 28, 28)), "train-labels-idx1-ubyte": rng.integers(0, 10, (6,)),
          "t10k-images-idx3-ubyte": rng.integers(0, 256, (3, 28, 28)), "t10k-labels-idx1-ubyte": rng.integers(0, 10, (3,))}
  for name, arr in data.items(): (root / f"{name}.gz").write_bytes(gzip.compress(_idx(arr)))
  handler = type("H", (http.server.SimpleHTTPRequestHandler,), {"log_message": lambda *a: None})
  srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(handler, directory=str(root)))
  threading.Thread(target=srv.serve_forever, daemon=True).start()
  try: yield f"http://127.0.0.1:{srv.server_address[1]}/", data, root
  finally:
    srv.shutdown()
    srv.server_close()

def test_mnist_shapes_values_and_cache(mnist_server, tmp_path, monkeypatch):
  url, data, root = mnist_server
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
  X, Y, Xt, Yt = mnist(base_url=url)
  assert X.shape == (6, 1, 28, 28) and Y.shape == (6,) and Xt.shape == (3, 1, 28, 28) and Yt.shape == (3,)
  assert X.dtype == dtypes.uint8 and Y.dtype == dtypes.uint8
  np.testing.assert_array_equal(X.numpy()[:, 0], data["train-images-idx3-ubyte"])
  np.testing.assert_array_equal(Yt.numpy(), data["t10k-labels-idx1-ubyte"])
  cached = tmp_path / "cache" / "tinygrad" / "downloads" / "mnist"
  assert sorted(p.name for p in cached.iterdir()) == sorted(data)
  for p in root.iterdir(): p.unlink()     # the server has nothing now: a second call reads the cache
  np.testing.assert_array_equal(mnist(base_url=url)[1].numpy(), data["train-labels-idx1-ubyte"])

def test_mnist_rejects_a_file_that_is_not_idx(mnist_server, tmp_path, monkeypatch):
  url, _, root = mnist_server
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
  (root / "train-images-idx3-ubyte.gz").write_bytes(gzip.compress(b"<html>not found</html>"))
  with pytest.raises(ValueError, match="not an MNIST idx file"): mnist(base_url=url)

def _cifar_archive(root, rng):
  import io, tarfile
  batches = {f"data_batch_{i}": rng.integers(0, 256, (2, 3073)) for i in range(1, 6)} | {"test_batch": rng.integers(0, 256, (3, 3073))}
  for b in batches.values(): b[:, 0] %= 10
  buf = io.BytesIO()
  with tarfile.open(fileobj=buf, mode="w") as tar:
    for name, arr in batches.items():
      data = arr.astype(np.uint8).tobytes()
      info = tarfile.TarInfo(f"cifar-10-batches-bin/{name}.bin")
      info.size = len(data)
      tar.addfile(info, io.BytesIO(data))
  (root / "cifar-10-binary.tar.gz").write_bytes(gzip.compress(buf.getvalue()))
  return batches

def test_cifar_reads_public_tinygrads_layout(mnist_server, tmp_path, monkeypatch):
  from tinygrad.nn.datasets import cifar
  url, _, root = mnist_server
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
  b = _cifar_archive(root, np.random.default_rng(1))
  X, Y, Xt, Yt = cifar(url=url + "cifar-10-binary.tar.gz", offline_fallback=False)
  assert X.shape == (10, 3, 32, 32) and Y.shape == (10,) and Xt.shape == (3, 3, 32, 32) and Yt.shape == (3,) and X.dtype == Y.dtype == dtypes.uint8
  train = np.concatenate([b[f"data_batch_{i}"] for i in range(1, 6)])
  np.testing.assert_array_equal(X.numpy(), train[:, 1:].reshape(-1, 3, 32, 32))
  np.testing.assert_array_equal(Y.numpy(), train[:, 0])
  np.testing.assert_array_equal(Yt.numpy(), b["test_batch"][:, 0])

def _offline_url(tmp_path, monkeypatch, name: str = "") -> str:
  import socket
  monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
  with socket.socket() as s:   # a port nothing listens on: the download fails as offline
    s.bind(("127.0.0.1", 0))
    return f"http://127.0.0.1:{s.getsockname()[1]}/{name}"

def test_cifar_offline_warns_and_generates_or_raises(tmp_path, monkeypatch):
  import functools, urllib.error
  from tinygrad.nn import datasets
  url = _offline_url(tmp_path, monkeypatch, "cifar-10-binary.tar.gz")
  with pytest.raises(urllib.error.URLError): datasets.cifar(url=url, offline_fallback=False)
  monkeypatch.setattr(datasets, "_generated_cifar", functools.partial(datasets._generated_cifar, n_train=40, n_test=20))
  with pytest.warns(RuntimeWarning, match="GENERATED data of CIFAR-10's shapes"): X, Y, Xt, Yt = datasets.cifar(url=url)
  assert X.shape == (40, 3, 32, 32) and Xt.shape == (20, 3, 32, 32) and X.dtype == Y.dtype == dtypes.uint8
  x, y = X.numpy().astype(np.float32), Y.numpy()
  means = np.stack([x[y == c].mean((0, 2, 3)) for c in np.unique(y)])
  assert np.ptp(means, axis=0).max() > 20   # the classes differ (a colour cast each): something to learn

def test_mnist_offline_warns_and_generates_or_raises(tmp_path, monkeypatch):
  import functools, urllib.error
  from tinygrad.nn import datasets
  url = _offline_url(tmp_path, monkeypatch)
  with pytest.raises(urllib.error.URLError): datasets.mnist(base_url=url, offline_fallback=False)
  monkeypatch.setattr(datasets, "_generated_mnist", functools.partial(datasets._generated_mnist, n_train=60, n_test=20))
  with pytest.warns(RuntimeWarning, match="GENERATED data of MNIST's shapes"): X, Y, Xt, Yt = datasets.mnist(base_url=url)
  assert X.shape == (60, 1, 28, 28) and Xt.shape == (20, 1, 28, 28) and Y.shape == (60,) and X.dtype == Y.dtype == dtypes.uint8
  x, y = X.numpy().astype(np.float32).reshape(60, -1), Y.numpy()
  means = np.stack([x[y == c].mean(0) for c in np.unique(y)])
  assert np.ptp(means, axis=0).max() > 60   # the classes differ (blobs at other places): something to learn
  with pytest.warns(RuntimeWarning, match="Fashion-MNIST"): datasets.mnist(base_url=url, fashion=True)
