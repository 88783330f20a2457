"""VIZ=1 (a record of every rewrite pass and kernel, served as a page on 127.0.0.1) and PROFILE=1 (a Chrome trace-event
timeline): what they record, that recording changes no result and is off by default, the page in headless Chromium, and
the trace format with kernel durations against DEBUG=2's."""
import itertools, json, os, re, subprocess, sys, threading, time, urllib.request, urllib.error
import numpy as np
import pytest
from tinygrad import Tensor
from tinygrad.uop import upat
from tinygrad.codegen import PASSES
from tinygrad.viz.record import Recorder
from tinygrad.viz.profile import Profiler
from tinygrad.viz.serve import make_server

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ARTIFACTS = os.environ.get("TINYGRAD_TEST_ARTIFACTS", os.path.join(ROOT, ".artifacts"))

def _program(n: int = 12) -> np.ndarray:
  a, b = Tensor(np.arange(n*n, dtype=np.float32).reshape(n, n) / 50), Tensor(np.eye(n, dtype=np.float32)[::-1].copy())
  return (a @ b).softmax(-1).numpy()

def _ref(n: int = 12) -> np.ndarray:
  x = (np.arange(n*n, dtype=np.float32).reshape(n, n) / 50) @ np.eye(n, dtype=np.float32)[::-1]
  e = np.exp(x - x.max(-1, keepdims=True))
  return e / e.sum(-1, keepdims=True)

_sizes = itertools.count(11)

@pytest.fixture
def recorded(tmp_path):
  # a size no other test compiled: kernels in the method cache are not rendered again, so they would not be recorded
  n = next(_sizes)
  with Recorder() as rec: out = _program(n)
  return rec, (n, out), rec.save(str(tmp_path / "trace.json"))

def test_off_by_default_and_recording_changes_no_result(recorded):
  rec, (n, out), _ = recorded
  assert upat.TRACER is None   # uninstalled on exit, and nothing is installed unless VIZ=1 or a Recorder is entered
  np.testing.assert_allclose(out, _ref(n), rtol=1e-5, atol=1e-6)
  np.testing.assert_array_equal(out, _program(n))

def test_each_kernel_has_every_pass_source_and_compiled_size(recorded):
  rec, _, path = recorded
  with open(path) as f: t = json.load(f)
  assert t["kernels"], "no kernel recorded"
  for k in t["kernels"]:
    top = [t["steps"][i]["name"] for i in k["steps"]]
    assert top == [name for name, _ in PASSES]
    assert k["source"] and k["uops"] and k["device"] and k["renderer"]
    assert k["binary_bytes"] is None or k["binary_bytes"] > 0
    # the AST is the kernel's SINK; each pass's graphs are node ids in the table
    assert t["nodes"][k["ast"]][0] == "SINK"
    for i in k["steps"]:
      s = t["steps"][i]
      assert 0 <= s["in"] < len(t["nodes"]) and 0 <= s["out"] < len(t["nodes"]) and s["ms"] >= 0
  assert any(k["binary_bytes"] for k in t["kernels"]), "no compiled size reported"

def test_rule_matches_name_the_rule_source_line(recorded):
  rec, _, path = recorded
  with open(path) as f: t = json.load(f)
  matches = [m for s in t["steps"] for m in s["matches"]]
  assert matches, "no rule fired while compiling softmax(matmul)"
  for r, before, after in matches:
    assert before != after
    loc = t["rules"][r]["loc"]
    fn, line = loc.rsplit(":", 1)
    assert os.path.isfile(fn) or os.path.isfile(os.path.join(ROOT, fn)), loc
    with open(fn if os.path.isfile(fn) else os.path.join(ROOT, fn)) as f: text = f.read().splitlines()
    assert t["rules"][r]["src"].splitlines()[0].strip() == text[int(line) - 1].strip()

def test_nested_rewrites_belong_to_their_pass(recorded):
  rec, _, _ = recorded
  t = rec.to_json()
  for i, s in enumerate(t["steps"]):
    if s["parent"] is not None:
      assert s["parent"] < i and t["steps"][s["parent"]]["kernel"] == s["kernel"]

def test_spec_checks_under_a_recorder_are_not_rewrites():
  # SPEC=1 runs type_verify, whose rules answer True/False through PatternMatcher.rewrite: recording must skip them
  from tinygrad import Context
  with Context(SPEC=1), Recorder() as rec: out = _program(next(_sizes))
  assert rec.kernels and all(isinstance(m[2], int) for s in rec.steps for m in s["matches"])
  assert np.isfinite(out).all()

def test_step_limit_counts_what_it_drops():
  with Recorder(max_steps=5) as rec: _program(5)
  assert len(rec.steps) == 5 and rec.dropped > 0
  assert rec.to_json()["dropped_steps"] == rec.dropped

def test_server_serves_the_page_and_trace_only(recorded):
  _, _, path = recorded
  srv = make_server(path, 0)
  threading.Thread(target=srv.serve_forever, daemon=True).start()
  base = f"http://127.0.0.1:{srv.server_address[1]}"
  try:
    assert srv.server_address[0] == "127.0.0.1"
    assert b"viz.js" in urllib.request.urlopen(base + "/").read()
    assert b"drawGraph" in urllib.request.urlopen(base + "/viz.js").read()
    assert json.loads(urllib.request.urlopen(base + "/trace.json").read())["kernels"]
    for bad in ("/../../etc/passwd", "/static/index.html", "/trace.json/../x"):
      with pytest.raises(urllib.error.HTTPError) as e: urllib.request.urlopen(base + bad)
      assert e.value.code == 404
  finally: srv.shutdown(); srv.server_close()

def test_server_refuses_other_host_headers(recorded):
  # DNS rebinding: a page at evil.example whose name now resolves to 127.0.0.1 sends Host: evil.example:PORT
  import http.client
  _, _, path = recorded
  srv = make_server(path, 0)
  threading.Thread(target=srv.serve_forever, daemon=True).start()
  port = srv.server_address[1]
  def get(host: str | None, url: str = "/trace.json") -> int:
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.putrequest("GET", url, skip_host=True)
    if host is not None: c.putheader("Host", host)
    c.endheaders()
    code = c.getresponse().status
    c.close()
    return code
  try:
    assert get(f"127.0.0.1:{port}") == 200 and get(f"localhost:{port}") == 200 and get(f"LOCALHOST:{port}", "/") == 200
    for bad in (f"evil.example:{port}", "evil.example", f"127.0.0.1:{port + 1}", "127.0.0.1", f"127.0.0.1.evil.example:{port}", "", None):
      assert get(bad) == 403, bad
  finally: srv.shutdown(); srv.server_close()

def test_viz_env_writes_a_trace_at_exit(tmp_path):
  env = {**os.environ, "VIZ": "1", "XDG_CACHE_HOME": str(tmp_path)}
  r = subprocess.run([sys.executable, "-c", "from tinygrad import Tensor; print((Tensor.ones(4)+1).sum().item())"],
                     env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
  assert r.returncode == 0, r.stderr
  assert r.stdout.strip() == "8.0"
  m = re.search(r"python -m tinygrad\.viz (\S+)", r.stderr)   # not a terminal: it says how to serve rather than blocking
  assert m, r.stderr
  with open(m.group(1)) as f: assert json.load(f)["kernels"]

def test_cli_without_a_trace_says_what_to_do(tmp_path):
  r = subprocess.run([sys.executable, "-m", "tinygrad.viz"], env={**os.environ, "XDG_CACHE_HOME": str(tmp_path)},
                     capture_output=True, text=True, timeout=120)
  assert r.returncode == 2 and "VIZ=1" in r.stderr

# ---- the page, in a real browser ----

def _browser():
  webdriver = pytest.importorskip("selenium.webdriver", reason="the VIZ browser test drives Chromium with selenium: pip install selenium")
  from selenium.webdriver.chrome.service import Service
  chromium = next((p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if os.path.exists(p)), None)
  if chromium is None or not os.path.exists("/usr/bin/chromedriver"):
    pytest.skip("the VIZ browser test needs Debian's chromium and chromium-driver: apt-get install chromium chromium-driver")
  opts = webdriver.ChromeOptions()
  for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--window-size=1400,900"): opts.add_argument(a)
  opts.binary_location = chromium
  return webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=opts)

def test_page_draws_a_kernel_a_pass_and_its_source(recorded):
  from selenium.webdriver.common.by import By
  rec, _, path = recorded
  t = rec.to_json()
  srv = make_server(path, 0)
  threading.Thread(target=srv.serve_forever, daemon=True).start()
  d = _browser()
  try:
    d.get(f"http://127.0.0.1:{srv.server_address[1]}/")
    for _ in range(300):
      if d.execute_script("return document.body.dataset.ready"): break
      time.sleep(0.1)
    kernels = d.find_elements(By.CSS_SELECTOR, "#kernels .kernel")
    assert [k.text.split()[0] for k in kernels] == [k["name"] for k in t["kernels"]]
    # the kernel with the most rewrites: click it, then its pass whose rules fired most
    ki = max(range(len(t["kernels"])), key=lambda i: sum(len(t["steps"][s]["matches"]) for s in range(len(t["steps"])) if t["steps"][s]["kernel"] == i))
    kernels[ki].click()
    drawn = d.execute_script("return document.querySelectorAll('#graph svg g.node').length")
    assert drawn > 3, "the kernel's AST was not drawn"
    steps = [s for s in range(len(t["steps"])) if t["steps"][s]["kernel"] == ki]
    best = max(steps, key=lambda s: len(t["steps"][s]["matches"]))
    d.find_element(By.CSS_SELECTOR, f'.step[data-step="{best}"]').click()
    assert t["steps"][best]["name"] in d.find_element(By.ID, "title").text
    assert d.execute_script("return document.querySelectorAll('#graph svg g.node').length") > 3
    assert d.execute_script("return document.querySelectorAll('#graph svg path').length") > 0
    m = d.find_elements(By.CSS_SELECTOR, "#matches .match")
    assert len(m) == len(t["steps"][best]["matches"]) + sum(len(s["matches"]) for s in t["steps"] if s["parent"] == best)
    m[0].click()   # opens the rule's source and highlights its result in the graph
    assert t["rules"][t["steps"][best]["matches"][0][0]]["loc"] in m[0].text
    d.find_element(By.CSS_SELECTOR, "#tabs button[data-tab=source]").click()
    assert d.find_element(By.ID, "source").text.strip() == t["kernels"][ki]["source"].strip()
    d.find_element(By.CSS_SELECTOR, "#tabs button[data-tab=matches]").click()
    os.makedirs(ARTIFACTS, exist_ok=True)
    shot = os.path.join(ARTIFACTS, "viz_page.png")
    assert d.save_screenshot(shot) and os.path.getsize(shot) > 10_000
  finally:
    d.quit(); srv.shutdown(); srv.server_close()

# ---- PROFILE ----

def test_profile_trace_is_valid_and_kernels_match_debug2(tmp_path):
  out = tmp_path / "prof.json"
  prog = "from tinygrad import Tensor\nfor _ in range(2): (Tensor.arange(64).reshape(8, 8).float() @ Tensor.ones(8, 8)).softmax().numpy()\n"
  r = subprocess.run([sys.executable, "-c", prog], env={**os.environ, "PROFILE": "1", "DEBUG": "2", "PROFILE_PATH": str(out), "NO_COLOR": "1"},
                     capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stderr
  assert str(out) in r.stderr
  with open(out) as f: trace = json.load(f)
  evs = trace["traceEvents"]
  assert isinstance(evs, list) and evs
  for e in evs:
    assert e["ph"] in ("X", "M") and isinstance(e["pid"], int) and isinstance(e["tid"], int) and isinstance(e["name"], str)
    if e["ph"] == "X": assert e["ts"] >= 0 and e["dur"] >= 0 and isinstance(e["cat"], str)
  xs = [e for e in evs if e["ph"] == "X"]
  assert [e["ts"] for e in xs] == sorted(e["ts"] for e in xs)
  names = {e["pid"]: e["args"]["name"] for e in evs if e["ph"] == "M" and e["name"] == "process_name"}
  assert names[0] == "host" and {"schedule", "codegen", "kernel"} <= {e["cat"] for e in xs}
  # DEBUG=2's kernel lines: name and time; one trace event per run, same order, durations within 10%
  line = re.compile(r"\*\*\* (\S+)\s+\d+ (\S+) .* tm\s+([\d.]+)(us|ms)/")
  dbg = [(m.group(2), float(m.group(3)) * (1 if m.group(4) == "us" else 1e3)) for m in map(line.search, re.sub(r"\x1b\[[0-9;]*m", "", r.stdout).splitlines()) if m]
  kern = [(e["name"], e["dur"]) for e in xs if e["cat"] == "kernel"]
  assert len(dbg) >= 4 and [n for n, _ in kern] == [n for n, _ in dbg]
  for (_, us_trace), (_, us_dbg) in zip(kern, dbg): assert abs(us_trace - us_dbg) <= 0.1 * us_dbg + 0.02
  assert all(names[e["pid"]].startswith("CPU") or names[e["pid"]] for e in xs if e["cat"] == "kernel")

def test_profiler_records_jit_replays_and_copies():
  from tinygrad import TinyJit
  @TinyJit
  def f(x: Tensor) -> Tensor: return (x * 2).sum()
  with Profiler() as p:
    for i in range(4): f(Tensor([float(i), 1.0])).item()
    Tensor([1.0, 2.0]).to("PYTHON").realize()
  cats = [e["cat"] for e in p.to_json()["traceEvents"] if e["ph"] == "X"]
  assert cats.count("jit") == 2 and "copy" in cats

def test_beam_candidates_are_timeline_events_not_recorded_kernels(tmp_path):
  # BEAM times many candidate programs of one kernel: PROFILE shows each, VIZ keeps only the kernel that is built
  prog = ("import json, sys\nfrom tinygrad import Tensor\nfrom tinygrad.viz.record import Recorder\nfrom tinygrad.viz.profile import Profiler\n"
          "with Recorder() as rec, Profiler() as prof: (Tensor.arange(48).reshape(6, 8).float() * 3).sum(1).numpy()\n"
          "evs = [e for e in prof.to_json()['traceEvents'] if e['ph'] == 'X']\n"
          "print(json.dumps([sum(e['cat'] == 'beam' for e in evs), len(rec.kernels), sum(e['cat'] == 'kernel' for e in evs)]))\n")
  env = {**os.environ, "BEAM": "1", "BEAM_TIMEOUT": "20", "IGNORE_BEAM_CACHE": "1", "CACHEDB": str(tmp_path / "cache.db")}
  r = subprocess.run([sys.executable, "-c", prog], env=env, capture_output=True, text=True, timeout=300)
  assert r.returncode == 0, r.stderr
  beam, kernels, runs = json.loads(r.stdout.strip().splitlines()[-1])
  assert beam >= 2 and kernels == runs
