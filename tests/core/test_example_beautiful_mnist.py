"""examples/beautiful_mnist.py trains: a few tiny jitted steps on the generated MNIST-shaped set and the loss falls."""
from __future__ import annotations
import numpy as np
from tinygrad import Tensor, dtypes
from pathimport import load_file

def load_example(): return load_file("examples/beautiful_mnist.py", "example_beautiful_mnist")

def test_generated_mnist_has_mnist_shapes():
  X_train, Y_train, X_test, Y_test = load_example().generated_mnist(64, 16)
  assert (X_train.shape, X_test.shape, Y_train.shape, Y_test.shape) == ((64, 1, 28, 28), (16, 1, 28, 28), (64,), (16,))
  assert X_train.dtype == Y_train.dtype == dtypes.uint8
  assert set(np.unique(Y_train.numpy())) <= set(range(10))

def test_beautiful_mnist_loss_falls():
  ex = load_example()
  Tensor.manual_seed(0)
  losses = ex.train(*ex.generated_mnist(256, 32), steps=8, bs=32)
  assert all(np.isfinite(losses)), losses
  # the first steps sit near ln(10) = 2.3; the jitted replays (step 3 on) must keep training, not replay step 2's loss
  assert np.mean(losses[-3:]) < 0.8 * np.mean(losses[:2]), losses
  assert len(set(losses[2:])) == len(losses[2:]), losses

def test_beautiful_mnist_data_parallel_over_two_devices_matches_one():
  # DEVICES=2: the model replicated on CPU:0 and CPU:1, each batch split between them; BatchNorm's batch statistics and
  # the gradients are all-reduced, so the losses are one device's
  ex = load_example()
  data = ex.generated_mnist(256, 32)
  Tensor.manual_seed(0)
  one = ex.train(*data, steps=2, bs=32)   # (the kernels of the test above)
  Tensor.manual_seed(0)
  two = ex.train(*data, steps=2, bs=32, devices=2)
  np.testing.assert_allclose(two, one, rtol=1e-4, atol=1e-5)
