"""The whole models of examples/models/ (ResNet, ViT, beautiful_mnist's CNN) on tiny configs against their torch versions
(examples/models/torch_ref.py) with the same weights, written by nn.state.safe_save and read back on both sides; one CNN
training step's loss and gradients against torch's; and bench/models.py --quick (ours against torch) end to end."""
from __future__ import annotations
import json, os, subprocess, sys
import numpy as np
import pytest
torch = pytest.importorskip("torch", reason="the models' reference: pip install torch --index-url https://download.pytorch.org/whl/cpu")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from workloads import example, tinygrad_weights, torch_state, allclose_check   # noqa: E402
from tinygrad import Tensor   # noqa: E402
from tinygrad.helpers import Context   # noqa: E402

def _weights(model, tmp_path) -> dict:
  """Random weights (batchnorm statistics and affines too) saved from `model` and loaded back as torch tensors."""
  path = str(tmp_path / "w.safetensors")
  tinygrad_weights(model, path, perturb_seed=1)
  from tinygrad.nn.state import safe_load, load_state_dict
  load_state_dict(model, safe_load(path))   # the model as a loader sees it (the perturbed statistics)
  return torch_state(path)

def _close(ours: np.ndarray, ref, tol: float = 1e-3) -> None:
  msg = allclose_check([{"y": ours}], [{"y": ref.detach().numpy()}], tol, tol)
  assert msg is None, msg

def _x(*shape: int) -> np.ndarray: return np.random.default_rng(0).standard_normal(shape, dtype=np.float32)

# ResNet-18 only: ResNet-50 (the Bottleneck block) took 111 s to compile on this loaded 2-core machine
def test_resnet_forward_matches_torch(tmp_path, depth=18):
  Tensor.manual_seed(0)
  model = example("models/resnet.py").ResNet(depth, num_classes=5, width=4)
  p, x = _weights(model, tmp_path), _x(2, 3, 32, 32)
  with torch.no_grad(): ref = example("models/torch_ref.py").resnet(p, torch.from_numpy(x), depth)
  _close(model(Tensor(x)).numpy(), ref)

def test_vit_forward_matches_torch(tmp_path):
  Tensor.manual_seed(0)
  model = example("models/vit.py").ViT(layers=2, embed_dim=32, num_heads=2, img_size=32, patch_size=8, num_classes=10)
  p, x = _weights(model, tmp_path), _x(2, 3, 32, 32)
  with torch.no_grad(): ref = example("models/torch_ref.py").vit(p, torch.from_numpy(x), 2, 2, 8)
  _close(model(Tensor(x)).numpy(), ref)

def test_cnn_forward_matches_torch_in_both_modes(tmp_path):
  Tensor.manual_seed(0)
  model = example("models/cnn.py").Model()
  p, x = _weights(model, tmp_path), _x(4, 1, 28, 28)
  ref = example("models/torch_ref.py")
  with torch.no_grad():
    _close(model(Tensor(x)).numpy(), ref.cnn({k: v.clone() for k, v in p.items()}, torch.from_numpy(x), training=False))
    with Context(TRAINING=1): _close(model(Tensor(x)).numpy(), ref.cnn({k: v.clone() for k, v in p.items()}, torch.from_numpy(x), training=True))

def test_cnn_training_step_loss_and_grads_match_torch(tmp_path):
  from tinygrad.nn.optim import Adam
  from tinygrad.nn.state import get_parameters, get_state_dict
  Tensor.manual_seed(0)
  cnn = example("models/cnn.py")
  model = cnn.Model()
  p = _weights(model, tmp_path)
  x, y = _x(4, 1, 28, 28), np.array([3, 0, 9, 3], dtype=np.int32)
  opt = Adam(get_parameters(model), lr=1e-3)
  loss = cnn.make_train_step(model, opt)(Tensor(x), Tensor(y))
  # torch: the same loss and backward; the grads compared before either optimizer's update is read
  tp = {k: v.clone().requires_grad_(v.is_floating_point() and "running" not in k) for k, v in p.items()}
  tl = torch.nn.functional.cross_entropy(example("models/torch_ref.py").cnn(tp, torch.from_numpy(x), True), torch.from_numpy(y.astype(np.int64)))
  tl.backward()
  _close(loss.numpy().reshape(1), tl.reshape(1))
  sd = get_state_dict(model)
  graded = [k for k, v in tp.items() if v.grad is not None]
  assert len(graded) == 14   # 5 conv/linear weights and biases and 2 batchnorm affines
  for k in graded:
    assert sd[k].grad is not None, f"{k} got no gradient"
    _close(sd[k].grad.numpy(), tp[k].grad)
  # one Adam step moved every trained weight as torch's Adam does
  topt = torch.optim.Adam([tp[k] for k in graded], lr=1e-3)
  topt.step()
  for k in graded: _close(sd[k].numpy(), tp[k])

def test_models_bench_quick_runs_and_checks_against_torch(tmp_path):
  """bench/models.py --quick, ours against torch, on one row (the models themselves are checked above): prepare, torch, a
  cold and a warm process of ours, outputs checked against torch's, the JSON written."""
  out = tmp_path / "models.json"
  r = subprocess.run([sys.executable, os.path.join(ROOT, "bench", "models.py"), "--quick", "--frameworks", "ours,torch", "--runs", "1",
                      "--first-runs", "2", "--only", "resnet18_b1", "--json", str(out)], capture_output=True, text=True, timeout=900)
  assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
  rows = {row["key"]: row for row in json.loads(out.read_text())["rows"]}
  assert set(rows) == {"resnet18_b1"}
  for key, row in rows.items():
    ours = row["results"]["ours"]
    assert ours["check"] == "ok" and row["results"]["torch"]["check"] == "ok", (key, ours["check"])
    assert ours["ms"] > 0 and ours["cold_ms"] > 0 and ours["warm_ms"] > 0 and ours["kernels"] > 0, (key, ours)
    # cold_ms: the median of the cold processes (each on an empty cache, so each compiles)
    assert len(ours["cold_all_ms"]) == 2 and ours["cold_ms"] == sum(ours["cold_all_ms"]) / 2, ours
    assert len(ours["warm_all_ms"]) == 2 and ours["warm_ms"] == sum(ours["warm_all_ms"]) / 2, ours
