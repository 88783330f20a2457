// The VIZ page: reads /trace.json (tinygrad/viz/record.py's format) and draws graphs as SVG with a layered layout:
// a node's row is one more than its deepest source, so sources sit above their users; rows are ordered by the mean
// position of each node's sources (a few sweeps), which keeps most edges short. No library: nothing is fetched.
"use strict";
const NS = "http://www.w3.org/2000/svg", W = 150, H = 34, GX = 16, GY = 36, MAX_NODES = 4000;
let T = null, cur = { kind: null, idx: null }, side = "out", scale = 1, highlight = new Set();

const el = (tag, attrs = {}, text) => {
  const e = tag.startsWith("svg:") ? document.createElementNS(NS, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
};
const color = (op) => /^(LOAD|STORE|INDEX|DEFINE_GLOBAL|DEFINE_LOCAL|DEFINE_REG|BUFFER)/.test(op) ? "#4e6e8e" :
  /^(RANGE|END|SPECIAL|REDUCE|REDUCE_AXIS)/.test(op) ? "#7a5c8e" : /^(CONST|VCONST|DEFINE_VAR)/.test(op) ? "#555b66" :
  /^(SINK|KERNEL|PROGRAM)/.test(op) ? "#8e5c4e" : /^(VECTORIZE|GEP|CAT|UNROLL|CONTRACT)/.test(op) ? "#5c8e6e" : "#3d4a5c";

// a constant is drawn inside each user's box (its value in the label) rather than as one node with edges to everywhere
const inlined = (n) => T.nodes[n][0] === "CONST" && T.nodes[n][3].length === 0;
const srcsOf = (n) => T.nodes[n][3].filter(s => !inlined(s));

function subgraph(root) {   // the nodes under root, sources before users (iterative: graphs can be deep)
  const order = [], seen = new Set([root]), stack = [[root, 0]];
  while (stack.length) {
    const top = stack[stack.length - 1], srcs = top[0] === root && inlined(root) ? [] : srcsOf(top[0]);
    if (top[1] < srcs.length) { const s = srcs[top[1]++]; if (!seen.has(s)) { seen.add(s); stack.push([s, 0]); } }
    else { order.push(top[0]); stack.pop(); }
  }
  return order;
}

function layout(order) {
  const row = new Map(), rows = [];
  for (const n of order) {
    const r = srcsOf(n).reduce((m, s) => row.has(s) ? Math.max(m, row.get(s) + 1) : m, 0);
    row.set(n, r); (rows[r] = rows[r] || []).push(n);
  }
  const pos = new Map();
  rows.forEach(ns => ns.forEach((n, i) => pos.set(n, i)));
  for (let sweep = 0; sweep < 3; sweep++) {
    for (let r = 1; r < rows.length; r++) {
      const key = n => { const s = srcsOf(n).filter(x => pos.has(x)); return s.length ? s.reduce((a, x) => a + pos.get(x), 0) / s.length : pos.get(n); };
      rows[r].sort((a, b) => key(a) - key(b)); rows[r].forEach((n, i) => pos.set(n, i));
    }
  }
  const width = Math.max(...rows.map(r => r.length));
  const xy = new Map();
  rows.forEach((ns, r) => { const off = (width - ns.length) / 2; ns.forEach((n, i) => xy.set(n, [GX + (off + i) * (W + GX), GY / 2 + r * (H + GY)])); });
  return { xy, w: GX + width * (W + GX), h: GY + rows.length * (H + GY) };
}

function label(n) {
  const [op, dt, arg, srcs] = T.nodes[n];
  let a = arg === null ? "" : String(arg);
  const consts = srcs.filter(inlined).map(s => String(T.nodes[s][2]));
  if (consts.length) a = (a ? a + " " : "") + "[" + consts.join(",") + "]";
  if (a.length > 22) a = a.slice(0, 21) + "\u2026";
  return [`${n} ${op}`, `${dt.replace("dtypes.", "")} ${a}`];
}

function drawGraph(root, note) {
  const g = document.getElementById("graph");
  g.innerHTML = "";
  if (root === null || root === undefined) { g.appendChild(el("div", { class: "note" }, "no graph recorded for this step")); return; }
  let order = subgraph(root);
  if (order.length > MAX_NODES) { g.appendChild(el("div", { class: "note" }, `${order.length} nodes: drawing the last ${MAX_NODES}`)); order = order.slice(-MAX_NODES); }
  if (note) g.appendChild(el("div", { class: "note" }, note));
  const { xy, w, h } = layout(order);
  const svg = el("svg:svg", { width: w * scale, height: h * scale, viewBox: `0 0 ${w} ${h}`, "data-nodes": order.length });
  const edges = el("svg:g", { class: "edges" }), nodes = el("svg:g", { class: "nodes" });
  for (const n of order) {
    const [x, y] = xy.get(n);
    for (const s of srcsOf(n)) {
      if (!xy.has(s)) continue;
      const [sx, sy] = xy.get(s), x1 = sx + W / 2, y1 = sy + H, x2 = x + W / 2, my = (y1 + y) / 2;
      edges.appendChild(el("svg:path", { d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y}` }));
    }
    const grp = el("svg:g", { class: "node" + (highlight.has(n) ? " hl" : ""), "data-id": n, transform: `translate(${x},${y})` });
    grp.appendChild(el("svg:rect", { width: W, height: H, fill: color(T.nodes[n][0]) }));
    const [l1, l2] = label(n);
    grp.appendChild(el("svg:text", { x: 6, y: 14 }, l1));
    grp.appendChild(el("svg:text", { x: 6, y: 28 }, l2));
    const title = el("svg:title", {}, `${T.nodes[n][0]} ${T.nodes[n][1]} arg=${T.nodes[n][2]}` + (T.nodes[n][4] ? ` tag=${T.nodes[n][4]}` : ""));
    grp.appendChild(title);
    nodes.appendChild(grp);
  }
  svg.appendChild(edges); svg.appendChild(nodes); g.appendChild(svg);
  // a highlighted node (a rule's result) is brought into view; otherwise the top of the graph, centred
  const hl = svg.querySelector("g.hl");
  if (hl) hl.scrollIntoView({ block: "center", inline: "center" });
  else { g.scrollTop = 0; g.scrollLeft = Math.max(0, (g.scrollWidth - g.clientWidth) / 2); }
}

function showMatches(step) {
  const m = document.getElementById("matches");
  m.innerHTML = "";
  const all = [];
  const walk = (i) => { all.push(...T.steps[i].matches.map(x => [i, ...x])); T.steps.forEach((s, j) => { if (s.parent === i) walk(j); }); };
  if (step !== null) walk(step);
  if (!all.length) { m.appendChild(el("div", { class: "note" }, step === null ? "pick a pass to see its rules" : "no rule fired in this step")); return; }
  const counts = new Map();
  for (const [, r] of all) counts.set(r, (counts.get(r) || 0) + 1);
  m.appendChild(el("div", { class: "note" }, `${all.length} rewrites by ${counts.size} rules`));
  for (const [si, r, b, a] of all.slice(0, 2000)) {
    const rule = T.rules[r], d = el("div", { class: "match", "data-rule": r });
    const head = el("span", {}, `${T.steps[si].name}: `);
    head.appendChild(el("span", { class: "loc" }, rule.loc));
    head.appendChild(document.createTextNode(`  ${b} ${T.nodes[b][0]} \u2192 ${a} ${T.nodes[a][0]}`));
    d.appendChild(head); d.appendChild(el("pre", {}, rule.src || "(source not available)"));
    d.onclick = () => { d.classList.toggle("open"); highlight = new Set([side === "in" ? b : a]); redraw(); };
    m.appendChild(d);
  }
}

function select(kind, idx, elem) {
  document.querySelectorAll(".selected").forEach(e => e.classList.remove("selected"));
  if (elem) elem.classList.add("selected");
  cur = { kind, idx }; highlight = new Set();
  const k = kind === "kernel" ? T.kernels[idx] : (T.steps[idx].kernel !== null ? T.kernels[T.steps[idx].kernel] : null);
  document.getElementById("source").textContent = k ? k.source : "";
  document.getElementById("uops").textContent = k ? k.uops.join("\n") : "";
  if (kind === "kernel") {
    document.getElementById("title").textContent = `${k.name} on ${k.device} (${k.renderer})` + (k.binary_bytes !== null ? `, ${k.binary_bytes} bytes compiled` : "");
    showMatches(null);
  } else {
    const s = T.steps[idx];
    document.getElementById("title").textContent = `${s.name} (${s.kind}, ${s.ms.toFixed(2)} ms)` + (k ? ` in ${k.name}` : "");
    showMatches(idx);
  }
  redraw();
}

function redraw() {
  if (cur.kind === "kernel") drawGraph(T.kernels[cur.idx].ast, "the kernel's AST as scheduled");
  else if (cur.kind === "step") { const s = T.steps[cur.idx]; drawGraph(side === "in" || s.out === null ? s.in : s.out); }
}

function stepItem(i, depth) {
  const s = T.steps[i], d = el("div", { class: "step", "data-step": i, style: `padding-left:${4 + depth * 10}px` });
  d.appendChild(document.createTextNode(`${s.name} `));
  d.appendChild(el("span", { class: "n" }, `${s.matches.length}`));
  d.onclick = (ev) => { ev.stopPropagation(); select("step", i, d); };
  return d;
}

function build() {
  const ks = document.getElementById("kernels"), os = document.getElementById("others");
  const children = new Map();
  T.steps.forEach((s, i) => { if (s.parent !== null) (children.get(s.parent) || children.set(s.parent, []).get(s.parent)).push(i); });
  const addSteps = (box, i, depth) => { box.appendChild(stepItem(i, depth)); for (const c of children.get(i) || []) addSteps(box, c, depth + 1); };
  T.kernels.forEach((k, i) => {
    const d = el("div", { class: "kernel", "data-kernel": i });
    d.appendChild(document.createTextNode(`${k.name} `)); d.appendChild(el("span", { class: "dev" }, k.device));
    const box = el("div", { class: "steps" });
    for (const s of k.steps) addSteps(box, s, 0);
    d.onclick = () => { box.classList.toggle("open"); select("kernel", i, d); };
    ks.appendChild(d); ks.appendChild(box);
  });
  const top = T.steps.map((s, i) => i).filter(i => T.steps[i].kernel === null && T.steps[i].parent === null);
  for (const i of top.slice(0, 1000)) addSteps(os, i, 0);
  if (top.length > 1000) os.appendChild(el("div", { class: "note" }, `${top.length - 1000} more not listed`));
  document.getElementById("summary").textContent = `${T.kernels.length} kernels, ${T.steps.length} steps, ${T.nodes.length} nodes` +
    (T.dropped_steps ? ` (${T.dropped_steps} steps past VIZ_MAX_STEPS not kept)` : "");
}

document.querySelectorAll("input[name=side]").forEach(r => r.onchange = () => { side = r.value; redraw(); });
document.getElementById("zoomin").onclick = () => { scale *= 1.25; redraw(); };
document.getElementById("zoomout").onclick = () => { scale /= 1.25; redraw(); };
document.querySelectorAll("#tabs button").forEach(b => b.onclick = () => {
  document.querySelectorAll("#tabs button, .pane").forEach(e => e.classList.remove("active"));
  b.classList.add("active"); document.getElementById(b.dataset.tab).classList.add("active");
});
fetch("trace.json").then(r => r.json()).then(t => { T = t; build(); document.body.dataset.ready = "1"; })
  .catch(e => { document.getElementById("summary").textContent = `could not load the trace: ${e}`; });
