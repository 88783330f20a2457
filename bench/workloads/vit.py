"""ViT-Ti/16 forward (examples/models/vit.py), random weights, jitted on the tinygrads; torch: the same weights through
examples/models/torch_ref.py."""
from __future__ import annotations
from workloads import FRAMEWORKS_ALL, Call, example, image_build, image_prepare

ROWS = {"vit_ti16": dict(title="ViT-Ti/16 forward, batch 1, 224x224", layers=12, dim=192, heads=3, size=224, patch=16, classes=1000, bs=1, seed=0)}
QUICK = {"vit_ti16": dict(title="ViT (2 layers, dim 32) forward, batch 1, 32x32", layers=2, dim=32, heads=2, size=32, patch=8, classes=10, bs=1, seed=0)}
FRAMEWORKS = FRAMEWORKS_ALL
TOL = (1e-3, 1e-3)

def _model(c: dict):
  return example("models/vit.py").ViT(c["layers"], c["dim"], c["heads"], c["size"], c["patch"], c["classes"])

def prepare(c: dict) -> None: image_prepare(c, _model)

def build(framework: str, c: dict) -> Call: return image_build(framework, c, _model, lambda ref, p, x: ref.vit(p, x, c["layers"], c["heads"], c["patch"]))
