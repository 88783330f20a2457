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
    full = next((os.path.join(p, fn) for p in ["", *sys.path] if os.path.isfile(os.path.join(p, fn))), None)   # package-relative
    assert full is not None, loc
    with open(full) as f: text = f.read().splitlines()
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

def test_cli_with_a_missing_trace_says_it_is_missing(tmp_path):
  r = subprocess.run([sys.executable, "-m", "tinygrad.viz", str(tmp_path / "missing.json")], capture_output=True, text=True, timeout=120)
  assert r.returncode == 2 and f"trace at {tmp_path / 'missing.json'}" in r.stderr and "port" not in r.stderr

@pytest.mark.parametrize("what", ["VIZ", "PROFILE"])
def test_a_record_that_cannot_be_written_goes_to_the_temp_dir(tmp_path, what):
  # VIZ writes into the cache folder (here under a file, so it cannot be created), PROFILE to PROFILE_PATH (a missing folder)
  (tmp_path / "file").write_text("x")
  env = {**os.environ, what: "1", "XDG_CACHE_HOME": str(tmp_path / "file" / "xdg"), "PROFILE_PATH": str(tmp_path / "missing" / "p.json"),
         "TMPDIR": str(tmp_path)}
  r = subprocess.run([sys.executable, "-c", "from tinygrad import Tensor; print((Tensor.ones(4)+1).sum().item())"],
                     env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
  assert r.returncode == 0 and r.stdout.strip() == "8.0" and "Traceback" not in r.stderr, r.stderr
  m = re.search(rf"{what}: could not write the record \(.*\); writing it to (\S+) instead", r.stderr)
  assert m and os.path.dirname(m.group(1)) == str(tmp_path), r.stderr
  with open(m.group(1)) as f: rec = json.load(f)
  assert rec["kernels"] if what == "VIZ" else rec["traceEvents"]

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

@pytest.fixture(scope="module")
def browser():
  d = _browser()
  yield d
  d.quit()

@pytest.fixture(scope="module")
def page_trace(tmp_path_factory):
  """A recorded matmul + softmax with its PROFILE timeline (VIZ=1 PROFILE=1), and a copy to another device."""
  n = next(_sizes)
  with Recorder() as rec, Profiler() as prof:
    rec.profiler = prof
    _program(n)
    Tensor([1.0, 2.0]).to("PYTHON").realize()
  return rec.to_json(), rec.save(str(tmp_path_factory.mktemp("viz") / "trace.json"))

class Page:
  """The VIZ page of one trace, served on a free port and loaded in the shared browser."""
  def __init__(self, d, path: str):
    self.d, self.srv = d, make_server(path, 0)
    threading.Thread(target=self.srv.serve_forever, daemon=True).start()
    d.get(f"http://127.0.0.1:{self.srv.server_address[1]}/")
    for _ in range(600):
      if d.execute_script("return document.body.dataset.ready"): break
      time.sleep(0.1)
    assert d.execute_script("return document.body.dataset.ready"), "the page did not load its trace"
  def js(self, code: str): return self.d.execute_script(code)
  def click(self, css: str) -> None: self.d.find_element(By.CSS_SELECTOR, css).click()
  def text(self, id_: str) -> str: return self.d.find_element(By.ID, id_).text
  def shot(self, name: str) -> str:
    os.makedirs(ARTIFACTS, exist_ok=True)
    path = os.path.join(ARTIFACTS, name)
    assert self.d.save_screenshot(path) and os.path.getsize(path) > 10_000
    return path
  def errors(self) -> list: return [l for l in self.d.get_log("browser") if l["level"] == "SEVERE"]
  def close(self) -> None: self.srv.shutdown(); self.srv.server_close()

@pytest.fixture
def page(browser, page_trace):
  p = Page(browser, page_trace[1])
  yield p
  p.close()

from selenium.webdriver.common.by import By  # noqa: E402  (selenium is a test dependency: the browser fixture skips without it)

def test_page_draws_a_kernel_a_pass_and_its_source(page, page_trace):
  t = page_trace[0]
  kernels = page.d.find_elements(By.CSS_SELECTOR, "#kernels .kernel")
  assert [k.text.split()[0] for k in kernels] == [k["name"] for k in t["kernels"]]
  # the kernel with the most rewrites: click it, then its pass whose rules fired most
  ki = max(range(len(t["kernels"])), key=lambda i: sum(len(s["matches"]) for s in t["steps"] if s["kernel"] == i))
  kernels[ki].click()
  assert page.js("return document.querySelectorAll('#graph svg g.node').length") > 3, "the kernel's AST was not drawn"
  best = max((s for s in range(len(t["steps"])) if t["steps"][s]["kernel"] == ki), key=lambda s: len(t["steps"][s]["matches"]))
  page.click(f'.step[data-step="{best}"]')
  assert t["steps"][best]["name"] in page.text("title")
  assert page.js("return document.querySelectorAll('#graph svg g.node').length") > 3
  assert page.js("return document.querySelectorAll('#graph svg path').length") > 0
  m = page.d.find_elements(By.CSS_SELECTOR, "#matches .match")
  assert len(m) == len(t["steps"][best]["matches"]) + sum(len(s["matches"]) for s in t["steps"] if s["parent"] == best)
  m[0].click()   # opens the rule's source and steps to its rewrite
  assert t["rules"][t["steps"][best]["matches"][0][0]]["loc"] in m[0].text
  page.click("#tabs button[data-tab=source]")
  assert page.text("source").strip() == t["kernels"][ki]["source"].strip()
  page.click("#tabs button[data-tab=matches]")
  page.shot("viz_page.png")
  assert not page.errors(), page.errors()   # the favicon included: no 404 logged

def test_top_level_passes_count_the_rewrites_inside_them(page, page_trace):
  t = page_trace[0]
  def total(i: int) -> int: return len(t["steps"][i]["matches"]) + sum(total(j) for j, s in enumerate(t["steps"]) if s["parent"] == i)
  shown = page.js("return [...document.querySelectorAll('.step')].map(e => [+e.dataset.step, +e.querySelector('.n').textContent])")
  assert shown and all(n == total(i) for i, n in shown)
  # a pass whose rewrites all ran in a nested graph_rewrite (simplify) counts them: it showed 0
  assert any(n > 0 and not t["steps"][i]["matches"] for i, n in shown)

def test_stepping_replays_each_rewrite_with_its_rule(page, page_trace):
  t = page_trace[0]
  best = max(range(len(t["steps"])), key=lambda i: len(t["steps"][i]["matches"]))
  s, K = t["steps"][best], len(t["steps"][best]["matches"])
  page.click(f'.kernel[data-kernel="{s["kernel"]}"]')
  page.click(f'.step[data-step="{best}"]')
  assert page.js("return +document.getElementById('slider').max") == K and f"{K} / {K}" in page.text("stepinfo")
  # replaying every recorded (before -> after) pair on the pass's input rebuilds exactly the pass's output
  assert page.js(f"replayTo({K}); return stepper.states[{K}]") == s["out"]
  # a node drawn as its own box is outlined; a constant or folded index math lights the boxes that show it
  # (a result that was itself rewritten at once, by graph_rewrite's memo, is not in the graph: what changed is outlined)
  lit = lambda n: page.js(f"const v = drawn.stands.get({n}); if (!v) return !subgraph(drawn.root).includes({n}) && "
                          "document.querySelectorAll('#graph g.hl').length > 0; return v.length > 0 && v.every(x => document.querySelector(`#graph g.hl[data-id='${x}']`))")
  for k in sorted({1, 2, K // 2, K - 1, K}):
    page.js(f"stepTo({k})")
    r, b, a = s["matches"][k - 1]
    assert page.text("stepinfo").startswith(f"rewrite {k} / {K}") and t["rules"][r]["loc"] in page.text("rule")
    assert lit(a), f"rewrite {k}: its result {a} is not highlighted"
    page.click("input[name=side][value=in]")   # the graph before that one rewrite, with the node it replaced
    assert lit(b) or page.js("return stateAt(stepper.k-1) === stateAt(stepper.k)"), f"rewrite {k}: {b} is not highlighted before it"
    page.click("input[name=side][value=out]")
  page.click("#prev")
  assert page.text("stepinfo").startswith(f"rewrite {K - 1} / {K}")
  page.shot("viz_stepping.png")

def test_every_rule_click_highlights_its_result(page, page_trace):
  t = page_trace[0]
  best = max(range(len(t["steps"])), key=lambda i: len(t["steps"][i]["matches"]))
  page.click(f'.kernel[data-kernel="{t["steps"][best]["kernel"]}"]')
  page.click(f'.step[data-step="{best}"]')
  rows = page.d.find_elements(By.CSS_SELECTOR, "#matches .match")
  for row in rows[:15]:   # 12 of 552 did on a large pass: the drawn graph was the pass's output, not the rewrite's
    row.click()
    assert page.js("return document.querySelectorAll('#graph g.hl').length") > 0, row.text

def test_index_arithmetic_folds_into_its_index(page, page_trace):
  t = page_trace[0]
  best = max(range(len(t["steps"])), key=lambda i: len(t["steps"][i]["matches"]))
  page.click(f'.kernel[data-kernel="{t["steps"][best]["kernel"]}"]')
  page.click(f'.step[data-step="{best}"]')
  drawn, total = page.js("const s = document.querySelector('#graph svg'); return [+s.dataset.nodes, +s.dataset.total]")
  assert drawn < total and page.js("return [...document.querySelectorAll('#graph title')].some(e => /index: \\[/.test(e.textContent))")
  page.click("#fold")
  assert page.js("const s = document.querySelector('#graph svg'); return [+s.dataset.nodes, +s.dataset.total]") == [total, total]
  page.click("#fold")

def test_node_labels_fit_their_boxes(page, page_trace):
  t = page_trace[0]
  page.click('.kernel[data-kernel="0"]')
  for i in [i for i, s in enumerate(t["steps"]) if s["kernel"] == 0][:4]:
    page.click(f'.step[data-step="{i}"]')
    widths = page.js("return [...document.querySelectorAll('#graph g.node text')].map(e => e.getComputedTextLength())")
    assert widths and max(widths) <= page.js("return W") - 8, max(widths)

def test_schedule_view_marks_kernel_boundaries_and_why(page, page_trace):
  t = page_trace[0]
  i = max(range(len(t["schedules"])), key=lambda i: len(t["schedules"][i]["items"]))
  sc = t["schedules"][i]
  assert all(it["reason"] and it["reason"] != "unknown" for it in sc["items"])
  page.click(f'.schedule[data-schedule="{i}"]')
  marked = page.js("return [...document.querySelectorAll('#graph g.kb')].map(e => +e.dataset.id)")
  assert sorted(marked) == sorted(it["node"] for it in sc["items"] if it["node"] is not None)
  items = page.d.find_elements(By.CSS_SELECTOR, "#matches .item")
  assert len(items) == len(sc["items"]) and all(it["reason"] in row.text for it, row in zip(sc["items"], items))
  page.shot("viz_schedule.png")
  # a boundary opens the kernel that computes it
  k = next(j for j, it in enumerate(sc["items"]) if it["kind"] == "kernel")
  page.click(f'#graph g.kb[data-id="{sc["items"][k]["node"]}"]')
  assert any(kd["ast"] == sc["items"][k]["ast"] and kd["name"] in page.text("title") for kd in t["kernels"])

def test_timeline_view_of_the_profile(page, page_trace):
  t = page_trace[0]
  evs = [e for e in t["profile"]["traceEvents"] if e["ph"] == "X"]
  page.click("#timeline-item")
  assert page.js("return +document.querySelector('#graph svg').dataset.events") == len(evs)
  tracks = page.js("return [...document.querySelectorAll('#graph .track')].map(e => e.textContent)")
  assert any(x.startswith("host") for x in tracks) and any(x.startswith("CPU") or x.startswith("PYTHON") for x in tracks), tracks
  assert {"kernel", "copy", "compile"} <= set(page.js("return [...document.querySelectorAll('#graph g.ev')].map(e => e.dataset.cat)"))
  page.click("#zoomin")
  assert page.js("return document.querySelectorAll('#graph g.ev').length") <= len(evs)
  page.click("#zoomfit")
  assert page.js("return document.querySelectorAll('#graph g.ev').length") == len(evs)
  page.shot("viz_timeline.png")

def _big_trace(path: str, rows: int = 60, cols: int = 40) -> str:
  # a 2,400-node graph (a grid: each node adds two of the row above), one pass over it with a few rewrites
  nodes = [["DEFINE_VAR", "dtypes.float", f"x{c}", []] for c in range(cols)]
  for r in range(1, rows):
    nodes += [["ADD", "dtypes.float", None, [(r-1)*cols + c, (r-1)*cols + (c+1) % cols]] for c in range(cols)]
  nodes.append(["SINK", "dtypes.void", None, list(range((rows-1)*cols, rows*cols))])
  sink = len(nodes) - 1
  step = {"name": "big", "kind": "rewrite", "parent": None, "kernel": None, "in": sink, "out": sink, "ms": 1.0, "matches": []}
  with open(path, "w") as f: json.dump({"version": 2, "nodes": nodes, "rules": [], "steps": [step], "kernels": [], "schedules": [], "dropped_steps": 0}, f)
  return path

def test_zoom_to_fit_and_pan_a_large_graph(browser, tmp_path):
  page = Page(browser, _big_trace(str(tmp_path / "big.json")))
  try:
    page.click('.step[data-step="0"]')
    assert page.js("return +document.querySelector('#graph svg').dataset.nodes") >= 2000
    inside = ("const g = document.getElementById('graph').getBoundingClientRect(), n = [...document.querySelectorAll('#graph g.node')];"
              "return n.filter(e => { const r = e.getBoundingClientRect(); return r.left >= g.left - 1 && r.right <= g.right + 1 && r.top >= g.top - 1 && r.bottom <= g.bottom + 1; }).length")
    page.click("#zoomin"); page.click("#zoomin")
    assert page.js(inside) < 2400
    page.click("#zoomfit")
    assert page.js(inside) == 2401, "zoom-to-fit must bring every node into view"
    before = page.js("return document.querySelector('#graph g.viewport').getAttribute('transform')")
    from selenium.webdriver import ActionChains
    ActionChains(page.d).move_to_element(page.d.find_element(By.ID, "graph")).click_and_hold().move_by_offset(80, 40).release().perform()
    assert page.js("return document.querySelector('#graph g.viewport').getAttribute('transform')") != before, "dragging did not pan"
    page.shot("viz_large_fit.png")
  finally: page.close()

def test_profile_alone_opens_as_the_timeline(browser, tmp_path):
  with Profiler() as prof: (Tensor([1.0, 2.0, 3.0]) * 2).sum().item()
  page = Page(browser, prof.save(str(tmp_path / "prof.json")))
  try:
    assert "timeline" in page.text("title") and page.js("return document.querySelectorAll('#graph g.ev').length") > 0
  finally: page.close()

def test_rule_locations_are_relative_to_their_package(page_trace):
  t = page_trace[0]
  assert t["rules"]
  for r in t["rules"]:
    fn, line = r["loc"].rsplit(":", 1)
    assert not fn.startswith(".."), r["loc"]   # a chain of ../ up from the working directory
    assert fn.startswith(("tinygrad/", "tinygrad_")) or os.path.isabs(fn), r["loc"]
    assert any(os.path.isfile(os.path.join(p, fn)) for p in sys.path if p), r["loc"]

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

CLI_PROG = """from tinygrad import Tensor
from tinygrad.helpers import profile_marker
a = Tensor.arange(64).reshape(8, 8).float().realize()
profile_marker("start")
for _ in range(3): (a @ a).sum().realize()
profile_marker("end")
(a + 1).realize()
"""

@pytest.fixture(scope="module")
def cli_traces(tmp_path_factory):
  d = tmp_path_factory.mktemp("vizcli")
  env = {**os.environ, "VIZ": "1", "PROFILE": "1", "PROFILE_PATH": str(d / "prof.json"), "XDG_CACHE_HOME": str(d), "NO_COLOR": "1"}
  r = subprocess.run([sys.executable, "-c", CLI_PROG], env=env, capture_output=True, text=True, timeout=300, stdin=subprocess.DEVNULL)
  assert r.returncode == 0, r.stderr
  with open(d / "prof.json") as f: evs = json.load(f)["traceEvents"]
  return d, env, evs

def _cli(env: dict, *args: str) -> subprocess.CompletedProcess:
  return subprocess.run([sys.executable, "-m", "tinygrad.viz.cli", *args], env=env, capture_output=True, text=True, timeout=120)

def test_viz_cli_lists_every_kernel_run_in_order_with_markers(cli_traces):
  d, env, evs = cli_traces
  r = _cli(env)   # PROFILE_PATH's trace, the newest VIZ record under XDG_CACHE_HOME
  assert r.returncode == 0, r.stderr
  kern = [e["name"] for e in evs if e.get("cat") in ("kernel", "copy")]
  lines = r.stdout.splitlines()
  assert [ln.split()[2] for ln in lines if ln.startswith("***")] == kern
  marks = [i for i, ln in enumerate(lines) if ln.startswith("--- MARKER")]
  assert [lines[i].split()[2].split("/")[0] for i in marks] == ["start", "end"]
  between = [ln.split()[2] for ln in lines[marks[0]:marks[1]] if ln.startswith("***")]
  assert len(between) == 3 and len(set(between)) == 1   # (a @ a).sum(), one kernel: compiled once, run three times
  # --interval: only those; --json: the same rows as objects
  r = _cli(env, "--interval", "start", "end", "--json")
  rows = [json.loads(ln) for ln in r.stdout.splitlines()]
  runs = [x for x in rows if x["device"] != "MARKER"]
  assert [x["name"] for x in runs] == between and all(x["dur_ms"] >= 0 for x in runs)
  assert [x["name"] for x in rows if x["device"] == "MARKER"] == ["start", "end"]

def test_viz_cli_top_kernels_add_up(cli_traces):
  d, env, evs = cli_traces
  r = _cli(env, "-t", "-1", "--json")
  assert r.returncode == 0, r.stderr
  rows = [json.loads(ln) for ln in r.stdout.splitlines()]
  kern = [e for e in evs if e.get("cat") in ("kernel", "copy")]
  assert sum(x["count"] for x in rows) == len(kern) and abs(sum(x["pct"] for x in rows) - 100) < 1e-6
  assert [x["dur_ms"] for x in rows] == sorted((x["dur_ms"] for x in rows), reverse=True)
  for x in rows: assert x["dur_ms"] == pytest.approx(sum(e["dur"] for e in kern if e["name"] == x["name"]) * 1e-3)
  top1 = [json.loads(ln) for ln in _cli(env, "-t", "1", "--json").stdout.splitlines()]
  assert top1[0] == rows[0] and top1[1]["name"] == "Other" and top1[1]["count"] == len(kern) - rows[0]["count"]

def test_viz_cli_sources_host_work_and_a_passes_rewrites(cli_traces):
  d, env, evs = cli_traces
  assert _cli(env, "--list").stdout.split() == ["ALL", "host", "CPU"]
  host = _cli(env, "-s", "host").stdout
  assert "schedule" in host and "codegen" in host
  mm = next(e["name"] for e in evs if e.get("cat") == "kernel" and e["name"].startswith("r_"))
  out = _cli(env, "-s", "CPU", mm, "simplify", "--list").stdout.splitlines()
  assert all(mm in ln for ln in out if ln.startswith("***")) and any(ln.strip() == "optimize" for ln in out)
  rules = [ln for ln in out if re.search(r"tinygrad/\S+\.py:\d+: \w+", ln)]
  assert rules, "the simplify pass's rewrites, each with its rule's file:line"
  r = _cli(env, "-s", "NOPE")
  assert r.returncode == 2 and "ALL, host, CPU" in r.stderr
  r = _cli(env, "--interval", "nope")
  assert r.returncode == 2 and "start, end" in r.stderr
  r = _cli({**env, "PROFILE_PATH": str(d / "missing.json")})
  assert r.returncode == 2 and "missing.json" in r.stderr
