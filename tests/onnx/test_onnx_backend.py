"""onnx's own backend tests (the package's node tests and its small models) through tinygrad.nn.onnx.OnnxRunner, on the
CPU device (TINYGRAD_ONNX_DEVICE picks another). Tests named in exclusions.txt are skipped, each with its reason; every
other test must pass. `make test` runs a quick subset (QUICK below); TINYGRAD_ONNX_FULL=1 (`make test-onnx`) runs them all."""
import os, re, unittest
from pathlib import Path
import pytest
onnx = pytest.importorskip("onnx", reason="the ONNX backend tests need the onnx package: pip install tinygrad-core[onnx]")
import onnx.backend.test
from onnx.backend.base import Backend, BackendRep
import ml_dtypes
from tinygrad import dtypes
from tinygrad.nn.onnx import OnnxRunner

DEVICE = os.environ.get("TINYGRAD_ONNX_DEVICE", "CPU")
FULL = os.environ.get("TINYGRAD_ONNX_FULL", "").strip() not in ("", "0")
# the quick subset (make test): the node tests of these case modules of onnx.backend.test.case.node, one or a few of each
# family of ops; only these modules are imported (generating every node test's data takes ~1 min by itself)
QUICK = ("abs", "add", "relu", "pow", "where", "reducesum", "argmax", "cumsum", "topk", "slice", "split", "concat", "transpose", "unsqueeze",
         "gather", "gathernd", "scatternd", "matmul", "gemm", "einsum", "conv", "convtranspose", "globalaveragepool", "batch_normalization",
         "instance_normalization", "groupnormalization", "quantizelinear", "dequantizelinear", "onehot", "depthtospace", "rotaryembedding", "pad",
         "convinteger", "matmulinteger", "dft", "gridsample")

def exclusions(path: Path = Path(__file__).with_name("exclusions.txt")) -> dict[str, str]:
  """The excluded tests, name -> reason: lines `test_name` under a `## reason` heading (# starts a comment)."""
  out, reason = {}, ""
  for line in path.read_text().splitlines():
    if line.startswith("## "): reason = line[3:].strip()
    elif (name := line.split("#", 1)[0].strip()): out[name] = reason
  return out

class TinygradRep(BackendRep):
  def __init__(self, runner: OnnxRunner): self.runner = runner
  def run(self, inputs, **kwargs):
    feeds = dict(zip(self.runner.inputs, inputs))
    return tuple(_numpy(t) for t in self.runner(feeds).values())

# bfloat16 and fp8 come back as float32 from Tensor.numpy(); onnx's references hold ml_dtypes' types (fp8 goes as its bytes: exact NaN/-0 bits)
_NP_FP8 = {dtypes.fp8e4m3: ml_dtypes.float8_e4m3fn, dtypes.fp8e4m3fnuz: ml_dtypes.float8_e4m3fnuz, dtypes.fp8e5m2: ml_dtypes.float8_e5m2,
           dtypes.fp8e5m2fnuz: ml_dtypes.float8_e5m2fnuz}
def _numpy(t):
  if t.dtype in _NP_FP8: return t.bitcast(dtypes.uint8).numpy().view(_NP_FP8[t.dtype])
  return t.numpy().astype(ml_dtypes.bfloat16) if t.dtype == dtypes.bfloat16 else t.numpy()

class TinygradBackend(Backend):
  @classmethod
  def prepare(cls, model, device: str = "CPU", **kwargs): return TinygradRep(OnnxRunner(model, device=DEVICE))
  @classmethod
  def supports_device(cls, device: str) -> bool: return device == "CPU"

if not FULL:
  import importlib, onnx.backend.test.loader as loader
  loader.import_recursive = lambda pkg: [importlib.import_module(f"{pkg.__name__}.{m}") for m in QUICK]
backend_test = onnx.backend.test.BackendTest(TinygradBackend, __name__)
EXCLUDED = exclusions()
for name in EXCLUDED: backend_test.exclude(f"^test_{re.escape(name)}(_cpu)?$")
backend_test.exclude(r"_cuda$")   # the adapter runs on one device; onnx would add a skipped CUDA copy of every test
# the real-model tests download big models from the network: never run here
backend_test.exclude(r"^test_(bvlc_alexnet|densenet121|inception_v1|inception_v2|resnet50|shufflenet|squeezenet|vgg19|zfnet512)_")
# the quick subset is the node tests of QUICK; the full run adds onnx's small models (simple, pytorch-converted, pytorch-operator)
globals().update({k: v for k, v in backend_test.test_cases.items() if FULL or k == "OnnxBackendNodeModelTest"})
