"""ViT-Ti/16 forward (examples/models/vit.py), random weights, jitted on the tinygrads; torch: the same weights through
examples/models/torch_ref.py."""
from __future__ import annotations
import os
import numpy as np
from workloads import FRAMEWORKS_ALL, Call, example, tinygrad_load, tinygrad_weights, torch_state

ROWS = {"vit_ti16": dict(title="ViT-Ti/16 forward, batch 1, 224x224", layers=12, dim=192, heads=3, size=224, patch=16, classes=1000, bs=1, seed=0)}
QUICK = {"vit_ti16": dict(title="ViT (2 layers, dim 32) forward, batch 1, 32x32", layers=2, dim=32, heads=2, size=32, patch=8, classes=10, bs=1, seed=0)}
FRAMEWORKS = FRAMEWORKS_ALL
TOL = (1e-3, 1e-3)

def _model(c: dict):
  return example("models/vit.py").ViT(c["layers"], c["dim"], c["heads"], c["size"], c["patch"], c["classes"])

def prepare(c: dict) -> None:
  from tinygrad import Tensor
  Tensor.manual_seed(c["seed"])
  tinygrad_weights(_model(c), os.path.join(c["data"], "weights.safetensors"))
  np.save(os.path.join(c["data"], "x.npy"), np.random.default_rng(c["seed"]).standard_normal((c["bs"], 3, c["size"], c["size"]), dtype=np.float32))

def build(framework: str, c: dict) -> Call:
  x = np.load(os.path.join(c["data"], "x.npy"), allow_pickle=False)
  weights = os.path.join(c["data"], "weights.safetensors")
  if framework == "torch":
    import torch
    ref, p, xt = example("models/torch_ref.py"), torch_state(weights), torch.from_numpy(x)
    def call_torch() -> dict[str, np.ndarray]:
      with torch.no_grad(): return {"logits": ref.vit(p, xt, c["layers"], c["heads"], c["patch"]).numpy()}
    return call_torch
  from tinygrad import Tensor
  from tinygrad.engine.jit import TinyJit
  model = _model(c)
  tinygrad_load(model, weights)
  run = TinyJit(lambda t: model(t).realize())
  xg = Tensor(x).realize()
  return lambda: {"logits": run(xg).numpy()}
