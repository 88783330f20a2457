"""The beautiful_mnist CNN's training step (examples/models/cnn.py: cross entropy, Adam, a TinyJit step), the same batch
every call; torch: the same weights, step and optimizer through examples/models/torch_ref.py. The outputs compared are the
first calls' losses, so the second and third check the first steps' gradients and updates too."""
from __future__ import annotations
import os
import numpy as np
from workloads import FRAMEWORKS_ALL, Call, example, tinygrad_load, tinygrad_weights, torch_state

ROWS = {"cnn_train": dict(title="beautiful_mnist CNN training step, batch 128, Adam, TinyJit", bs=128, lr=1e-3, seed=0)}
QUICK = {"cnn_train": dict(title="beautiful_mnist CNN training step, batch 4, Adam, TinyJit", bs=4, lr=1e-3, seed=0)}
FRAMEWORKS = FRAMEWORKS_ALL
TOL = (1e-3, 1e-3)

def prepare(c: dict) -> None:
  from tinygrad import Tensor
  Tensor.manual_seed(c["seed"])
  tinygrad_weights(example("models/cnn.py").Model(), os.path.join(c["data"], "weights.safetensors"))
  rng = np.random.default_rng(c["seed"])
  np.save(os.path.join(c["data"], "x.npy"), rng.standard_normal((c["bs"], 1, 28, 28), dtype=np.float32))
  np.save(os.path.join(c["data"], "y.npy"), rng.integers(0, 10, c["bs"]).astype(np.int32))

def build(framework: str, c: dict) -> Call:
  x, y = (np.load(os.path.join(c["data"], f"{n}.npy"), allow_pickle=False) for n in ("x", "y"))
  weights = os.path.join(c["data"], "weights.safetensors")
  if framework == "torch":
    import torch
    step = example("models/torch_ref.py").cnn_trainer(torch_state(weights), c["lr"])
    xt, yt = torch.from_numpy(x), torch.from_numpy(y.astype(np.int64))
    return lambda: {"loss": step(xt, yt).numpy()}
  from tinygrad import Tensor
  from tinygrad.engine.jit import TinyJit
  from tinygrad.nn.optim import Adam
  from tinygrad.nn.state import get_parameters
  cnn = example("models/cnn.py")
  model = cnn.Model()
  tinygrad_load(model, weights)
  jstep = TinyJit(cnn.make_train_step(model, Adam(get_parameters(model), lr=c["lr"])))
  xg, yg = Tensor(x).realize(), Tensor(y).realize()
  return lambda: {"loss": jstep(xg, yg).numpy()}
