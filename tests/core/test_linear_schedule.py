"""Tensor.linear_with_vars / schedule_linear and engine.realize.run_linear / compile_linear: public tinygrad 0.14's way to
schedule now and run later (its test suites and extra/ benchmarks use it). Checked against numpy."""
import numpy as np
import pytest
from tinygrad import Tensor, Variable, Device, GlobalCounters
from tinygrad.uop import Ops
from tinygrad.engine.realize import run_linear, compile_linear

def test_schedule_then_run_fills_the_tensor():
  a = np.random.default_rng(0).standard_normal((5, 7)).astype(np.float32)
  x = Tensor(a).realize()
  y = (x * 2 + 1).exp().sum(1)
  linear = y.schedule_linear()
  assert linear.op is Ops.LINEAR and all(c.op is Ops.CALL for c in linear.src)
  sinks = [c for c in linear.src if c.src[0].op is Ops.SINK]
  assert len(sinks) >= 1 and all(c.device == Device.DEFAULT for c in sinks)
  GlobalCounters.reset()
  compile_linear(linear)
  assert GlobalCounters.kernel_count == 0   # compiled, not run
  run_linear(linear)
  np.testing.assert_allclose(y.numpy(), np.exp(a * 2 + 1).sum(1), rtol=1e-5)

def test_run_again_recomputes_from_the_sources_as_they_are():
  x = Tensor.ones(6).contiguous().realize()
  y = (x * 3).contiguous()
  linear = y.schedule_linear()
  run_linear(linear)
  np.testing.assert_equal(y.numpy(), [3.0] * 6)
  x.assign(Tensor.full((6,), 2.0)).realize()
  run_linear(linear)   # the same kernel on the same buffers: y now holds 2*3
  np.testing.assert_equal(y.numpy(), [6.0] * 6)

def test_bound_variables_by_name():
  x = Tensor.arange(10).float().contiguous().realize()
  v = Variable("n", 1, 10).bind(4)
  y = x[:v].sum()
  linear, var_vals = y.linear_with_vars()
  assert var_vals == {"n": 4}
  run_linear(linear, var_vals)
  assert y.item() == 0 + 1 + 2 + 3
  run_linear(linear, {"n": 7})   # another value of the same variable, as public tinygrad's run_linear takes
  assert y.item() == sum(range(7))
  with pytest.raises(ValueError, match="bound Variables"): x[:v].sum().schedule_linear()

def test_several_tensors_and_intermediates_through_the_memory_plan():
  rng = np.random.default_rng(1)
  a, b = rng.standard_normal((8, 8)).astype(np.float32), rng.standard_normal((8, 8)).astype(np.float32)
  ta, tb = Tensor(a), Tensor(b)
  h = (ta @ tb).relu().contiguous()
  out1, out2 = (h * 2).sum(0), (h + 1).max(1)
  linear = Tensor.schedule_linear(out1, out2)
  run_linear(linear)
  ref = np.maximum(a @ b, 0)
  np.testing.assert_allclose(out1.numpy(), (ref * 2).sum(0), rtol=1e-5, atol=1e-5)
  np.testing.assert_allclose(out2.numpy(), (ref + 1).max(1), rtol=1e-5)

def test_in_place_update_runs_when_the_linear_runs():
  w = Tensor([1.0, 2.0, 3.0]).contiguous().realize()
  w += 1
  linear = w.schedule_linear()
  run_linear(linear)
  np.testing.assert_equal(w.numpy(), [2.0, 3.0, 4.0])

def test_sharded_tensor():
  devs = (f"{Device.DEFAULT}:0", f"{Device.DEFAULT}:1")
  a = np.arange(32, dtype=np.float32).reshape(8, 4)
  t = Tensor(a).shard(devs, axis=0).realize()
  out = (t * 2 + 1).contiguous()
  linear = out.schedule_linear()
  assert {c.device for c in linear.src if c.src[0].op is Ops.SINK} == {Device.canonicalize(d) for d in devs}
  run_linear(linear)
  np.testing.assert_equal(out.numpy(), a * 2 + 1)

def test_realized_tensor_has_no_steps_and_errors_are_clear():
  x = Tensor([1.0, 2.0]).realize()
  assert len(x.schedule_linear().src) == 0
  with pytest.raises(TypeError, match="LINEAR"): run_linear(x.uop)
