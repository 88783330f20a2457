"""ResNet-18 inference from an ONNX file: torch's ResNet-18 (defined here, torchvision's layout, random weights and
batchnorm statistics) exported with torch.onnx.export, then run by our tinygrad.nn.onnx.OnnxRunner, by public tinygrad
0.14's OnnxRunner, and (the reference column, "torch") by onnxruntime on the CPU. The tinygrads are jitted."""
from __future__ import annotations
import os
import numpy as np
from workloads import Call

_BASE = dict(width=64, size=224, classes=1000, seed=0, opset=17)
ROWS = {"onnx_resnet18_b1": dict(_BASE, title="ONNX ResNet-18, batch 1, 224x224 (torch column: onnxruntime)", bs=1)}
QUICK = {"onnx_resnet18_b1": dict(_BASE, title="ONNX ResNet-18 (width 8), batch 1, 32x32 (torch column: onnxruntime)", bs=1, width=8, size=32, classes=10)}
FRAMEWORKS = ("ours", "tinygrad", "torch")
TOL = (1e-3, 1e-3)

def _torch_resnet18(width: int, classes: int):
  import torch
  nn = torch.nn
  class Block(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
      super().__init__()
      self.conv1, self.bn1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.BatchNorm2d(cout)
      self.conv2, self.bn2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.BatchNorm2d(cout)
      self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout)) if stride != 1 or cin != cout else nn.Identity()
    def forward(self, x): return (self.bn2(self.conv2(self.bn1(self.conv1(x)).relu())) + self.down(x)).relu()
  w = width
  chans = [w, 2 * w, 4 * w, 8 * w]
  layers, cin = [], w
  for i, c in enumerate(chans):
    layers += [Block(cin, c, 1 if i == 0 else 2), Block(c, c, 1)]
    cin = c
  return nn.Sequential(nn.Conv2d(3, w, 7, 2, 3, bias=False), nn.BatchNorm2d(w), nn.ReLU(), nn.MaxPool2d(3, 2, 1), *layers,
                       nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8 * w, classes))

def prepare(c: dict) -> None:
  import io, warnings, torch
  torch.manual_seed(c["seed"])
  m = _torch_resnet18(c["width"], c["classes"]).eval()
  for mod in m.modules():   # random statistics, so batchnorm's terms are all exercised
    if isinstance(mod, torch.nn.BatchNorm2d):
      mod.running_mean.uniform_(-0.1, 0.1)
      mod.running_var.uniform_(0.5, 1.5)
  x = np.random.default_rng(c["seed"]).standard_normal((c["bs"], 3, c["size"], c["size"]), dtype=np.float32)
  f = io.BytesIO()
  with warnings.catch_warnings(), torch.no_grad():
    warnings.simplefilter("ignore")
    torch.onnx.export(m, (torch.from_numpy(x),), f, dynamo=False, opset_version=c["opset"], input_names=["input"], output_names=["logits"])
  with open(os.path.join(c["data"], "model.onnx"), "wb") as fh: fh.write(f.getvalue())
  np.save(os.path.join(c["data"], "x.npy"), x)

def build(framework: str, c: dict) -> Call:
  path, x = os.path.join(c["data"], "model.onnx"), np.load(os.path.join(c["data"], "x.npy"), allow_pickle=False)
  if framework == "torch":
    import onnxruntime as ort
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    return lambda: {"logits": sess.run(None, {"input": x})[0]}
  from tinygrad import Tensor
  from tinygrad.engine.jit import TinyJit
  if framework == "ours":
    from tinygrad.nn.onnx import OnnxRunner
    runner = OnnxRunner(path)
  else:   # public tinygrad 0.14: its runner takes the file's path
    try: from tinygrad.nn.onnx import OnnxRunner as PublicRunner
    except ImportError: from tinygrad.frontend.onnx import OnnxRunner as PublicRunner  # type: ignore[no-redef]
    runner = PublicRunner(path)
  run = TinyJit(lambda t: runner({"input": t})["logits"].realize())
  xt = Tensor(x).realize()
  return lambda: {"logits": run(xt).numpy()}
