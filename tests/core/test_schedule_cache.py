"""The schedule cache: the same graph structure reuses its kernels with fresh buffers; any change of shape, dtype,
device or op misses; results stay correct and independent."""
import numpy as np, pytest
from tinygrad import Tensor, Variable, dtypes
from tinygrad.engine import schedule as S

def _sched(t: Tensor):
  return S.create_schedule([t.uop])

def test_same_structure_reuses_kernels_with_fresh_buffers():
  a = Tensor([1.0, 2.0, 3.0]).realize()
  s1, r1 = _sched(a * 2 + 1)
  s2, r2 = _sched(a * 2 + 1)
  assert [ei.ast for ei in s1] == [ei.ast for ei in s2]
  out1, out2 = s1[-1].bufs[0], s2[-1].bufs[0]
  assert out1 is not out2, "each realize must write a fresh output buffer"
  base = a.uop.src[0] if a.uop.op.name == "RESHAPE" else a.uop
  assert s1[-1].bufs[1] is s2[-1].bufs[1] is base

def test_cache_hit_gives_independent_correct_results():
  a = Tensor([1.0, 2.0, 3.0]).realize()
  x, y = (a * 2 + 1).realize(), (a * 2 + 1).realize()
  assert x.tolist() == y.tolist() == [3.0, 5.0, 7.0]
  b = Tensor([10.0, 20.0, 30.0]).realize()
  assert (b * 2 + 1).tolist() == [21.0, 41.0, 61.0]   # same structure, other input buffer: must read b, not a
  assert x.tolist() == [3.0, 5.0, 7.0]                 # earlier results are untouched

def test_changes_miss_the_cache():
  base = Tensor.ones(4).contiguous().realize()
  asts = lambda t: [ei.ast for ei in _sched(t)[0]]
  ref = asts(base * 2)
  assert asts(Tensor.ones(5).contiguous().realize() * 2) != ref            # shape
  assert asts(Tensor.ones(4, dtype=dtypes.int32).contiguous().realize() * 2) != ref   # dtype
  assert asts(base * 3) != ref                                               # a constant
  assert asts(base + 2) != ref                                               # an op
  other = Tensor.ones(4, device="PYTHON").contiguous().realize()
  key_a, _ = S._structure([(base * 2).uop])
  key_b, _ = S._structure([(other * 2).uop])
  assert (key_a is not key_b) == (base.device != other.device)             # device is part of the key

def test_assign_through_cache_writes_the_right_buffer():
  for _ in range(3):
    w = Tensor([1.0, 2.0]).contiguous().realize()
    w.assign(w * 2).realize()
    assert w.tolist() == [2.0, 4.0]
  np.testing.assert_allclose((Tensor([1.0, 2.0]) * 2).numpy(), [2.0, 4.0])

def test_clones_share_a_key_and_stay_apart():
  # each clone is a node of its own (its own gradient), numbered only to keep clones apart: a loop's clones hit one key,
  # and two clones in one graph are still two buffers
  a = Tensor([1.0, 2.0]).realize()
  key1, _ = S._structure([(a.clone() * 2).uop])
  key2, _ = S._structure([(a.clone() * 2).uop])
  assert key1 is key2
  b, c = a.clone(), a.clone()
  Tensor.realize(b, c)
  b += 1
  assert b.tolist() == [2.0, 3.0] and c.tolist() == [1.0, 2.0]

def test_compiler_change_gets_its_own_kernels():
  # the schedule (ASTs) is compiler-independent; the compiled runners are per (device, compiler)
  from tinygrad.device import Device
  from tinygrad.engine.realize import method_cache
  try: pairs = [p.name for p in Device["CPU"].compiler_pairs]
  except Exception as e: pytest.skip(f"CPU device not available: {e}")
  opened = []
  for name in pairs:
    try: Device[f"CPU:{name}"]
    except Exception: continue
    opened.append(name)
  if len(opened) < 2: pytest.skip(f"needs two working CPU compilers, have {opened}")
  a, b = f"CPU:{opened[0]}", f"CPU:{opened[1]}"
  x, y = Tensor([1.0, 2.0], device=a).realize(), Tensor([1.0, 2.0], device=b).realize()
  assert (x * 5 + 1).tolist() == (y * 5 + 1).tolist() == [6.0, 11.0]
  keys = {(k[0], k[1]) for k in method_cache}
  assert (Device[a].device, opened[0]) in keys and (Device[b].device, opened[1]) in keys

def test_runner_runs_on_the_device_instance_of_its_buffers():
  # "PYTHON:PYTHON" is its own opened device (its own queue): a kernel for its buffers must be loaded and queued there,
  # not on the base "PYTHON" instance the renderer names, or it would race with that instance's copies on a real GPU
  from tinygrad.device import Device
  from tinygrad.engine.realize import get_runner
  ast = (Tensor.empty(3, device="PYTHON:PYTHON") * 3).schedule()[-1].ast
  assert get_runner("PYTHON:PYTHON", ast).dev is Device["PYTHON:PYTHON"]
  assert get_runner("PYTHON", ast).dev is Device["PYTHON"]
  assert Device["PYTHON:PYTHON"] is not Device["PYTHON"]

def test_codegen_switches_are_part_of_the_kernel_cache_key():
  # a kernel first run with the heuristics, then under Context(NOOPT=1), compiles again without them (and back)
  from tinygrad import Tensor, Context
  from tinygrad.engine.realize import method_cache
  x = np.arange(4096, dtype=np.float32).reshape(64, 64)
  def run():
    out = (Tensor(x) * 2).sum(1).numpy()
    np.testing.assert_allclose(out, (x * 2).sum(1))
    return {k: r for k, r in method_cache.items() if r.p.name.startswith("r_")}
  opt = run()
  with Context(NOOPT=1): noopt = run()
  assert set(noopt) > set(opt)
  new = [r for k, r in noopt.items() if k not in opt]
  assert len(new) == 1 and new[0].p.src != next(iter(opt.values())).p.src
  assert set(run()) == set(noopt)   # both programs stay cached

def test_the_cache_keeps_no_copied_buffer_alive():
  # a copy's item in the cache held its graph node, whose source is the copied buffer: every buffer ever copied to another
  # device (a shard, a .to()) stayed allocated until 512 other graphs pushed the entry out
  import gc, weakref
  from tinygrad.engine.buffers import base_buffer
  for target in ("PYTHON", ("CPU:1", "CPU:2")):
    x = Tensor.ones(64, dtype=dtypes.int32).contiguous().realize()   # (int: no graph kept beside it for autograd)
    w = weakref.ref(base_buffer(x.uop))
    y = (x.to(target) if isinstance(target, str) else x.shard(target, 0)).realize()
    del x
    gc.collect()
    assert w() is None and y.tolist() == [1] * 64

def test_a_variable_only_in_a_shrink_bound_is_unbound():
  # a SHRINK's bounds (pairs) may hold a bound variable while its shape is all ints: the schedule key sees the variable,
  # not its value, and each value reads its own rows
  from tinygrad import Variable
  x = Tensor.arange(32).reshape(8, 4).contiguous().realize()
  v = Variable("row", 0, 7)
  for i in (2, 5):
    r = x.shrink(((v.bind(i), v.bind(i) + 1), None))
    uroots, var_vals = S.unbind_graph([r.uop])
    assert var_vals == {v: i}
    assert not any(n.op is S.Ops.BIND for n in S._graph_topo(uroots))
    np.testing.assert_array_equal((r + 0).numpy(), np.arange(32).reshape(8, 4)[i:i+1])

# ---- on disk: a new process reuses an earlier one's schedules ----
import json, os, subprocess, sys
from tinygrad import Device, diskcache
from tinygrad.helpers import Context
from tinygrad.uop import Ops
from tinygrad.codegen import progcache

WARM = r"""
import json, sys
import numpy as np
import tinygrad.codegen
from tinygrad.engine import schedule as S
from tinygrad import Tensor, Variable
if sys.argv[1] == "warm":   # every schedule and every kernel must come from the disk cache
  def refuse(*a, **k): raise AssertionError("scheduled or rendered in the warm process")
  S._create_schedule = tinygrad.codegen.get_program = refuse
rng = np.random.default_rng(0)
x, w = Tensor(rng.standard_normal((5, 12)).astype(np.float32)), Tensor(rng.standard_normal((12, 8)).astype(np.float32))
cache = Tensor.zeros(2, 16, 8).contiguous().realize()
h = (x @ w).gelu()
cache[0, 0:5].assign(h).realize()
outs = {"attn": (h.softmax(-1) @ cache[0, :5].T).sum(1), "ln": x.layernorm().max(0), "cache": cache}
# a bound variable in a shape, as a decode step's cache[:, :start_pos+1] (an expression of it in movement ops' args)
outs["sym"] = (cache[0, :Variable("n", 1, 15).bind(4) + 1] * 2).sum(0)
print(json.dumps({k: v.numpy().tolist() for k, v in outs.items()}))
"""

def test_a_warm_process_schedules_nothing_and_matches_the_cold_one(tmp_path):
  env = {**os.environ, "CACHEDB": str(tmp_path / "c.db"), "PYTHONPATH": os.pathsep.join(sys.path)}
  def run(mode: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", WARM, mode], capture_output=True, text=True, env={**env, **extra}, timeout=600)
  cold, warm = run("cold"), run("warm")
  assert cold.returncode == 0 and warm.returncode == 0, (cold.stderr + warm.stderr)[-3000:]
  assert json.loads(warm.stdout.splitlines()[-1]) == json.loads(cold.stdout.splitlines()[-1])   # bit for bit
  # another flag value is another key: the warm process must schedule (and the stub refuses)
  r = run("warm", INDEX64="1")
  assert r.returncode != 0 and "scheduled or rendered" in r.stderr

@pytest.fixture
def db(tmp_path, monkeypatch):
  monkeypatch.setenv("CACHEDB", str(tmp_path / "c.db"))
  diskcache.reset()
  S._schedule_cache.clear()
  yield
  S._schedule_cache.clear()
  diskcache.reset()

def _graph():
  a = Tensor.arange(256).reshape(32, 8).float().contiguous().realize()   # (32 rows: enough to fuse a row's reduces where threads split rows)
  return [(a.softmax(-1) * 3 + a.sum(0)).uop]

def _fresh(roots, **flags):
  with Context(SCACHE=0, **flags): return [ei.ast for ei in S.create_schedule(roots)[0]]

def _from_cache(roots, **flags):
  S._schedule_cache.clear()   # (what a new process starts with: only the disk)
  with Context(**flags): return [ei.ast for ei in S.create_schedule(roots)[0]]

def test_a_disk_hit_gives_the_very_kernels_scheduling_gives(db, count_calls):
  roots = _graph()
  first = _from_cache(roots)
  n = count_calls(S, "_create_schedule")
  assert _from_cache(roots) == first == _fresh(roots) and n["n"] == 1   # (the one call: _fresh's)

def test_a_changed_flag_does_not_get_the_old_schedule(db):
  roots = _graph()
  old = _from_cache(roots)
  new = _from_cache(roots, INDEX64=1)   # int64 index math: other kernel ASTs
  assert new != old and new == _fresh(roots, INDEX64=1)
  assert _from_cache(roots) == old   # both stay on disk

def test_a_renderer_ability_is_in_the_key(db, monkeypatch):
  roots = _graph()
  ren = Device[roots[0].device].renderer
  old = _from_cache(roots)
  # the scheduler asks the renderer whether threads split rows (softmax's reduces fuse into its kernel or not)
  monkeypatch.setattr(ren, "has_threads", not ren.has_threads)
  new = _from_cache(roots)
  assert new != old and new == _fresh(roots)

def _row(roots):
  key, _ = S._structure(S.unbind_graph(roots)[0])
  dkey = S._disk_key(key)
  return dkey, dict(version=dkey[2], device=",".join(d[0] for d in dkey[-1]))

@pytest.mark.parametrize("damage", ["op", "index", "negative", "enum", "class", "dtype", "inexact", "input", "digest", "other_digest", "garbage"])
def test_a_damaged_or_foreign_row_is_a_miss(db, damage):
  roots = _graph()
  want = _from_cache(roots)
  dkey, where = _row(roots)
  v = diskcache.diskcache_get("schedule", dkey, **where)
  assert isinstance(v, dict)
  def fields(op="CONST", dtype=json.loads(progcache._json(dtypes.int)), arg=["i", "7"]): return json.dumps([op, dtype, arg, None])
  if damage == "op": v["vals"][v["nodes"][0][0]] = fields("NOT_AN_OP")
  elif damage == "index": v["nodes"][1].append(len(v["nodes"]) + 5)
  elif damage == "negative": v["nodes"][3].append(-1)
  elif damage == "enum": v["vals"].append(fields(arg=["e", "os.SEEK_SET", "x"]))
  elif damage == "class": v["vals"].append(fields(arg=["c", "subprocess.Popen", [["args", "true"]]]))
  elif damage == "dtype": v["vals"].append(fields(dtype=["d", "Popen", []]))
  elif damage == "inexact": v["vals"][-1] = v["vals"][-1].replace(",", ", ", 1)   # decodes, but is not the text the encoder writes
  elif damage == "input": v["items"][0][1][0] = [True, 99]
  # a kernel's stored digest (its program's key): not a digest, or not the one of the kernel it is stored with
  elif damage == "digest": v["items"][-1][3] = "../x"
  elif damage == "other_digest": v["items"][-1][3] = "0" * 64
  else: v = {"vals": 1}
  diskcache.diskcache_put("schedule", dkey, v, **where)
  assert S._disk_load(dkey, S._structure(S.unbind_graph(roots)[0])[0], 1) is None
  assert _from_cache(roots) == want   # scheduled again, and stored again
  assert all(progcache.ast_digest(a) != "0" * 64 for a in want)   # (a rejected row gave no kernel its digest)

def test_graphs_round_trip_exactly():
  roots = _graph()
  asts = [ei.ast for ei in S.create_schedule(roots)[0]]
  vals, nodes, pos = progcache.encode_graph(asts)
  built = progcache.decode_graph(json.loads(json.dumps(vals)), json.loads(json.dumps(nodes)))
  assert all(built[pos[a]] is a for a in asts)   # hash-consing: the same objects
  assert progcache._dec_val(progcache._enc(Ops.ADD)) is Ops.ADD   # (an IntEnum: not its int)
  assert progcache._dec_val(progcache._enc((1, 1.0, True, -0.0, None, "x", [2]))) == (1, 1.0, True, -0.0, None, "x", [2])

@pytest.mark.parametrize("bound", [False, True])
def test_a_cached_schedules_items_find_the_nodes_a_fresh_one_computes(bound):
  # item_nodes: a hit's items carry the key graph's nodes; they are found again in the caller's graph (by the key's node
  # map, or by pairing the graphs where variables were unbound), the very nodes a fresh schedule names
  def graph():
    a = Tensor.arange(64).reshape(8, 8).float().contiguous().realize()
    n = Variable("n", 1, 8).bind(5) if bound else 5
    x = (a.exp() + 1).contiguous()
    return [(x[:n].sum(0) * 2 + x.max()).uop]
  roots = graph()
  with Context(SCACHE=0): fresh = S.create_schedule(roots)[0]
  assert len(fresh) >= 3 and all(ei.node is not None for ei in fresh)
  S.create_schedule(graph())   # (fills the cache from another graph of the same structure)
  hit = S.create_schedule(roots)[0]
  assert all(ei.node is None for ei in hit)
  assert S.item_nodes(roots, hit) == [ei.node for ei in fresh]

def test_a_graph_with_a_symbolic_shape_is_kept_on_disk(db, count_calls):
  # a bound variable in a shape (a decode step's cache[:, :start_pos+1]) puts an expression of the variable in movement ops'
  # args: such a graph was never stored (its key raised Uncacheable), and every new process scheduled it again (GPT-2 tiny's
  # second token: 3 schedules, ~200 ms of a warm process)
  a = Tensor.arange(64).reshape(8, 8).float().contiguous().realize()
  def graph(v: int): return [(a[:Variable("n", 1, 7).bind(v) + 1].sum(0) * 2).uop]
  key, _ = S._structure(S.unbind_graph(graph(5))[0])
  assert S._disk_key(key) is not None
  first = _from_cache(graph(5))
  n = count_calls(S, "_create_schedule")
  assert _from_cache(graph(3)) == first == _fresh(graph(3)) and n["n"] == 1   # (the one call: _fresh's)
  for v in (3, 6):   # a hit runs with the value bound now
    S._schedule_cache.clear()
    np.testing.assert_array_equal(Tensor(graph(v)[0]).numpy(), np.arange(64).reshape(8, 8)[:v + 1].sum(0) * 2)
  assert n["n"] == 1

def test_an_expression_in_an_arg_round_trips_exactly_and_nothing_else_of_a_uop_does():
  n = Variable("n", 1, 7)
  for x in [(0, n + 1), (n * 2 - 1, (n // 3) % 2), n.maximum(2)]:
    enc = json.loads(progcache._text(x))
    assert progcache._dec_val(enc) == x
  with pytest.raises(progcache.Uncacheable): progcache._enc(Tensor.empty(4).uop)   # (a buffer's identity: never on disk)
  bad = json.loads(progcache._text(n + 1))
  bad[1][0] = "COPY"
  with pytest.raises(ValueError): progcache._dec_val(bad)
