#!/usr/bin/env python3
"""MNIST in the style of public tinygrad's examples/beautiful_mnist.py: a Conv/BatchNorm/MaxPool model, Adam, one TinyJit'd
train step in training mode (Context(TRAINING=1)) drawing its own random batch, sparse_categorical_crossentropy.

Data: nn.datasets.mnist() when its four files are already in the cache directory (nothing is downloaded here), else a small
generated MNIST-shaped set (uint8 28x28 images whose class is where a bright block sits, plus noise); SYNTH=1 forces it.

  STEPS=70 BS=512 python examples/beautiful_mnist.py      # STEPS=4 BS=16 for a tiny run; FASHION=1 for Fashion-MNIST
  mpirun -n 2 python examples/beautiful_mnist.py         # data parallel over 2 processes: each rank BS/2 of every batch
  DEVICES=2 python examples/beautiful_mnist.py            # data parallel over 2 devices in one process (CPU:0, CPU:1; DEV=NV: NV:0, NV:1)
"""
from __future__ import annotations
import os
from typing import Callable
import numpy as np
from tinygrad import Tensor, TinyJit, nn, GlobalCounters, Context, Device
from tinygrad import distributed as dist
from tinygrad.helpers import getenv, trange
from tinygrad.nn.datasets import mnist

class Model:
  def __init__(self):
    self.layers: list[Callable[[Tensor], Tensor]] = [
      nn.Conv2d(1, 32, 5), Tensor.relu,
      nn.Conv2d(32, 32, 5), Tensor.relu,
      nn.BatchNorm(32), Tensor.max_pool2d,
      nn.Conv2d(32, 64, 3), Tensor.relu,
      nn.Conv2d(64, 64, 3), Tensor.relu,
      nn.BatchNorm(64), Tensor.max_pool2d,
      lambda x: x.flatten(1), nn.Linear(576, 10)]

  def __call__(self, x: Tensor) -> Tensor: return x.sequential(self.layers)

MNIST_FILES = ("train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte")

def generated_mnist(n_train: int = 2048, n_test: int = 512, seed: int = 0) -> tuple[Tensor, Tensor, Tensor, Tensor]:
  """MNIST's shapes and dtypes (N,1,28,28) uint8 images, (N,) uint8 labels: class c is a 7x7 block at the c-th of 10 places."""
  rng = np.random.default_rng(seed)
  def make(n: int) -> tuple[Tensor, Tensor]:
    y = rng.integers(0, 10, n)
    x = rng.integers(0, 64, (n, 1, 28, 28))
    for i, c in enumerate(y):
      r, col = 2 + 12 * (c // 5), 1 + 5 * (c % 5)
      x[i, 0, r:r+7, col:col+7] += 160
    return Tensor(x.astype(np.uint8)), Tensor(y.astype(np.uint8))
  return *make(n_train), *make(n_test)

def load_data() -> tuple[Tensor, Tensor, Tensor, Tensor]:
  base = os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache")
  sub = os.path.join(base, "tinygrad", "downloads", "fashion-mnist" if getenv("FASHION") else "mnist")
  if not getenv("SYNTH") and all(os.path.isfile(os.path.join(sub, f)) for f in MNIST_FILES): return mnist(fashion=getenv("FASHION"))
  return generated_mnist()

def train(X_train: Tensor, Y_train: Tensor, X_test: Tensor, Y_test: Tensor, steps: int, bs: int, devices: int = 1) -> list[float]:
  """Train a fresh Model for `steps` steps of batch `bs` (data parallel over `devices` instances of the default device);
  the losses, one per step."""
  model = Model()
  # ---- DEVICES=n (Tensor.shard, one process): a copy of the model on every device and each batch split over them along
  # axis 0; BatchNorm's batch statistics and the replicated weights' gradients are all-reduced by the ops themselves ----
  GPUS = tuple(f"{Device.DEFAULT}:{i}" for i in range(devices)) if devices > 1 else None
  if GPUS is not None:
    for x in nn.state.get_state_dict(model).values(): x.to_(GPUS)
    X_test, Y_test = X_test.shard(GPUS, axis=0), Y_test.shard(GPUS, axis=0)
  def shard_batch(X: Tensor, Y: Tensor) -> tuple[Tensor, Tensor]: return (X, Y) if GPUS is None else (X.shard(GPUS, axis=0), Y.shard(GPUS, axis=0))
  # ----
  opt = nn.optim.Adam(nn.state.get_parameters(model))
  # under mpirun -n N (tinygrad.distributed over MPI): each rank draws its own bs/N samples of every batch, the wrapped
  # optimizer starts every rank from rank 0's weights and averages the gradients over the ranks (inside the jitted step),
  # so the ranks step together as one process on the batch of bs would
  if dist.launched():
    dist.init()
    if bs % dist.world_size(): raise ValueError(f"BS={bs} must divide among the {dist.world_size()} ranks")
    bs //= dist.world_size()
    Tensor.manual_seed(getenv("SEED", 0) * 1000 + dist.rank())
    opt = dist.DistributedOptimizer(opt)

  @TinyJit
  @Context(TRAINING=1)   # BatchNorm's batch statistics (public tinygrad 0.14 spells Tensor.train() this way)
  def train_step() -> Tensor:
    opt.zero_grad()
    samples = Tensor.randint(bs, high=X_train.shape[0])
    X, Y = shard_batch(X_train[samples], Y_train[samples])
    loss = model(X).sparse_categorical_crossentropy(Y).backward()
    return loss.realize(*opt.schedule_step())

  @TinyJit
  def get_test_acc() -> Tensor: return (model(X_test).argmax(axis=1) == Y_test).mean()*100

  test_acc, losses = float("nan"), []
  for i in (t := trange(steps)):
    GlobalCounters.reset()
    losses.append(loss := train_step().item())
    if i % 10 == 9: test_acc = get_test_acc().item()
    t.set_description(f"loss: {loss:6.2f} test_accuracy: {test_acc:5.2f}%")
  return losses

if __name__ == "__main__":
  train(*load_data(), steps=getenv("STEPS", 70), bs=getenv("BS", 512), devices=getenv("DEVICES", 1))
