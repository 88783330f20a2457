"""ResNet-18 inference (examples/models/resnet.py, torchvision's layout), random weights with random batchnorm statistics,
jitted on the tinygrads; torch: the same weights through examples/models/torch_ref.py."""
from __future__ import annotations
import os
import numpy as np
from workloads import FRAMEWORKS_ALL, Call, example, tinygrad_load, tinygrad_weights, torch_state

_BASE = dict(depth=18, width=64, size=224, classes=1000, seed=0)
ROWS = {"resnet18_b1": dict(_BASE, title="ResNet-18 inference, batch 1, 224x224", bs=1),
        "resnet18_b32": dict(_BASE, title="ResNet-18 inference, batch 32, 224x224", bs=32, runs=3)}
QUICK = {"resnet18_b1": dict(_BASE, title="ResNet-18 (width 8) inference, batch 1, 32x32", bs=1, width=8, size=32, classes=10),
         "resnet18_b32": dict(_BASE, title="ResNet-18 (width 8) inference, batch 4, 32x32", bs=4, width=8, size=32, classes=10)}
FRAMEWORKS = FRAMEWORKS_ALL
TOL = (1e-3, 1e-3)

def prepare(c: dict) -> None:
  from tinygrad import Tensor
  Tensor.manual_seed(c["seed"])
  tinygrad_weights(example("models/resnet.py").ResNet(c["depth"], c["classes"], c["width"]), os.path.join(c["data"], "weights.safetensors"))
  np.save(os.path.join(c["data"], "x.npy"), np.random.default_rng(c["seed"]).standard_normal((c["bs"], 3, c["size"], c["size"]), dtype=np.float32))

def build(framework: str, c: dict) -> Call:
  x = np.load(os.path.join(c["data"], "x.npy"), allow_pickle=False)
  weights = os.path.join(c["data"], "weights.safetensors")
  if framework == "torch":
    import torch
    ref, p, xt = example("models/torch_ref.py"), torch_state(weights), torch.from_numpy(x)
    def call_torch() -> dict[str, np.ndarray]:
      with torch.no_grad(): return {"logits": ref.resnet(p, xt, c["depth"]).numpy()}
    return call_torch
  from tinygrad import Tensor
  from tinygrad.engine.jit import TinyJit
  model = example("models/resnet.py").ResNet(c["depth"], c["classes"], c["width"])
  tinygrad_load(model, weights)
  run = TinyJit(lambda t: model(t).realize())
  xg = Tensor(x).realize()
  return lambda: {"logits": run(xg).numpy()}
