"""The models of this folder written again in torch, as functions of a state dict (tinygrad's names, torchvision's layout):
the reference their outputs and gradients are checked against. Only torch is needed (no torchvision)."""
from __future__ import annotations
import torch
import torch.nn.functional as F

def _bn(p: dict, k: str, x: torch.Tensor, training: bool) -> torch.Tensor:
  return F.batch_norm(x, p[f"{k}.running_mean"], p[f"{k}.running_var"], p[f"{k}.weight"], p[f"{k}.bias"], training, 0.1, 1e-5)

def resnet(p: dict, x: torch.Tensor, depth: int = 18) -> torch.Tensor:
  """torchvision's ResNet (v1.5) forward over `p`, in inference mode (running statistics)."""
  blocks = {18: [2, 2, 2, 2], 34: [3, 4, 6, 3], 50: [3, 4, 6, 3]}[depth]
  x = F.relu(_bn(p, "bn1", F.conv2d(x, p["conv1.weight"], stride=2, padding=3), False))
  x = F.max_pool2d(x, 3, 2, 1)
  for li, n in enumerate(blocks, 1):
    for bi in range(n):
      k, stride = f"layer{li}.{bi}", 2 if bi == 0 and li > 1 else 1
      if depth < 50:
        out = F.relu(_bn(p, f"{k}.bn1", F.conv2d(x, p[f"{k}.conv1.weight"], stride=stride, padding=1), False))
        out = _bn(p, f"{k}.bn2", F.conv2d(out, p[f"{k}.conv2.weight"], padding=1), False)
      else:
        out = F.relu(_bn(p, f"{k}.bn1", F.conv2d(x, p[f"{k}.conv1.weight"]), False))
        out = F.relu(_bn(p, f"{k}.bn2", F.conv2d(out, p[f"{k}.conv2.weight"], stride=stride, padding=1), False))
        out = _bn(p, f"{k}.bn3", F.conv2d(out, p[f"{k}.conv3.weight"]), False)
      sc = _bn(p, f"{k}.downsample.1", F.conv2d(x, p[f"{k}.downsample.0.weight"], stride=stride), False) if f"{k}.downsample.0.weight" in p else x
      x = F.relu(out + sc)
  return F.linear(x.mean((2, 3)), p["fc.weight"], p["fc.bias"])

def vit(p: dict, x: torch.Tensor, layers: int, num_heads: int, patch_size: int = 16) -> torch.Tensor:
  lin = lambda k, t: F.linear(t, p[f"{k}.weight"], p[f"{k}.bias"])
  ln = lambda k, t: F.layer_norm(t, t.shape[-1:], p[f"{k}.weight"], p[f"{k}.bias"], 1e-6)
  pe = F.conv2d(x, p["embedding.weight"], p["embedding.bias"], stride=patch_size).flatten(2).transpose(1, 2)
  x = torch.cat([p["cls"].expand(pe.shape[0], 1, pe.shape[2]), pe], 1) + p["pos_embedding"]
  bs, n, d = x.shape
  for i in range(layers):
    k = f"tbs.{i}"
    h = ln(f"{k}.ln1", x)
    q, kk, v = (lin(f"{k}.{w}", h).reshape(bs, n, num_heads, d // num_heads).transpose(1, 2) for w in ("query", "key", "value"))
    att = ((q @ kk.transpose(2, 3)) / (d // num_heads) ** 0.5).softmax(-1)
    x = x + lin(f"{k}.out", (att @ v).transpose(1, 2).reshape(bs, n, d))
    x = x + lin(f"{k}.ff2", F.gelu(lin(f"{k}.ff1", ln(f"{k}.ln2", x)), approximate="tanh"))
  return lin("head", ln("encoder_norm", x[:, 0]))

def cnn(p: dict, x: torch.Tensor, training: bool) -> torch.Tensor:
  """beautiful_mnist's CNN; `layers.N` are the indices of tinygrad's layer list."""
  c = lambda i, t: F.relu(F.conv2d(t, p[f"layers.{i}.weight"], p[f"layers.{i}.bias"]))
  x = F.max_pool2d(_bn(p, "layers.4", c(2, c(0, x)), training), 2)
  x = F.max_pool2d(_bn(p, "layers.10", c(8, c(6, x)), training), 2)
  return F.linear(x.flatten(1), p["layers.13.weight"], p["layers.13.bias"])

def cnn_trainer(p: dict, lr: float = 1e-3):
  """A training step of the CNN as tinygrad's beautiful_mnist runs it (cross entropy, Adam): step(x, y) -> loss. `p`'s
  float weights (not the running statistics) become the trained parameters."""
  params = [v.requires_grad_() for k, v in p.items() if v.is_floating_point() and "running" not in k]
  opt = torch.optim.Adam(params, lr=lr)
  def step(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    opt.zero_grad()
    loss = F.cross_entropy(cnn(p, x, True), y)
    loss.backward()
    opt.step()
    return loss.detach()
  return step
