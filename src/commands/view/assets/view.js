// emuprof view: the page's own script (no libraries). Data comes from
// /api/data (functions, edges, display tree, flame stacks), /api/graph.svg
// (the call graph laid out by Graphviz), /api/code/ID (source lines and
// instructions of one function) and /api/live (whether a streamed run is shown).
"use strict";

let data = null;
let selected = null;

const $ = (id) => document.getElementById(id);
const fmt = (n) => n.toLocaleString("en-US");
const pct = (n) => (100 * n / Math.max(1, data.total_instructions)).toFixed(2) + "%";

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "onclick") e.addEventListener("click", v); else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c);
  return e;
}

// A function's name, with its shared object when another object has a function of that name.
const fnName = (f) => f.name + (f.object ? " [" + f.object + "]" : "");

function fnLink(id) {
  return el("a", { class: "fn", "data-function": id, onclick: () => select(id) }, fnName(data.functions[id]));
}

// The data (tree, flame graph, tables) is drawn as soon as it arrives; the
// call graph, laid out by Graphviz on the server, follows when it is ready
// (or says why it is not), so a large graph never holds up the rest.
let graphRequest = 0;
async function load(threshold) {
  const nodes = $("nodes").value;
  const request = ++graphRequest;
  $("graph").replaceChildren(el("p", { class: "hint" }, "laying out the call graph…"));
  const graphDone = fetch("/api/graph.svg?threshold=" + threshold + "&nodes=" + nodes)
    .then(async (r) => ({ ok: r.ok, text: await r.text() }))
    .catch((e) => ({ ok: false, text: String(e) }));
  data = await fetch("/api/data?threshold=" + threshold).then((r) => r.json());
  $("command").textContent = data.command.join(" ");
  $("total").textContent = fmt(data.total_instructions) + " instructions" +
    (data.partial ? " (PARTIAL: " + data.partial + ")" : "");
  drawLegend();
  drawTree();
  drawFlame();
  applySearch();
  if (selected !== null) select(selected);
  const graph = await graphDone;
  if (request !== graphRequest) return;
  if (graph.ok) drawGraph(graph.text);
  else $("graph").replaceChildren(el("p", { class: "hint", id: "graph-error" }, "No call graph: " + graph.text));
  applySearch();
  if (selected !== null) select(selected);
}

function drawLegend() {
  const legend = $("legend");
  legend.replaceChildren("inclusive:");
  data.legend.forEach((step, i) => {
    const next = data.legend[i + 1];
    const s = el("span", {}, step.from_percent + (next ? "–" + next.from_percent : "–100") + "%");
    s.style.background = step.fill;
    s.style.color = step.font;
    legend.append(s);
  });
}

function drawGraph(svg) {
  const graph = $("graph");
  graph.innerHTML = svg.slice(svg.indexOf("<svg"));
  for (const node of graph.querySelectorAll("g.node")) {
    const m = /^f(\d+)$/.exec(node.querySelector("title")?.textContent || "");
    if (!m) continue;
    const id = Number(m[1]);
    node.dataset.function = id;
    node.addEventListener("click", () => select(id));
  }
}

function drawTree() {
  const marks = { master: "", link: "→ ", recursive: "↻ ", folded: "… ", inlined: "⤷ " };
  const tree = $("tree");
  tree.replaceChildren();
  for (const row of data.tree) {
    const line = el("div", {}, "  ".repeat(row.depth) + marks[row.kind]);
    if (row.function !== null && row.function !== undefined) {
      line.dataset.function = row.function;
      line.append(fnLink(row.function));
    } else {
      line.append(row.name);
    }
    line.append("  " + pct(row.inclusive_instructions) + "  " + fmt(row.calls) + " calls");
    tree.append(line);
  }
}

function drawFlame() {
  // Merge the stacks into a tree of frames, then lay it out top-down.
  const root = { name: "all", value: 0, children: new Map() };
  for (const stack of data.flame) {
    let node = root;
    node.value += stack.instructions;
    for (const frame of stack.frames) {
      if (!node.children.has(frame)) node.children.set(frame, { name: frame, value: 0, children: new Map() });
      node = node.children.get(frame);
      node.value += stack.instructions;
    }
  }
  // Frames are labels: functions of two objects with one name stay apart.
  const byName = new Map(data.functions.map((f) => [f.label, f]));
  const flame = $("flame");
  flame.replaceChildren();
  const width = flame.clientWidth || 600;
  const place = (node, depth, x) => {
    const w = width * node.value / Math.max(1, root.value);
    if (w < 2) return;
    const f = byName.get(node.name);
    const div = el("div", { title: node.name + ": " + fmt(node.value) + " instructions (" + pct(node.value) + ")" }, node.name);
    Object.assign(div.style, { left: x + "px", top: depth * 18 + "px", width: w + "px",
      background: f ? f.fill : "#ddd", color: f ? f.font : "black" });
    if (f) { div.dataset.function = f.id; div.addEventListener("click", () => select(f.id)); }
    flame.append(div);
    let cx = x;
    for (const child of [...node.children.values()].sort((a, b) => a.name.localeCompare(b.name))) {
      place(child, depth + 1, cx);
      cx += width * child.value / Math.max(1, root.value);
    }
  };
  place(root, 0, 0);
}

function edgeTable(id, edges, other, heading) {
  const rows = edges.map((e) => el("tr", {},
    el("td", { class: "name" }, fnLink(e[other])),
    el("td", {}, fmt(e.calls)),
    el("td", {}, fmt(e.inclusive_instructions)),
    el("td", {}, e.recursive_calls ? "↻ " + fmt(e.recursive_calls) : "")));
  return [el("h3", {}, heading),
    edges.length ? el("table", { id },
      el("tr", {}, el("th", { class: "name" }, "function"), el("th", {}, "calls"), el("th", {}, "instr"), el("th", {}, "recursive")),
      ...rows) : el("p", { id, class: "hint" }, "none")];
}

function select(id) {
  selected = id;
  const f = data.functions[id];
  for (const n of document.querySelectorAll("#graph g.node")) n.classList.toggle("selected", n.dataset.function == id);
  const byCost = (a, b) => b.inclusive_instructions - a.inclusive_instructions;
  const callers = data.edges.filter((e) => e.callee === id).sort(byCost);
  const callees = data.edges.filter((e) => e.caller === id).sort(byCost);
  const detail = $("detail");
  detail.replaceChildren(
    el("h2", { id: "detail-name" }, fnName(f) + (f.recursive ? " ↻" : "")),
    el("p", {}, (f.file ? f.file + (f.line ? ":" + f.line : "") + " — " : "") +
      "self " + fmt(f.self_instructions) + " (" + pct(f.self_instructions) + "), inclusive " +
      fmt(f.inclusive_instructions) + " (" + pct(f.inclusive_instructions) + "), " + fmt(f.calls) + " calls"),
    ...edgeTable("callers", callers, "caller", "Callers"),
    ...edgeTable("callees", callees, "callee", "Callees"),
    el("div", { id: "code" }, el("p", { class: "hint" }, "loading source lines…")));
  fetch("/api/code/" + id).then(async (r) => {
    if (selected !== id) return;
    const code = $("code");
    if (!r.ok) { code.replaceChildren(el("p", { class: "hint" }, await r.text())); return; }
    const c = await r.json();
    code.replaceChildren(
      el("h3", {}, "Source lines"),
      c.lines.length ? el("table", {}, ...c.lines.flatMap((l) => [el("tr", {},
        el("td", {}, fmt(l.instructions)),
        el("td", { class: "name" }, l.file.split("/").pop() + ":" + l.line),
        el("td", { class: "code" }, l.text ?? "")),
        // The calls made on this line, at their recorded call sites.
        ...l.calls.map((k) => el("tr", { class: "call" },
          el("td", {}, fmt(k.inclusive_instructions)),
          el("td", {}, ""),
          el("td", { class: "code" }, "=> " + k.callee + ": " + fmt(k.calls) + " calls, " +
            fmt(k.inclusive_instructions) + " instructions inclusive")))])) :
        el("p", { class: "hint" }, "no line information"),
      el("h3", {}, "Instructions"),
      el("table", {}, ...c.instructions.map((i) => el("tr", {},
        el("td", {}, fmt(i.executions)),
        el("td", { class: "code" }, "0x" + i.address.toString(16)),
        el("td", { class: "code" }, i.text)))));
  });
}

function applySearch() {
  const q = $("search").value.trim().toLowerCase();
  const match = (id) => id !== undefined && data.functions[id].name.toLowerCase().includes(q);
  $("graph").classList.toggle("searching", q !== "");
  for (const n of document.querySelectorAll("#graph g.node")) n.classList.toggle("match", q !== "" && match(n.dataset.function));
  for (const row of document.querySelectorAll("#tree div")) {
    const hit = q !== "" && match(row.dataset.function);
    row.classList.toggle("match", hit);
  }
  for (const d of document.querySelectorAll("#flame div")) d.classList.toggle("match", q !== "" && match(d.dataset.function));
}

$("search").addEventListener("input", applySearch);
$("threshold").addEventListener("input", () => { $("threshold-value").textContent = $("threshold").value + "%"; });
$("threshold").addEventListener("change", () => load($("threshold").value));
$("nodes").addEventListener("change", () => load($("threshold").value));

// A profile file loads once. A streamed run (emuprof view ADDR --web) is
// polled every second: the data is reloaded whenever a newer snapshot came,
// until the run is over.
let snapshotsSeen = 0;
let nodesSet = false;
async function follow() {
  const live = await fetch("/api/live").then((r) => r.json());
  if (!nodesSet) { $("nodes").value = live.max_nodes; nodesSet = true; }
  if (!live.live) return load($("threshold").value);
  $("status").textContent = live.status;
  if (live.received > snapshotsSeen) {
    snapshotsSeen = live.received;
    await load($("threshold").value);
  }
  if (live.status === "running") setTimeout(follow, 1000);
}
follow();
