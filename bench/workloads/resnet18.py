"""ResNet-18 inference (examples/models/resnet.py, torchvision's layout), random weights with random batchnorm statistics,
jitted on the tinygrads; torch: the same weights through examples/models/torch_ref.py."""
from __future__ import annotations
from workloads import FRAMEWORKS_ALL, Call, example, image_build, image_prepare

_BASE = dict(depth=18, width=64, size=224, classes=1000, seed=0)
ROWS = {"resnet18_b1": dict(_BASE, title="ResNet-18 inference, batch 1, 224x224", bs=1),
        "resnet18_b32": dict(_BASE, title="ResNet-18 inference, batch 32, 224x224", bs=32, runs=3)}
QUICK = {"resnet18_b1": dict(_BASE, title="ResNet-18 (width 8) inference, batch 1, 32x32", bs=1, width=8, size=32, classes=10),
         "resnet18_b32": dict(_BASE, title="ResNet-18 (width 8) inference, batch 4, 32x32", bs=4, width=8, size=32, classes=10)}
FRAMEWORKS = FRAMEWORKS_ALL
TOL = (1e-3, 1e-3)

def _model(c: dict):
  return example("models/resnet.py").ResNet(c["depth"], c["classes"], c["width"])

def prepare(c: dict) -> None: image_prepare(c, _model)

def build(framework: str, c: dict) -> Call: return image_build(framework, c, _model, lambda ref, p, x: ref.resnet(p, x, c["depth"]))
