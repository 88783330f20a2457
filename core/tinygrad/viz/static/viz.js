// The VIZ page: reads /trace.json (tinygrad/viz/record.py's format) and draws, as SVG with no library (nothing is fetched):
// - graphs with a layered layout (a node's row is one more than its deepest source; rows ordered by the mean position of
//   their sources), pan (drag), zoom (wheel, +/-) and zoom-to-fit; index arithmetic can be folded into the INDEX it feeds;
// - each rewrite of a pass, one at a time: the graph after k rewrites is rebuilt from the pass's input by replaying the
//   recorded (before -> after) pairs, with graph_rewrite's memo (a node rewritten once stands for its result everywhere);
// - the scheduler's tensor graphs with the nodes that became kernels, and why;
// - the PROFILE=1 timeline (kernels per device, compile threads, copies) when the trace carries one.
"use strict";
const NS = "http://www.w3.org/2000/svg", W = 170, H = 34, GX = 16, GY = 36, MAX_NODES = 6000, MAX_STATES = 4000;
let T = null, N0 = 0, X = [], keyMap = null;
let cur = { kind: null, idx: null }, side = "out", collapse = true, highlight = new Set(), marked = new Map();
let stepper = null;   // {src: step index whose matches are replayed, states: [root after k rewrites], k}
let vp = { x: 0, y: 0, k: 1 }, drawn = null, charW = 6.6;

const $ = (id) => document.getElementById(id);
const el = (tag, attrs = {}, text) => {
  const e = tag.startsWith("svg:") ? document.createElementNS(NS, tag.slice(4)) : document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
};
const nd = (i) => i < N0 ? T.nodes[i] : X[i - N0];
const color = (op) => /^(LOAD|STORE|INDEX|DEFINE_GLOBAL|DEFINE_LOCAL|DEFINE_REG|BUFFER)/.test(op) ? "#4e6e8e" :
  /^(RANGE|END|SPECIAL|REDUCE|REDUCE_AXIS)/.test(op) ? "#7a5c8e" : /^(CONST|VCONST|DEFINE_VAR)/.test(op) ? "#555b66" :
  /^(SINK|KERNEL|PROGRAM)/.test(op) ? "#8e5c4e" : /^(VECTORIZE|GEP|CAT|UNROLL|CONTRACT)/.test(op) ? "#5c8e6e" :
  /^(COPY|CONTIGUOUS|ASSIGN)/.test(op) ? "#8e7a4e" : "#3d4a5c";

// ---- graphs ----
// a constant is drawn inside each user's box (its value in the label) rather than as one node with edges to everywhere
const inlined = (n) => nd(n)[0] === "CONST" && nd(n)[3].length === 0;
const srcsOf = (n) => nd(n)[3].filter(s => !inlined(s));

function subgraph(root) {   // the nodes under root, sources before users (iterative: graphs can be deep)
  const order = [], seen = new Set([root]), stack = [[root, 0]];
  while (stack.length) {
    const top = stack[stack.length - 1], srcs = top[0] === root && inlined(root) ? [] : srcsOf(top[0]);
    if (top[1] < srcs.length) { const s = srcs[top[1]++]; if (!seen.has(s)) { seen.add(s); stack.push([s, 0]); } }
    else { order.push(top[0]); stack.pop(); }
  }
  return order;
}

// index arithmetic (integer ALU feeding only INDEX offsets, gates and other index arithmetic) folded into its INDEX
const IDX_OPS = new Set(["ADD", "SUB", "MUL", "IDIV", "MOD", "NEG", "CMPLT", "CMPNE", "CMPEQ", "AND", "OR", "XOR", "SHL", "SHR", "MAX", "WHERE", "CAST", "CONST"]);
const SYM = { ADD: "+", SUB: "-", MUL: "*", IDIV: "//", MOD: "%", CMPLT: "<", CMPNE: "!=", CMPEQ: "==", AND: "&", OR: "|", XOR: "^", SHL: "<<", SHR: ">>" };
const intish = (dt) => /^dtypes\.(index|bool|u?int|u?long|u?short|u?char|int\d|uint\d)/.test(dt);
function folded(order) {
  const users = new Map(), hidden = new Set();
  for (const n of order) for (const s of nd(n)[3]) (users.get(s) || users.set(s, []).get(s)).push(n);
  for (let i = order.length - 1; i >= 0; i--) {   // users before their sources
    const n = order[i], [op, dt] = nd(n), us = users.get(n) || [];
    if (!IDX_OPS.has(op) || !intish(dt) || !us.length) continue;
    if (us.every(u => hidden.has(u) || (nd(u)[0] === "INDEX" && nd(u)[3][0] !== n))) hidden.add(n);
  }
  return hidden;
}
function leafName(n) {
  const [op, , arg] = nd(n);
  if (op === "RANGE") { const m = /(-?\d+)/.exec(String(arg)); return "r" + (m ? m[1] : n); }
  if (op === "SPECIAL" || op === "DEFINE_VAR") return String(arg).replace(/[()' ]/g, "").split(",")[0];
  if (op === "CONST") return String(arg);
  return `${op.toLowerCase()}#${n}`;
}
function expr(n, hidden, memo) {
  if (memo.has(n)) return memo.get(n);
  const [op, , arg, srcs] = nd(n);
  let out;
  if (!hidden.has(n) || op === "CONST") out = leafName(n);
  else {
    const a = srcs.map(s => expr(s, hidden, memo));
    out = SYM[op] ? `(${a.join(SYM[op])})` : op === "NEG" ? `-${a[0]}` : op === "CAST" ? a[0] : op === "WHERE" ? `(${a[0]}?${a[1]}:${a[2]})` : `${op.toLowerCase()}(${a.join(",")})`;
  }
  if (out.length > 300) out = out.slice(0, 299) + "\u2026";
  memo.set(n, out);
  return out;
}
// the visible sources of n: through hidden nodes down to the first visible ones
function visibleSrcs(n, hidden) {
  const out = new Set(), stack = [...srcsOf(n)], seen = new Set();
  while (stack.length) {
    const s = stack.pop();
    if (seen.has(s)) continue;
    seen.add(s);
    if (hidden.has(s)) stack.push(...srcsOf(s)); else out.add(s);
  }
  return [...out];
}

function layout(order, srcs) {
  const row = new Map(), rows = [];
  for (const n of order) {
    const r = srcs.get(n).reduce((m, s) => row.has(s) ? Math.max(m, row.get(s) + 1) : m, 0);
    row.set(n, r); (rows[r] = rows[r] || []).push(n);
  }
  const pos = new Map();
  rows.forEach(ns => ns.forEach((n, i) => pos.set(n, i)));
  for (let sweep = 0; sweep < 3; sweep++) {
    for (let r = 1; r < rows.length; r++) {
      const key = new Map(rows[r].map(n => { const s = srcs.get(n).filter(x => pos.has(x)); return [n, s.length ? s.reduce((a, x) => a + pos.get(x), 0) / s.length : pos.get(n)]; }));
      rows[r].sort((a, b) => key.get(a) - key.get(b)); rows[r].forEach((n, i) => pos.set(n, i));
    }
  }
  const width = Math.max(1, ...rows.map(r => r.length));
  const xy = new Map();
  rows.forEach((ns, r) => { const off = (width - ns.length) / 2; ns.forEach((n, i) => xy.set(n, [GX + (off + i) * (W + GX), GY / 2 + r * (H + GY)])); });
  return { xy, w: GX + width * (W + GX), h: GY + rows.length * (H + GY) };
}

const fit = (s, chars) => s.length <= chars ? s : s.slice(0, Math.max(1, chars - 1)) + "\u2026";
function labels(n, ex) {
  const [op, dt, arg, srcs] = nd(n);
  let a = arg === null ? "" : String(arg);
  const consts = srcs.filter(inlined).map(s => String(nd(s)[2]));
  if (consts.length) a = (a ? a + " " : "") + "[" + consts.join(",") + "]";
  if (ex) a = (a ? a + " " : "") + ex;
  const chars = Math.floor((W - 12) / charW), mark = marked.get(n);
  return [fit(`${mark ? mark.label + " " : ""}${n} ${op}`, chars), fit(`${dt.replace("dtypes.", "")} ${a}`, chars)];
}

function setView(g) { g.setAttribute("transform", `translate(${vp.x},${vp.y}) scale(${vp.k})`); }
function zoomToFit() {
  if (!drawn) return;
  const box = $("graph").getBoundingClientRect();
  vp.k = Math.min(1, (box.width - 8) / drawn.w, (box.height - 8) / drawn.h);
  vp.x = (box.width - drawn.w * vp.k) / 2; vp.y = Math.max(4, (box.height - drawn.h * vp.k) / 2);
  setView(drawn.g);
}
function zoomBy(f, cx, cy) {
  if (!drawn) return;
  const box = $("graph").getBoundingClientRect();
  if (cx === undefined) { cx = box.width / 2; cy = box.height / 2; }
  const k = Math.min(4, Math.max(0.01, vp.k * f));
  vp.x = cx - (cx - vp.x) * k / vp.k; vp.y = cy - (cy - vp.y) * k / vp.k; vp.k = k;
  setView(drawn.g);
}
function centerOn(n) {
  if (!drawn || !drawn.xy.has(n)) return;
  const box = $("graph").getBoundingClientRect(), [x, y] = drawn.xy.get(n);
  vp.k = Math.max(vp.k, 0.6);
  vp.x = box.width / 2 - (x + W / 2) * vp.k; vp.y = box.height / 2 - (y + H / 2) * vp.k;
  setView(drawn.g);
}

function drawGraph(root, note) {
  const g = $("graph");
  g.innerHTML = ""; drawn = null;
  if (root === null || root === undefined) { g.appendChild(el("div", { class: "note" }, "no graph recorded for this step")); return; }
  let order = subgraph(root);
  const notes = [];
  if (order.length > MAX_NODES) { notes.push(`${order.length} nodes: drawing the last ${MAX_NODES}`); order = order.slice(-MAX_NODES); }
  const hidden = collapse ? folded(order) : new Set(), memo = new Map();
  if (hidden.size) notes.push(`${hidden.size} index arithmetic nodes folded into their INDEX (uncheck "fold index math" to see them)`);
  if (note) notes.push(note);
  const vis = order.filter(n => !hidden.has(n)), srcs = new Map(vis.map(n => [n, visibleSrcs(n, hidden)]));
  const { xy, w, h } = layout(vis, srcs);
  // a highlighted node drawn inside others (a constant, folded index math) lights up the boxes that show it
  const users = new Map(), stands = new Map();
  for (const n of order) for (const s of nd(n)[3]) (users.get(s) || users.set(s, []).get(s)).push(n);
  const standIn = (n) => {
    const out = new Set(), stack = [n], seen = new Set();
    while (stack.length) { const x = stack.pop(); if (seen.has(x)) continue; seen.add(x); if (xy.has(x)) out.add(x); else stack.push(...(users.get(x) || [])); }
    return [...out];
  };
  const lit = new Set();
  for (const n of highlight) { const v = xy.has(n) ? [n] : standIn(n); stands.set(n, v); v.forEach(x => lit.add(x)); }
  const svg = el("svg:svg", { width: "100%", height: "100%", "data-nodes": vis.length, "data-total": order.length });
  const vpg = el("svg:g", { class: "viewport" }), edges = el("svg:g", { class: "edges" }), nodes = el("svg:g", { class: "nodes" });
  for (const n of vis) {
    const [x, y] = xy.get(n);
    for (const s of srcs.get(n)) {
      if (!xy.has(s)) continue;
      const [sx, sy] = xy.get(s), x1 = sx + W / 2, y1 = sy + H, x2 = x + W / 2, my = (y1 + y) / 2;
      edges.appendChild(el("svg:path", { d: `M${x1},${y1} C${x1},${my} ${x2},${my} ${x2},${y}` }));
    }
    const hs = nd(n)[3].filter(s => hidden.has(s) && !inlined(s)).map(s => expr(s, hidden, memo));
    const ex = hs.length ? "[" + hs.join(", ") + "]" : "";
    const mark = marked.get(n);
    const grp = el("svg:g", { class: "node" + (lit.has(n) ? " hl" : "") + (mark ? " kb" : ""), "data-id": n, transform: `translate(${x},${y})` });
    grp.appendChild(el("svg:rect", { width: W, height: H, fill: color(nd(n)[0]) }));
    const [l1, l2] = labels(n, ex);
    grp.appendChild(el("svg:text", { x: 6, y: 14 }, l1));
    grp.appendChild(el("svg:text", { x: 6, y: 28 }, l2));
    grp.appendChild(el("svg:title", {}, `${n} ${nd(n)[0]} ${nd(n)[1]} arg=${nd(n)[2]}` + (nd(n)[4] ? ` tag=${nd(n)[4]}` : "") +
      (ex ? `\nindex: ${ex}` : "") + (mark ? `\n${mark.label}: ${mark.why}` : "")));
    grp.onclick = () => { if (mark && mark.kernel !== null && mark.kernel !== undefined) openKernel(mark.kernel); };
    nodes.appendChild(grp);
  }
  vpg.appendChild(edges); vpg.appendChild(nodes); svg.appendChild(vpg);
  if (notes.length) g.appendChild(el("div", { class: "note" }, notes.join("; ")));
  g.appendChild(svg);
  drawn = { g: vpg, xy, w, h, root, stands };
  // a highlighted node (a rewrite's result) is centred; a graph bigger than the view is fitted, else shown at full size
  const hl = [...lit][0];
  const box = g.getBoundingClientRect();
  if (w > box.width || h > box.height) zoomToFit(); else { vp = { x: Math.max(4, (box.width - w) / 2), y: 4, k: 1 }; setView(vpg); }
  if (hl !== undefined) centerOn(hl);
}

// ---- per-rewrite stepping: replay the pass's (before -> after) pairs on its input graph ----
const keyOf = (op, dt, arg, tag, srcs) => JSON.stringify([op, dt, arg, tag === undefined ? null : tag, srcs]);
function mk(op, dt, arg, tag, srcs) {
  if (!keyMap) { keyMap = new Map(); T.nodes.forEach((n, i) => { const k = keyOf(n[0], n[1], n[2], n[4], n[3]); if (!keyMap.has(k)) keyMap.set(k, i); }); }
  const k = keyOf(op, dt, arg, tag, srcs);
  let i = keyMap.get(k);
  if (i === undefined) { i = N0 + X.length; X.push(tag === undefined || tag === null ? [op, dt, arg, srcs] : [op, dt, arg, srcs, tag]); keyMap.set(k, i); }
  return i;
}
// the graph under root with every replacement in M applied (sources first; a result that was rewritten itself is followed)
function resolve(root, M) {
  const memo = new Map(), active = new Set(), st = [[root, 0, -1]];
  const done = (x, v) => { memo.set(x, v); active.delete(x); if (v !== x && !M.has(x)) M.set(x, v); };
  while (st.length) {
    const top = st[st.length - 1], x = top[0];
    if (top[1] === 0) {
      if (memo.has(x)) { st.pop(); continue; }
      top[1] = 1; active.add(x);
      for (const s of nd(x)[3]) if (!memo.has(s) && !active.has(s)) st.push([s, 0, -1]);
    } else if (top[1] === 1) {
      const n = nd(x), srcs = n[3].map(s => memo.has(s) ? memo.get(s) : s);
      const y = srcs.every((s, i) => s === n[3][i]) ? x : mk(n[0], n[1], n[2], n[4], srcs), t = M.get(y);
      if (t === undefined || t === y || t === x || active.has(t)) { st.pop(); done(x, y); }
      else if (memo.has(t)) { st.pop(); done(x, memo.get(t)); }
      else { top[1] = 2; top[2] = t; st.push([t, 0, -1]); }
    } else { st.pop(); done(x, memo.has(top[2]) ? memo.get(top[2]) : top[2]); }
  }
  return memo.get(root);
}
// the step whose rewrites the slider replays: the step's own, else its first nested rewrite that has some
function stepSource(i) {
  if (T.steps[i].matches.length) return i;
  const kids = T.steps.map((s, j) => j).filter(j => T.steps[j].parent === i);
  for (const j of kids) { const r = stepSource(j); if (r !== null) return r; }
  return null;
}
function buildStepper(i) {
  const src = stepSource(i);
  if (src === null) return null;
  const n = Math.min(T.steps[src].matches.length, MAX_STATES);
  return { src, states: [T.steps[src].in], results: [null], M: new Map(), n, k: n };
}
// replay up to rewrite k (states are built once, in order, when first needed); results[k]: what rewrite k's result
// became in the graph (itself, or what the memo already made of it)
function replayTo(k) {
  const s = T.steps[stepper.src];
  while (stepper.states.length <= k) {
    const [, b, a] = s.matches[stepper.states.length - 1];
    stepper.M.set(b, a);
    stepper.states.push(resolve(stepper.states[stepper.states.length - 1], stepper.M));
    stepper.results.push(resolve(a, stepper.M));
  }
}
function stateAt(k) {   // the pass's own output stands for the last state until the replay gets there
  if (k === stepper.n && stepper.n === T.steps[stepper.src].matches.length && stepper.states.length <= k) return T.steps[stepper.src].out;
  replayTo(k);
  return stepper.states[k];
}
function stepInfo() {
  const info = $("stepinfo"), rule = $("rule");
  if (!stepper) { $("stepper").style.display = "none"; return; }
  $("stepper").style.display = "";
  const s = T.steps[stepper.src], K = stepper.n, k = stepper.k, slider = $("slider");
  slider.max = K; slider.value = k;
  if (k === 0) { info.textContent = `0 / ${K}: the input of ${s.name}`; rule.textContent = ""; return; }
  const [r, b, a] = s.matches[k - 1];
  info.textContent = `rewrite ${k} / ${K} of ${s.name}: ${b} ${nd(b)[0]} \u2192 ${a} ${nd(a)[0]}`;
  rule.innerHTML = "";
  rule.appendChild(el("span", { class: "loc" }, T.rules[r].loc));
  rule.appendChild(el("pre", {}, T.rules[r].src || "(source not available)"));
}
function stepTo(k) {
  if (!stepper) return;
  stepper.k = Math.max(0, Math.min(stepper.n, k)); stepper.moved = true;
  stepInfo(); redraw();
}
function stepGraph() {   // the graph to draw for the current rewrite and side, with what that rewrite changed highlighted
  const k = stepper.k;
  if (k === 0) { highlight = new Set(); return stepper.states[0]; }
  if (!stepper.moved && side === "out") { highlight = new Set(); return stateAt(k); }   // just selected: the pass's output, no replay yet
  const [, b, a] = T.steps[stepper.src].matches[k - 1], s0 = stateAt(k - 1), s1 = stateAt(k);
  // outlined: the rewritten node and what the rule made under it (not the ancestors rebuilt around it)
  const before = new Set(subgraph(s0)), after = new Set(subgraph(s1));
  if (side === "in") { highlight = new Set(before.has(b) ? subgraph(b).filter(n => !after.has(n)).concat([b]) : []); return s0; }
  const res = after.has(stepper.results[k]) ? stepper.results[k] : a;
  highlight = new Set(after.has(res) ? subgraph(res).filter(n => !before.has(n)).concat([res]) : [...after].filter(n => !before.has(n)));
  return s1;
}

// ---- the rules that fired ----
function descendants(i) { const out = [i]; T.steps.forEach((s, j) => { if (s.parent !== null && out.includes(s.parent) && !out.includes(j)) out.push(j); }); return out; }
function totalMatches(i) { return descendants(i).reduce((a, j) => a + T.steps[j].matches.length, 0); }
function showMatches(step) {
  const m = $("matches");
  m.innerHTML = "";
  const all = [];
  if (step !== null) for (const j of descendants(step)) all.push(...T.steps[j].matches.map((x, k) => [j, k, ...x]));
  if (!all.length) { m.appendChild(el("div", { class: "note" }, step === null ? "pick a pass to see its rules" : "no rule fired in this step")); return; }
  const counts = new Map();
  for (const [, , r] of all) counts.set(r, (counts.get(r) || 0) + 1);
  m.appendChild(el("div", { class: "note" }, `${all.length} rewrites by ${counts.size} rules (click one to step to it)`));
  for (const [si, k, r, b, a] of all.slice(0, 3000)) {
    const rule = T.rules[r], d = el("div", { class: "match", "data-rule": r, "data-step": si, "data-k": k + 1 });
    const head = el("span", {}, `${T.steps[si].name}: `);
    head.appendChild(el("span", { class: "loc" }, rule.loc));
    head.appendChild(document.createTextNode(`  ${b} ${nd(b)[0]} \u2192 ${a} ${nd(a)[0]}`));
    d.appendChild(head); d.appendChild(el("pre", {}, rule.src || "(source not available)"));
    d.onclick = () => {
      document.querySelectorAll(".match.open").forEach(x => { if (x !== d) x.classList.remove("open"); });
      d.classList.toggle("open");
      if (!stepper || stepper.src !== si) { stepper = buildStepper(si); if (stepper && stepper.src !== si) stepper = null; }
      if (stepper) stepTo(k + 1); else { highlight = new Set([side === "in" ? b : a]); drawGraph(side === "in" ? b : a, "the rule's own graph"); }
    };
    m.appendChild(d);
  }
}

// ---- selection ----
function select(kind, idx, elem) {
  document.querySelectorAll(".selected").forEach(e => e.classList.remove("selected"));
  if (elem) elem.classList.add("selected");
  cur = { kind, idx }; highlight = new Set(); marked = new Map(); stepper = null;
  const k = kind === "kernel" ? T.kernels[idx] : kind === "step" && T.steps[idx].kernel !== null ? T.kernels[T.steps[idx].kernel] : null;
  $("source").textContent = k ? k.source : "";
  $("uops").textContent = k ? k.uops.join("\n") : "";
  $("graphctl").style.display = kind === "timeline" ? "none" : "";
  if (kind === "kernel") {
    $("title").textContent = `${k.name} on ${k.device} (${k.renderer})` + (k.binary_bytes !== null ? `, ${k.binary_bytes} bytes compiled` : "");
    showMatches(null);
  } else if (kind === "step") {
    const s = T.steps[idx];
    $("title").textContent = `${s.name} (${s.kind}, ${s.ms.toFixed(2)} ms, ${totalMatches(idx)} rewrites)` + (k ? ` in ${k.name}` : "");
    stepper = buildStepper(idx);
    showMatches(idx);
  } else if (kind === "schedule") showSchedule(idx);
  else if (kind === "timeline") showTimelineInfo();
  stepInfo();
  redraw();
}
function redraw() {
  if (cur.kind === "kernel") drawGraph(T.kernels[cur.idx].ast, "the kernel's AST as scheduled");
  else if (cur.kind === "step") {
    const s = T.steps[cur.idx];
    if (stepper) drawGraph(stepGraph());
    else drawGraph(side === "in" || s.out === null ? s.in : s.out);
  } else if (cur.kind === "schedule") drawGraph(T.schedules[cur.idx].graph, "kernel boundaries are outlined; click one to open its kernel");
  else if (cur.kind === "timeline") drawTimeline();
}
function openKernel(ast) {
  const i = T.kernels.findIndex(k => k.ast === ast);
  if (i < 0) return;
  const d = document.querySelector(`.kernel[data-kernel="${i}"]`);
  if (d) { d.nextSibling.classList.add("open"); d.scrollIntoView({ block: "nearest" }); }
  select("kernel", i, d);
}

// ---- the scheduler ----
function showSchedule(i) {
  const sc = T.schedules[i], m = $("matches");
  $("title").textContent = `schedule ${i}: ${sc.items.length} items (${sc.items.filter(x => x.kind === "kernel").length} kernels)`;
  marked = new Map();
  sc.items.forEach((it, j) => { if (it.node !== null) marked.set(it.node, { label: `K${j}`, why: it.reason, kernel: it.ast }); });
  m.innerHTML = "";
  m.appendChild(el("div", { class: "note" }, "each kernel of the schedule: the tensor-graph node it computes and why that node is a kernel boundary"));
  sc.items.forEach((it, j) => {
    const d = el("div", { class: "item", "data-item": j });
    d.appendChild(el("span", { class: "loc" }, `K${j} ${it.name}`));
    d.appendChild(document.createTextNode(` (${it.kind}${it.node !== null ? ", node " + it.node : ""}): ${it.reason}`));
    d.onclick = () => { highlight = new Set(it.node !== null ? [it.node] : []); redraw(); };
    d.ondblclick = () => openKernel(it.ast);
    m.appendChild(d);
  });
}

// ---- the PROFILE=1 timeline ----
const CAT_COLOR = { kernel: "#4e8e6e", copy: "#8e7a4e", compile: "#7a5c8e", codegen: "#4e6e8e", schedule: "#8e5c4e", jit: "#5c7e8e", beam: "#6e6e6e" };
let tl = { x: 0, k: null };
function tracks() {
  const evs = T.profile.traceEvents, pname = new Map(), tname = new Map();
  for (const e of evs) if (e.ph === "M") (e.name === "process_name" ? pname.set(e.pid, e.args.name) : tname.set(`${e.pid}:${e.tid}`, e.args.name));
  const rows = new Map();
  for (const e of evs) {
    if (e.ph !== "X") continue;
    const key = `${e.pid}:${e.tid}`;
    if (!rows.has(key)) rows.set(key, { name: (pname.get(e.pid) || `process ${e.pid}`) + (e.pid === 0 ? ` / ${tname.get(key) || "thread " + e.tid}` : ""), pid: e.pid, evs: [] });
    rows.get(key).evs.push(e);
  }
  return [...rows.values()].sort((a, b) => a.pid - b.pid || a.name.localeCompare(b.name));
}
function drawTimeline() {
  const g = $("graph");
  g.innerHTML = ""; drawn = null;
  if (!T.profile) { g.appendChild(el("div", { class: "note" }, "no timeline in this trace: run with PROFILE=1 (and VIZ=1), or python -m tinygrad.viz --profile PROFILE.json")); return; }
  const rows = tracks(), LW = 190, RH = 22, box = g.getBoundingClientRect();
  const xs = rows.flatMap(r => r.evs), t0 = Math.min(...xs.map(e => e.ts)), t1 = Math.max(...xs.map(e => e.ts + e.dur));
  if (tl.k === null) { tl.k = (box.width - LW - 20) / Math.max(t1 - t0, 1); tl.x = 0; }
  const svg = el("svg:svg", { width: "100%", height: Math.max(box.height - 4, rows.length * RH + 30), class: "timeline", "data-tracks": rows.length, "data-events": xs.length });
  const X0 = (ts) => LW + tl.x + (ts - t0) * tl.k;
  // time axis: ~8 ticks
  const span = (box.width - LW) / tl.k, want = Math.max(span / 8, 1e-3), p10 = Math.pow(10, Math.floor(Math.log10(want)));
  const step = p10 * [1, 2, 5, 10].find(m => m * p10 >= want);   // 1, 2 or 5 times a power of ten: at most ~8 ticks
  for (let t = Math.ceil((-tl.x / tl.k) / step) * step; t < -tl.x / tl.k + span; t += step) {
    const x = X0(t0 + t);
    svg.appendChild(el("svg:line", { x1: x, x2: x, y1: 14, y2: rows.length * RH + 20, class: "tick" }));
    svg.appendChild(el("svg:text", { x: x + 2, y: 11, class: "ticklabel" }, step >= 1000 ? `${+(t / 1000).toFixed(3)} ms` : `${+t.toFixed(3)} us`));
  }
  rows.forEach((r, i) => {
    const y = 18 + i * RH;
    for (const e of r.evs) {
      const x = X0(e.ts), w = Math.max(e.dur * tl.k, 1);
      if (x + w < LW || x > box.width) continue;
      const grp = el("svg:g", { class: "ev", "data-cat": e.cat });
      grp.appendChild(el("svg:rect", { x, y, width: w, height: RH - 4, fill: CAT_COLOR[e.cat] || "#555" }));
      if (w > 40) grp.appendChild(el("svg:text", { x: x + 3, y: y + 13 }, fit(e.name, Math.floor((w - 6) / charW))));
      grp.appendChild(el("svg:title", {}, `${e.name} (${e.cat}) ${e.dur.toFixed(1)} us at ${(e.ts - t0).toFixed(1)} us` +
        Object.entries(e.args || {}).map(([k, v]) => `\n${k}: ${v}`).join("")));
      svg.appendChild(grp);
    }
    svg.appendChild(el("svg:rect", { x: 0, y, width: LW - 4, height: RH - 4, class: "trackbg" }));
    svg.appendChild(el("svg:text", { x: 4, y: y + 13, class: "track" }, fit(r.name, Math.floor((LW - 10) / charW))));
  });
  g.appendChild(svg);
}
function showTimelineInfo() {
  $("title").textContent = "timeline (PROFILE=1): drag to pan, wheel to zoom, fit to see all";
  const m = $("matches");
  m.innerHTML = "";
  if (!T.profile) return;
  const by = new Map();
  for (const e of T.profile.traceEvents) if (e.ph === "X") { const c = by.get(e.cat) || [0, 0]; c[0]++; c[1] += e.dur; by.set(e.cat, c); }
  m.appendChild(el("div", { class: "note" }, "events by category (count, total time)"));
  for (const [c, [n, us]] of [...by].sort((a, b) => b[1][1] - a[1][1])) {
    const d = el("div", { class: "item" });
    d.appendChild(el("span", { class: "swatch", style: `background:${CAT_COLOR[c] || "#555"}` }));
    d.appendChild(document.createTextNode(` ${c}: ${n} events, ${(us / 1000).toFixed(2)} ms`));
    m.appendChild(d);
  }
}

// ---- the side bar ----
function stepItem(i, depth) {
  const s = T.steps[i], d = el("div", { class: "step", "data-step": i, style: `padding-left:${4 + depth * 10}px` });
  d.appendChild(document.createTextNode(`${s.name} `));
  d.appendChild(el("span", { class: "n", title: "rewrites in this step and the rewrites it ran" }, `${totalMatches(i)}`));
  d.onclick = (ev) => { ev.stopPropagation(); select("step", i, d); };
  return d;
}
function build() {
  const ks = $("kernels"), os = $("others"), ss = $("schedules");
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
  (T.schedules || []).forEach((sc, i) => {
    const d = el("div", { class: "schedule", "data-schedule": i }, `schedule ${i}: ${sc.items.length} items`);
    d.onclick = () => select("schedule", i, d);
    ss.appendChild(d);
  });
  if (!(T.schedules || []).length) ss.appendChild(el("div", { class: "note" }, "none recorded (a schedule already cached is not scheduled again)"));
  const tlItem = el("div", { class: "schedule", id: "timeline-item" }, T.profile ? `timeline: ${T.profile.traceEvents.filter(e => e.ph === "X").length} events` : "timeline: run with PROFILE=1");
  tlItem.onclick = () => select("timeline", 0, tlItem);
  $("timeline").appendChild(tlItem);
  const top = T.steps.map((s, i) => i).filter(i => T.steps[i].kernel === null && T.steps[i].parent === null);
  for (const i of top.slice(0, 1000)) addSteps(os, i, 0);
  if (top.length > 1000) os.appendChild(el("div", { class: "note" }, `${top.length - 1000} more not listed`));
  $("summary").textContent = `${T.kernels.length} kernels, ${T.steps.length} steps, ${T.nodes.length} nodes` +
    (T.dropped_steps ? ` (${T.dropped_steps} steps past VIZ_MAX_STEPS not kept)` : "");
}

// ---- controls ----
function measureChar() {
  const svg = el("svg:svg", { width: 10, height: 10, style: "position:absolute;visibility:hidden" }), t = el("svg:text", {}, "M".repeat(40));
  const g = el("svg:g", { class: "probe" }); g.appendChild(t); svg.appendChild(g); $("graph").appendChild(svg);
  const w = t.getComputedTextLength() / 40;
  svg.remove();
  if (w > 0) charW = w * 1.02;
}
function wire() {
  document.querySelectorAll("input[name=side]").forEach(r => r.onchange = () => { side = r.value; redraw(); });
  $("zoomin").onclick = () => cur.kind === "timeline" ? (tl.k *= 1.5, drawTimeline()) : zoomBy(1.25);
  $("zoomout").onclick = () => cur.kind === "timeline" ? (tl.k /= 1.5, drawTimeline()) : zoomBy(0.8);
  $("zoomfit").onclick = () => cur.kind === "timeline" ? (tl.k = null, drawTimeline()) : zoomToFit();
  $("fold").onchange = (e) => { collapse = e.target.checked; redraw(); };
  $("slider").oninput = (e) => stepTo(+e.target.value);
  $("prev").onclick = () => stepTo(stepper.k - 1);
  $("next").onclick = () => stepTo(stepper.k + 1);
  const g = $("graph");
  let drag = null;
  g.onmousedown = (e) => { drag = [e.clientX, e.clientY]; g.classList.add("dragging"); };
  window.onmouseup = () => { drag = null; g.classList.remove("dragging"); };
  window.onmousemove = (e) => {
    if (!drag) return;
    const dx = e.clientX - drag[0], dy = e.clientY - drag[1];
    drag = [e.clientX, e.clientY];
    if (cur.kind === "timeline") { tl.x += dx; drawTimeline(); }
    else if (drawn) { vp.x += dx; vp.y += dy; setView(drawn.g); }
  };
  g.onwheel = (e) => {
    e.preventDefault();
    const box = g.getBoundingClientRect(), f = e.deltaY < 0 ? 1.15 : 1 / 1.15;
    if (cur.kind === "timeline") { const cx = e.clientX - box.left - 190; tl.x = cx - (cx - tl.x) * f; tl.k *= f; drawTimeline(); }
    else zoomBy(f, e.clientX - box.left, e.clientY - box.top);
  };
  document.addEventListener("keydown", (e) => {
    if (!stepper || e.target.tagName === "INPUT" && e.target.type !== "range") return;
    if (e.key === "ArrowRight") stepTo(stepper.k + 1); else if (e.key === "ArrowLeft") stepTo(stepper.k - 1);
  });
  document.querySelectorAll("#tabs button").forEach(b => b.onclick = () => {
    document.querySelectorAll("#tabs button, .pane").forEach(e => e.classList.remove("active"));
    b.classList.add("active"); $(b.dataset.tab).classList.add("active");
  });
}

wire();
fetch("trace.json").then(r => r.json()).then(t => {
  T = t; T.nodes = T.nodes || []; T.steps = T.steps || []; T.kernels = T.kernels || []; T.rules = T.rules || []; N0 = T.nodes.length;
  measureChar(); build(); document.body.dataset.ready = "1";
  if (!T.kernels.length && !T.steps.length && T.profile) select("timeline", 0, $("timeline-item"));
}).catch(e => { $("summary").textContent = `could not load the trace: ${e}`; });
