"""Whole-model workloads for bench/models.py, one module per model, all with one small interface.

A workload module `bench/workloads/<name>.py` (found by bench/models.py by listing this folder: adding a file adds its
rows, models.py is not touched) defines:

  ROWS: dict[str, dict]    row key -> its config at full size (plain JSON data). Every config has "title" (the table's
                           text) and may have "runs" (timed calls for the median, default --runs) and "check_calls"
                           (how many first calls' outputs are compared, default 3: with TinyJit that is run, capture, replay).
  QUICK: dict[str, dict]   the same keys -> tiny configs (`--quick` and the test in make test run these).
  FRAMEWORKS: tuple        the frameworks it supports, of "ours" (our tinygrad), "tinygrad" (public 0.14, its own venv) and
                           "torch" (torch CPU, the reference: a workload must support it).
  prepare(config) -> None  runs once, in our venv, before any framework: writes the weights and inputs every framework
                           loads into config["data"] (a folder), e.g. with nn.state.safe_save (read back by
                           read_safetensors below on the torch side). Random, seeded: no downloads.
  build(framework, config) -> Callable[[], dict[str, np.ndarray]]
                           loads the model for `framework` from config["data"] and returns one call of the workload
                           (an inference, a training step, a decoded token). Each call returns its outputs as numpy
                           arrays; converting them is part of the timed call (it is what realizes a lazy result). Imports of
                           the framework happen inside build, so the module imports with numpy alone.
  check(outs, ref, config) -> str | None   (optional)
                           outs and ref: the first config["check_calls"] calls' outputs of one framework and of torch;
                           None when they agree, else what differs. The default is `allclose_check` with the module's
                           TOL (rtol, atol; default (1e-3, 1e-3)) on the outputs scaled by the reference's largest value.

Each framework runs in its own process (bench/workloads/run_one.py under that framework's interpreter) and imports only
this package, numpy, its framework and examples/ (via `example`); nothing here imports our tinygrad, so the same code runs
under public tinygrad's venv.
"""
from __future__ import annotations
import importlib.util, json, os, sys
from types import ModuleType
from typing import Any, Callable
import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FRAMEWORKS_ALL = ("ours", "tinygrad", "torch")

def example(relpath: str) -> ModuleType:
  """The module at examples/<relpath> (e.g. "models/resnet.py"), imported by path: the same file for every framework."""
  path = os.path.join(ROOT, "examples", relpath)
  name = "example_" + relpath.replace("/", "_").removesuffix(".py")
  if name in sys.modules: return sys.modules[name]
  spec = importlib.util.spec_from_file_location(name, path)
  if spec is None or spec.loader is None: raise ImportError(f"cannot import {path}")
  mod = importlib.util.module_from_spec(spec)
  sys.modules[name] = mod
  spec.loader.exec_module(mod)
  return mod

_ST_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64, "I32": np.int32, "I16": np.int16,
              "I8": np.int8, "U8": np.uint8, "BOOL": np.bool_}
def read_safetensors(path: str) -> dict[str, np.ndarray]:
  """A safetensors file as numpy arrays (the torch side reads the weights with this: no safetensors package needed)."""
  with open(path, "rb") as f:
    data = f.read()
  n = int.from_bytes(data[:8], "little")
  header = json.loads(data[8:8 + n])
  out = {}
  for k, v in header.items():
    if k == "__metadata__": continue
    if v["dtype"] not in _ST_DTYPES: raise ValueError(f"{path}: {k} has dtype {v['dtype']}; readable: {sorted(_ST_DTYPES)}")
    lo, hi = v["data_offsets"]
    out[k] = np.frombuffer(data[8 + n + lo:8 + n + hi], dtype=_ST_DTYPES[v["dtype"]]).reshape(v["shape"]).copy()
  return out

def allclose_check(outs: list[dict[str, np.ndarray]], ref: list[dict[str, np.ndarray]], rtol: float = 1e-3, atol: float = 1e-3) -> str | None:
  """None when every output of every call matches the reference's: |a - r| <= atol*max|r| + rtol*|r|; else the worst."""
  if len(outs) != len(ref): return f"{len(outs)} calls' outputs against the reference's {len(ref)}"
  for i, (o, r) in enumerate(zip(outs, ref)):
    if set(o) != set(r): return f"call {i}: outputs {sorted(o)} against the reference's {sorted(r)}"
    for k in r:
      a, b = np.asarray(o[k], dtype=np.float64), np.asarray(r[k], dtype=np.float64)
      if a.shape != b.shape: return f"call {i} {k}: shape {a.shape} against the reference's {b.shape}"
      if a.size == 0: continue
      scale = max(float(np.abs(b).max()), 1e-30)
      bad = np.abs(a - b) > atol * scale + rtol * np.abs(b)
      if not np.isfinite(a).all() or bad.any():
        j = int(np.argmax(np.abs(a - b))) if np.isfinite(a).all() else int(np.argmin(np.isfinite(a)))
        return f"call {i} {k}: {int(bad.sum())}/{a.size} values differ, worst at {j}: {a.flat[j]:.6g} vs torch {b.flat[j]:.6g} (max |ref| {scale:.3g})"
  return None

def check(mod: ModuleType, outs: list[dict[str, np.ndarray]], ref: list[dict[str, np.ndarray]], config: dict[str, Any]) -> str | None:
  """The module's check, or allclose_check with its TOL."""
  if hasattr(mod, "check"): return mod.check(outs, ref, config)
  rtol, atol = getattr(mod, "TOL", (1e-3, 1e-3))
  return allclose_check(outs, ref, rtol, atol)

def modules() -> dict[str, ModuleType]:
  """Every workload module of this folder, by name."""
  here = os.path.dirname(os.path.abspath(__file__))
  names = sorted(f[:-3] for f in os.listdir(here) if f.endswith(".py") and not f.startswith("_") and f != "run_one.py")
  return {n: importlib.import_module(f"workloads.{n}") for n in names}

def tinygrad_weights(model: Any, path: str, perturb_seed: int | None = 0) -> None:
  """Write a tinygrad model's state dict (ours) to `path` with nn.state.safe_save. With `perturb_seed`, batchnorm
  statistics and affine parameters, which init to 0/1 and so would hide a missing term, get random values first."""
  from tinygrad import Tensor
  from tinygrad.nn.state import get_state_dict, safe_save
  sd = get_state_dict(model)
  if perturb_seed is not None:
    rng = np.random.default_rng(perturb_seed)
    for k, t in sd.items():
      if k.endswith("running_var"): t.assign(Tensor(rng.uniform(0.5, 1.5, t.shape).astype(np.float32)))
      elif k.endswith("running_mean") or (k.endswith(("weight", "bias")) and t.ndim == 1 and t.shape[0] and _is_norm(model, k)):
        base = 1.0 if k.endswith("weight") else 0.0
        t.assign(Tensor((base + rng.normal(0, 0.1, t.shape)).astype(np.float32)))
  safe_save({k: v.realize() for k, v in sd.items()}, path)

def _is_norm(model: Any, key: str) -> bool:
  obj = model
  for part in key.split(".")[:-1]: obj = obj[int(part)] if isinstance(obj, (list, tuple)) else getattr(obj, part)
  return "Norm" in type(obj).__name__

def tinygrad_load(model: Any, path: str) -> None:
  """Load a safetensors file into a tinygrad model (ours or public: the same calls)."""
  from tinygrad.nn.state import safe_load, load_state_dict
  load_state_dict(model, safe_load(path))

def torch_state(path: str) -> dict[str, Any]:
  """A safetensors file as a dict of torch tensors (float32 and int64 as torch keeps them)."""
  import torch
  return {k: torch.from_numpy(v.astype(np.int64) if v.dtype.kind in "iu" else v) for k, v in read_safetensors(path).items()}

Call = Callable[[], dict[str, np.ndarray]]

def image_prepare(c: dict[str, Any], make_model: Callable[[dict[str, Any]], Any]) -> None:
  """An image classifier's prepare: the model's random weights and a (bs, 3, size, size) input, seeded by c["seed"]."""
  from tinygrad import Tensor
  Tensor.manual_seed(c["seed"])
  tinygrad_weights(make_model(c), os.path.join(c["data"], "weights.safetensors"))
  np.save(os.path.join(c["data"], "x.npy"), np.random.default_rng(c["seed"]).standard_normal((c["bs"], 3, c["size"], c["size"]), dtype=np.float32))

def image_build(framework: str, c: dict[str, Any], make_model: Callable[[dict[str, Any]], Any], torch_forward: Callable[..., Any]) -> Call:
  """An image classifier's build: {"logits"} of one inference, jitted on the tinygrads; on torch
  `torch_forward(torch_ref_module, state, x)` over the same weights (examples/models/torch_ref.py)."""
  x = np.load(os.path.join(c["data"], "x.npy"), allow_pickle=False)
  weights = os.path.join(c["data"], "weights.safetensors")
  if framework == "torch":
    import torch
    ref, p, xt = example("models/torch_ref.py"), torch_state(weights), torch.from_numpy(x)
    def call_torch() -> dict[str, np.ndarray]:
      with torch.no_grad(): return {"logits": torch_forward(ref, p, xt).numpy()}
    return call_torch
  from tinygrad import Tensor
  from tinygrad.engine.jit import TinyJit
  model = make_model(c)
  tinygrad_load(model, weights)
  run = TinyJit(lambda t: model(t).realize())
  xg = Tensor(x).realize()
  return lambda: {"logits": run(xg).numpy()}
