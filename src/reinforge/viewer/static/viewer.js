// reinforge viewer: plain JavaScript over the JSON API in reinforge/viewer/app.py.
// Every value from the run goes into the page as text (textContent), never as HTML.
"use strict";

const $ = (selector, root = document) => root.querySelector(selector);
const SVG_NS = "http://www.w3.org/2000/svg";
const COLORS = ["#3d7bd9", "#1b9e5a", "#d98b1d", "#b3261e", "#7a4cc2", "#0f8a8a"];
const state = { step: null, compareTask: null };

function build(node, attrs, children) {
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
    else node.setAttribute(key, value);
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : String(child));
  }
  return node;
}
const el = (tag, attrs, ...children) => build(document.createElement(tag), attrs, children);
const svg = (tag, attrs, ...children) => build(document.createElementNS(SVG_NS, tag), attrs, children);

async function api(path) {
  const response = await fetch(path);
  const body = await response.json();
  if (!response.ok) throw new Error(body.detail || response.statusText);
  return body;
}

function fmt(x, digits = 3) {
  if (x === null || x === undefined) return "–";
  return Number.isInteger(x) ? String(x) : Number(x).toFixed(digits);
}
const statusCell = (status) => el("td", { class: `status-${status}` }, status);

// ---- curves ------------------------------------------------------------------------

function yTicks(lo, hi) {
  const step = (hi - lo) / 4;
  return [0, 1, 2, 3, 4].map((i) => lo + i * step);
}

function xTicks(lo, hi) {
  const every = Math.max(1, Math.ceil((hi - lo) / 8));
  const ticks = [];
  for (let x = Math.ceil(lo / every) * every; x <= hi; x += every) ticks.push(x);
  return ticks;
}

function drawChart(chart) {
  const W = 440, H = 230, L = 52, R = 12, T = 10, B = 40;
  const points = chart.lines.flatMap((line) => line.points);
  let [x0, x1] = [Math.min(...points.map((p) => p[0])), Math.max(...points.map((p) => p[0]))];
  let [y0, y1] = [Math.min(...points.map((p) => p[1])), Math.max(...points.map((p) => p[1]))];
  if (x0 === x1) { x0 -= 1; x1 += 1; }
  if (y0 === y1) { const pad = Math.abs(y0) * 0.1 || 0.5; y0 -= pad; y1 += pad; }
  const px = (x) => L + ((x - x0) / (x1 - x0)) * (W - L - R);
  const py = (y) => H - B - ((y - y0) / (y1 - y0)) * (H - T - B);
  const plot = svg("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}`, role: "img" });
  plot.append(svg("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#888" }));
  plot.append(svg("line", { x1: L, y1: T, x2: L, y2: H - B, stroke: "#888" }));
  for (const x of xTicks(x0, x1)) {
    plot.append(svg("line", { x1: px(x), y1: H - B, x2: px(x), y2: H - B + 4, stroke: "#888" }));
    plot.append(svg("text", { x: px(x), y: H - B + 16, "text-anchor": "middle" }, String(x)));
  }
  for (const y of yTicks(y0, y1)) {
    plot.append(svg("line", { x1: L, y1: py(y), x2: W - R, y2: py(y), stroke: "#eee" }));
    plot.append(svg("text", { x: L - 5, y: py(y) + 4, "text-anchor": "end" }, y.toPrecision(3)));
  }
  plot.append(svg("text", { x: (L + W - R) / 2, y: H - 6, "text-anchor": "middle" }, "step"));
  plot.append(svg("text", { x: 12, y: (T + H - B) / 2, "text-anchor": "middle",
    transform: `rotate(-90 12 ${(T + H - B) / 2})` }, "value"));
  const legend = el("div", { class: "legend" });
  chart.lines.forEach((line, i) => {
    const color = COLORS[i % COLORS.length];
    const coords = line.points.map(([x, y]) => `${px(x)},${py(y)}`).join(" ");
    plot.append(svg("polyline", { points: coords, fill: "none", stroke: color, "stroke-width": 2 }));
    for (const [x, y] of line.points) {
      plot.append(svg("circle", { cx: px(x), cy: py(y), r: 3, fill: color },
        svg("title", {}, `${line.name} @ step ${x}: ${fmt(y, 4)}`)));
    }
    legend.append(el("span", {}, el("i", { style: `background:${color}` }), line.name));
  });
  return el("div", { class: "chart" }, el("h3", {}, chart.title), plot, legend);
}

async function loadCurves() {
  const { charts } = await api("/api/metrics");
  const box = $("#curves");
  box.replaceChildren(...charts.map(drawChart));
  if (!charts.length) box.append(el("div", { class: "muted" }, "no metrics.jsonl curves yet"));
}

// ---- steps and groups --------------------------------------------------------------

async function loadSteps() {
  const data = await api("/api/steps");
  const body = $("#steps-table tbody");
  if (data.buffer_error) $("#groups-count").textContent = data.buffer_error;
  body.replaceChildren(...data.steps.map((s) => {
    const notOk = Object.entries(s.records).filter(([k]) => k !== "ok").reduce((n, [, v]) => n + v, 0);
    return el("tr", { "data-step": s.step, onclick: () => selectStep(s.step) },
      el("td", {}, s.step), el("td", {}, s.experiences), el("td", {}, fmt(s.reward_mean)),
      el("td", { class: "version" }, s.model_version ?? ""),
      el("td", { class: notOk ? "status-failed" : "" }, notOk || ""));
  }));
  if (data.steps.length && state.step === null) selectStep(data.steps[0].step);
}

function selectStep(step) {
  state.step = step;
  for (const row of document.querySelectorAll("#steps-table tbody tr")) {
    row.classList.toggle("selected", row.dataset.step === String(step));
  }
  loadGroups();
}

function fillChoices(select, values) {
  const keep = select.value;
  select.replaceChildren(el("option", { value: "" }, "any"), ...values.map((v) => el("option", { value: v }, v)));
  select.value = values.includes(keep) ? keep : "";
}

async function loadGroups() {
  const form = $("#filters");
  const query = new URLSearchParams();
  for (const [key, value] of new FormData(form)) if (value !== "") query.set(key, value);
  $("#groups-title").textContent = `Groups of step ${state.step}`;
  const body = $("#groups-table tbody");
  let data;
  try {
    data = await api(`/api/step/${state.step}?${query}`);
  } catch (err) {
    body.replaceChildren();
    $("#groups-count").textContent = String(err.message);
    return;
  }
  fillChoices(form.taskset, data.choices.tasksets);
  fillChoices(form.status, data.choices.statuses);
  fillChoices(form.termination, data.choices.terminations);
  $("#groups-count").textContent = `${data.groups.length} of ${data.total_groups} groups`;
  body.replaceChildren(...data.groups.map(groupRow));
}

function groupRow(group) {
  const terms = Object.entries(group.terminations).map(([k, v]) => `${k} ×${v}`).join(", ");
  const row = el("tr", { class: "group-row", "data-task": group.task },
    el("td", {}, group.task), el("td", {}, group.taskset || ""), statusCell(group.status),
    el("td", {}, group.count === group.total ? group.count : `${group.count}/${group.total}`),
    el("td", {}, fmt(group.reward_mean)),
    el("td", {}, `${fmt(group.reward_min)} / ${fmt(group.reward_max)}`),
    el("td", {}, terms), el("td", { class: "muted" }, group.errors.join("; ")),
    el("td", {}, el("button", { type: "button", onclick: (ev) => { ev.stopPropagation(); openCompare(group.task); } }, "compare")));
  row.addEventListener("click", () => {
    const next = row.nextElementSibling;
    if (next && next.classList.contains("exp-list")) { next.remove(); return; }
    row.after(el("tr", { class: "exp-list" }, el("td", { colspan: 9 }, experienceTable(group.experiences))));
  });
  return row;
}

function experienceTable(experiences) {
  if (!experiences.length) return el("div", { class: "muted" }, "no stored experiences (see the task record's error)");
  return el("table", { class: "grid" },
    el("thead", {}, el("tr", {}, ...["run", "version", "reward", "advantage", "tokens", "turns", "termination", "response"].map((h) => el("th", {}, h)))),
    el("tbody", {}, ...experiences.map((e) => el("tr", { class: "exp-row", "data-id": e.id, onclick: () => showExperience(e.id) },
      el("td", {}, e.run), el("td", { class: "version" }, e.model_version ?? ""),
      el("td", {}, fmt(e.reward)), el("td", {}, fmt(e.advantage)),
      el("td", {}, e.response_length), el("td", {}, e.turns),
      el("td", {}, [e.termination_reason, e.mask_reason].filter(Boolean).join("; ")),
      el("td", {}, e.preview)))));
}

// ---- one experience ----------------------------------------------------------------

function isImagePart(part) {
  return part && part.type === "image_url" && part.image_url && typeof part.image_url.url === "string";
}

function conversation(messages) {
  return messages.map((m) => {
    const turn = el("div", { class: `turn ${m.role}` }, el("div", { class: "role" }, m.role,
      m.tool_call_id ? el("span", { class: "call-id" }, ` result of ${m.tool_call_id}`) : null));
    if (Array.isArray(m.content) && m.content.some(isImagePart)) {
      // a prompt with images: text parts as text, inline (data:) images as pictures
      for (const part of m.content) {
        const url = isImagePart(part) ? part.image_url.url : null;
        if (url && url.startsWith("data:image/")) turn.append(el("img", { class: "part-image", src: url, alt: "image" }));
        else if (url) turn.append(el("pre", {}, `[image ${url}]`));
        else turn.append(el("pre", {}, part.type === "text" ? part.text : JSON.stringify(part)));
      }
      return turn;
    }
    const text = typeof m.content === "string" ? m.content : m.content ? JSON.stringify(m.content, null, 1) : "";
    if (text) turn.append(el("pre", {}, text));
    for (const call of m.tool_calls || []) {
      const fn = call.function || {};
      turn.append(el("div", { class: "tool-call" }, `tool call ${fn.name}(${fn.arguments}) [${call.id || ""}]`));
    }
    return turn;
  });
}

const TOKEN_KEYS = { mask: "action mask", advantage: "advantage", logprob: "logprob" };
let tokenKey = "mask"; // kept from one experience to the next

function tokenColour(key, t, i, scale) {
  if (key === "mask") return t.action_mask[i] ? "rgba(27,158,90,0.22)" : "rgba(120,120,120,0.28)";
  if (key === "advantage") {
    const a = t.advantages ? t.advantages[i] : null;
    if (a === null || !scale) return "transparent";
    return a >= 0 ? `rgba(27,158,90,${(0.75 * a) / scale})` : `rgba(179,38,30,${(-0.75 * a) / scale})`;
  }
  const lp = t.logprobs ? t.logprobs[i] : null;
  return lp === null ? "transparent" : `rgba(179,38,30,${0.8 * (1 - Math.exp(lp))})`;
}

function renderTokens(box, note, t, key) {
  const scale = t.advantages ? Math.max(0, ...t.advantages.map((a) => Math.abs(a || 0))) : 0;
  const missing = (key === "advantage" && !t.advantages) || (key === "logprob" && !t.logprobs);
  note.textContent = missing
    ? `this experience has no stored ${TOKEN_KEYS[key]}s (advantages are stored only when an operator such as group_advantage computed them before the buffer)`
    : { mask: "green: sampled by the model (trained on); grey: not sampled (tool results, user turns, template)",
        advantage: `green positive, red negative; full colour = |advantage| ${fmt(scale)}`,
        logprob: "white: probability near 1; red: unlikely token" }[key];
  box.replaceChildren(...t.pieces.map((piece, i) => el("span", {
    class: "tok", style: `background:${tokenColour(key, t, i, scale)}${t.action_mask[i] ? "" : ";opacity:0.7"}`,
    title: `#${i} id ${t.ids[i]} mask ${t.action_mask[i]} logprob ${fmt(t.logprobs && t.logprobs[i], 4)} adv ${fmt(t.advantages && t.advantages[i], 4)}`,
  }, piece.replace(/\n/g, "↵\n"))));
}

// the experience on show and the one asked for last: a click on the one on show only
// scrolls to it, and a reply that arrives after a later click is dropped, so quick
// clicks never leave the detail showing (or re-drawing) an experience not asked for last
let shownExperience = null;
let wantedExperience = null;

async function showExperience(id) {
  const box = $("#detail");
  wantedExperience = id;
  if (id === shownExperience) {
    box.scrollIntoView({ block: "start" });
    return;
  }
  const x = await api(`/api/experience/${id}`);
  if (wantedExperience !== id) return;
  shownExperience = id;
  const info = x.info || {};
  const kv = [["step", x.step], ["task", x.task], ["run", x.run], ["reward", fmt(x.reward, 4)],
    ["taskset", x.taskset], ["model version", info.model_version], ["masked", x.masked ? info.mask_reason || "yes" : "no"],
    ["termination", info.termination_reason], ["finish", info.finish_reason], ["truncated", x.truncate_status]]
    .filter(([, v]) => v !== undefined && v !== null).map(([k, v]) => el("span", {}, el("b", {}, `${k}: `), v));
  const select = el("select", { id: "token-key" }, ...Object.entries(TOKEN_KEYS).map(([k, v]) => el("option", { value: k }, v)));
  const tokens = el("div", { class: "tokens", id: "tokens" });
  const note = el("div", { class: "muted" });
  select.value = tokenKey;
  select.addEventListener("change", () => {
    tokenKey = select.value;
    renderTokens(tokens, note, x.tokens, tokenKey);
  });
  box.replaceChildren(...[
    el("h2", {}, `Experience ${x.uid}`), el("div", { class: "kv" }, kv),
    x.messages ? [el("h3", {}, `Conversation (${x.messages.length} messages)`), ...conversation(x.messages)] : null,
    el("h3", {}, "Response text"), el("pre", { id: "response-text" }, x.response_text || ""),
    el("details", {}, el("summary", {}, `Prompt text (${x.prompt_length} tokens)`), el("pre", { id: "prompt-text" }, x.prompt_text || "")),
    el("h3", {}, `Response tokens (${x.tokens.ids.length}) coloured by `, select),
    el("div", { class: "muted" }, `tokenizer: ${x.tokenizer}`), note, tokens,
    x.tools ? el("details", {}, el("summary", {}, "Tools offered"), el("pre", {}, JSON.stringify(x.tools, null, 1))) : null,
    el("details", {}, el("summary", {}, "info and metrics"), el("pre", {}, JSON.stringify({ info, metrics: x.metrics }, null, 1))),
  ].flat().filter(Boolean));
  renderTokens(tokens, note, x.tokens, tokenKey);
  box.classList.remove("hidden");
  box.scrollIntoView({ block: "start" });
}

// ---- failed tasks ------------------------------------------------------------------

async function loadFailed() {
  const status = $("#failed-filters").status.value;
  const data = await api(`/api/tasks?${new URLSearchParams(status ? { status } : {})}`);
  $("#failed-count").textContent = `${data.tasks.length} of ${data.total} records`;
  $("#failed-table tbody").replaceChildren(...data.tasks.map((r) => {
    const row = el("tr", { class: "task-row" }, el("td", {}, r.batch), el("td", {}, r.taskset), el("td", {}, r.task),
      statusCell(r.status), el("td", {}, r.attempts), el("td", {}, fmt(r.elapsed)), el("td", {}, r.error_line || ""));
    row.addEventListener("click", () => {
      const next = row.nextElementSibling;
      if (next && next.classList.contains("exp-list")) { next.remove(); return; }
      row.after(el("tr", { class: "exp-list" }, el("td", { colspan: 7 }, el("pre", {}, r.error || "(no error text)"))));
    });
    return row;
  }));
}

// ---- compare -----------------------------------------------------------------------

function compareSide(side) {
  return el("div", { class: "side", "data-step": side.step },
    el("h3", {}, `step ${side.step}`),
    el("div", { class: "kv" }, el("span", {}, el("b", {}, "status: "), side.status),
      el("span", {}, el("b", {}, "reward mean: "), fmt(side.reward_mean)),
      el("span", {}, el("b", {}, "experiences: "), side.count)),
    side.errors.length ? el("pre", {}, side.errors.join("\n")) : null,
    experienceTable(side.experiences));
}

async function runCompare(task, a, b) {
  const form = $("#compare-form");
  const query = new URLSearchParams({ task });
  if (a) query.set("a", a);
  if (b) query.set("b", b);
  try {
    const data = await api(`/api/compare?${query}`);
    for (const [name, value] of [["a", data.a.step], ["b", data.b.step]]) {
      form[name].replaceChildren(...data.steps.map((s) => el("option", { value: s }, s)));
      form[name].value = value;
    }
    state.compareTask = task;
    $("#compare-note").textContent = `task ${task} ran in steps ${data.steps.join(", ")}`;
    $("#compare-sides").replaceChildren(compareSide(data.a), compareSide(data.b));
  } catch (err) {
    $("#compare-note").textContent = String(err.message);
    $("#compare-sides").replaceChildren();
  }
}

function openCompare(task) {
  $("#compare-form").task.value = task;
  showTab("compare");
  runCompare(task);
}

// ---- wiring ------------------------------------------------------------------------

function showTab(name) {
  for (const button of document.querySelectorAll(".tab")) button.classList.toggle("active", button.dataset.tab === name);
  for (const page of document.querySelectorAll(".tab-page")) page.classList.toggle("hidden", page.id !== `tab-${name}`);
  if (name === "failed") loadFailed();
}

async function start() {
  for (const button of document.querySelectorAll(".tab")) button.addEventListener("click", () => showTab(button.dataset.tab));
  $("#filters").addEventListener("submit", (ev) => { ev.preventDefault(); loadGroups(); });
  $("#failed-filters").addEventListener("submit", (ev) => { ev.preventDefault(); loadFailed(); });
  $("#compare-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const form = ev.target;
    const task = form.task.value.trim();
    const same = task === state.compareTask;
    runCompare(task, same ? form.a.value : null, same ? form.b.value : null);
  });
  const run = await api("/api/run");
  $("#run-title").textContent = `${run.project || "run"} / ${run.name || ""}`;
  $("#run-meta").textContent = [run.run_dir, run.mode && `mode ${run.mode}`, run.model && `${run.model} (${run.engine})`,
    `${run.experiences} experiences`, run.buffer_error || (run.read_only ? "buffer opened read-only" : "buffer opened immutable")]
    .filter(Boolean).join(" · ");
  await Promise.all([loadCurves(), loadSteps()]);
}

start().catch((err) => { document.body.prepend(el("pre", { class: "status-failed" }, `viewer error: ${err.message}`)); });
