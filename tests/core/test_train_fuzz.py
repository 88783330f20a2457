"""Whole random training loops against torch: a small model (one or two weight matrices, a bias, a tied weight read twice,
a frozen weight with requires_grad False, a detached branch) under a random optimizer (SGD with momentum, nesterov and
weight decay, Adam with torch's L2 weight decay, AdamW), several steps of one or two backward() calls each (gradients
accumulate), with in-place edits of the gradients between backward() and step() (scaled by a clipping factor, a row
zeroed), the lr changed in place between steps (`opt.lr.assign(...)`, as lr schedulers do), zero_grad skipped on some
steps (eagerly: a jitted loop clears them in each call) and the loss read before or after the step. The same loop runs
eagerly, under TinyJit (one step function, so the later calls replay), and with the batch sharded over two devices (data
parallel, replicated weights); every loss and the final weights must equal torch's. Single optimizer updates are tested
in test_optim.py; these find what goes wrong between steps (state carried over, a jitted step replaying an old value, an
accumulation that reads a gradient already consumed)."""
import numpy as np, pytest
from hypothesis import given, settings, strategies as st
from tinygrad import Tensor, TinyJit
from tinygrad.nn.optim import SGD, Adam, AdamW

torch = pytest.importorskip("torch", reason="torch (CPU) is the test reference: pip install torch")

OPTS = {
  "sgd": (lambda p, lr: SGD(p, lr=lr), lambda p, lr: torch.optim.SGD(p, lr=lr)),
  "momentum": (lambda p, lr: SGD(p, lr=lr, momentum=0.9, weight_decay=0.05), lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.9, weight_decay=0.05)),
  "nesterov": (lambda p, lr: SGD(p, lr=lr, momentum=0.8, nesterov=True), lambda p, lr: torch.optim.SGD(p, lr=lr, momentum=0.8, nesterov=True)),
  "adam": (lambda p, lr: Adam(p, lr=lr, weight_decay=0.01), lambda p, lr: torch.optim.Adam(p, lr=lr, weight_decay=0.01)),
  "adamw": (lambda p, lr: AdamW(p, lr=lr, weight_decay=0.1), lambda p, lr: torch.optim.AdamW(p, lr=lr, weight_decay=0.1)),
}

@st.composite
def loops(draw):
  how = draw(st.sampled_from(["eager", "jit", "sharded", "sharded_jit"]))
  steps = [dict(backwards=draw(st.integers(1, 2)), zero=draw(st.booleans()) or i == 0, clip=draw(st.booleans()),
                zero_row=draw(st.booleans()), lr=draw(st.sampled_from([None, None, 0.02, 0.005])), read_before=draw(st.booleans()))
           for i in range(draw(st.integers(2, 5) if how in ("eager", "sharded") else st.integers(3, 6)))]
  # jitted: one step function for the whole loop, so that calls 3.. replay (the lr still changes, in place, between calls),
  # clearing the gradients first (gradients added to across calls raise JitError: test_jit.py)
  if how not in ("eager", "sharded"): steps = [dict(steps[0], zero=True, lr=s["lr"]) for s in steps]
  return dict(opt=draw(st.sampled_from(sorted(OPTS))), act=draw(st.sampled_from(["relu", "tanh", "sigmoid"])), two=draw(st.booleans()),
              tied=draw(st.booleans()), frozen=draw(st.booleans()), detach=draw(st.booleans()), steps=steps, how=how,
              seed=draw(st.integers(0, 2**16)))

def _trains(k: str, cfg: dict) -> bool: return k != "f" and (k != "w2" or cfg["two"])   # (the frozen one; w2 where it is used)

def _forward(lib, ps: dict, x, act: str, cfg: dict):
  h = x @ ps["w1"] + ps["b"]
  h = getattr(h, act)()
  if cfg["two"]: h = getattr(h @ ps["w2"], act)()
  if cfg["tied"]: h = h + (x @ ps["w1"]) * 0.5   # w1 read twice: its gradient is the sum of both uses
  if cfg["frozen"]: h = h * (x @ ps["f"]).tanh()
  if cfg["detach"]: h = h * h.detach().abs().mean()   # a branch that takes no gradient
  return (h * h).mean() if lib is torch else h.square().mean()

def _run_tinygrad(cfg: dict, init: dict, batches: list):
  devs = ("CPU:0", "CPU:1") if cfg["how"].startswith("sharded") else None
  ps = {k: Tensor(v.copy(), requires_grad=k != "f") for k, v in init.items()}
  if devs:
    for p in ps.values(): p.shard_(devs)
  opt = OPTS[cfg["opt"]][0]([p for k, p in ps.items() if _trains(k, cfg)], 0.05)
  def backward(x: Tensor) -> Tensor:
    loss = _forward(None, ps, x, cfg["act"], cfg)
    loss.backward()
    return loss
  def edit_and_step(clip: bool, zero_row: bool):
    for k in ("w1", "b"):
      g = ps[k].grad
      assert g is not None
      if clip: g *= (1.0 / (g.square().sum().sqrt() + 1e-6)).minimum(1.0)
      if zero_row: g[0] = 0
    opt.step()
  # one jitted function per step kind (a step's Python decisions are part of what a capture replays)
  jits: dict = {}
  losses = []
  for i, s in enumerate(cfg["steps"]):
    xs = [Tensor(b) for b in batches[i]]
    if devs: xs = [x.shard(devs, 0) for x in xs]
    if s["lr"] is not None: opt.lr.assign(Tensor([s["lr"]], device=opt.lr.device) if not devs else Tensor([s["lr"]]).shard(devs)).realize()
    def step(*xs: Tensor, s=s):
      if s["zero"]: opt.zero_grad()
      ls = [backward(x) for x in xs]
      before = [l.numpy() for l in ls] if s["read_before"] and "jit" not in cfg["how"] else None
      edit_and_step(s["clip"], s["zero_row"])
      return Tensor.stack(*ls).realize() if before is None else Tensor(np.stack(before))
    if "jit" in cfg["how"]:
      key = (s["backwards"], s["zero"], s["clip"], s["zero_row"])
      f = jits.setdefault(key, TinyJit(step))
    else: f = step
    losses.append(f(*xs).numpy())
  return losses, {k: p.numpy() for k, p in ps.items()}

def _run_torch(cfg: dict, init: dict, batches: list):
  ps = {k: torch.tensor(v.copy(), requires_grad=k != "f") for k, v in init.items()}
  opt = OPTS[cfg["opt"]][1]([p for k, p in ps.items() if _trains(k, cfg)], 0.05)
  losses = []
  for i, s in enumerate(cfg["steps"]):
    if s["lr"] is not None:
      for grp in opt.param_groups: grp["lr"] = s["lr"]
    if s["zero"]: opt.zero_grad(set_to_none=True)
    ls = []
    for b in batches[i]:
      loss = _forward(torch, ps, torch.tensor(b), cfg["act"], cfg)
      loss.backward()
      ls.append(loss.detach().numpy())
    with torch.no_grad():
      for k in ("w1", "b"):
        g = ps[k].grad
        if s["clip"]: g *= (1.0 / (g.square().sum().sqrt() + 1e-6)).clamp(max=1.0)
        if s["zero_row"]: g[0] = 0
    opt.step()
    losses.append(np.stack(ls))
  return losses, {k: p.detach().numpy() for k, p in ps.items()}

def run_loop(cfg: dict):
  rng = np.random.default_rng(cfg["seed"])
  init = {"w1": rng.standard_normal((3, 4)), "b": rng.standard_normal(4) * 0.1, "w2": rng.standard_normal((4, 4)) * 0.5,
          "f": rng.standard_normal((3, 4))}
  init = {k: v.astype(np.float32) for k, v in init.items()}
  batches = [[rng.standard_normal((4, 3)).astype(np.float32) for _ in range(s["backwards"])] for s in cfg["steps"]]
  got_l, got_p = _run_tinygrad(cfg, init, batches)
  exp_l, exp_p = _run_torch(cfg, init, batches)
  for i, (g, e) in enumerate(zip(got_l, exp_l)): np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5, err_msg=f"loss of step {i}: {cfg}")
  for k in got_p: np.testing.assert_allclose(got_p[k], exp_p[k], rtol=1e-4, atol=1e-5, err_msg=f"{k} after the loop: {cfg}")

@settings(max_examples=20, deadline=None)
@given(loops())
def test_random_training_loops_match_torch(cfg): run_loop(cfg)
