// The panel's run view: progress, ETA, best, the charts, the trial table and the recent
// failures, all drawn from ONE model ("state" + "chart", sent together in one message).
// Loaded after plotly.min.js (state_view.py prepends it), which sets window.Plotly.
//
// Scheduling, so that a click is answered within a second on a loaded machine:
// - text (status, progress, table) is written to the DOM as soon as a message arrives;
// - the charts are drawn later, on their own task, only the latest state, one draw at a time;
//   the kernel sends the next chart only after the "ack" of the last one (backpressure);
// - a click inside the panel holds chart drawing (at most HOLD_MS) until the kernel's answer
//   (a new state) has been written, so no draw starts between a click and its answer.
const Plotly = window.Plotly;
const HOLD_MS = 1500;

function decode(value) {
  // numeric arrays travel as {dtype: "f8", buffer: DataView} (binary, NaN-safe)
  if (Array.isArray(value)) return value.map(decode);
  if (value && typeof value === "object") {
    if (value.dtype === "f8" && value.buffer instanceof DataView) {
      const v = value.buffer;
      return new Float64Array(v.buffer.slice(v.byteOffset, v.byteOffset + v.byteLength));
    }
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = decode(v);
    return out;
  }
  return value;
}

function assign(target, dotted, value) {
  const path = dotted.split(".");
  let obj = target;
  for (const key of path.slice(0, -1)) obj = obj[key] = obj[key] || {};
  obj[path[path.length - 1]] = value;
}

function controls(model, el) {
  const opts = model.get("table_options") || {};
  const box = document.createElement("div");
  box.className = "wb-trials-controls";
  const select = (cls, label, values, value) => {
    const s = document.createElement("select");
    s.className = cls;
    for (const v of values) s.add(new Option(String(v), String(v)));
    s.value = String(value);
    const l = document.createElement("label");
    l.append(label, " ", s);
    box.append(l);
    return s;
  };
  const filter = document.createElement("input");
  filter.className = "wb-trials-filter";
  filter.placeholder = "filter, e.g. VEC_BYTES == 16 and median_us < 5";
  filter.size = 42;
  box.append(filter);
  const q = model.get("query") || {};
  filter.value = q.filter || "";
  const sort = select("wb-trials-sort", "sort by", opts.sort_keys || [], q.sort_by);
  const desc = document.createElement("input");
  desc.type = "checkbox";
  desc.className = "wb-trials-desc";
  desc.checked = !!q.descending;
  const dl = document.createElement("label");
  dl.append(desc, " descending");
  box.append(dl);
  const status = select("wb-trials-status", "status", opts.statuses || [], q.status);
  const rows = select("wb-trials-rows", "rows", opts.limits || [], q.limit);
  const send = () => model.send({ query: { filter: filter.value, sort_by: sort.value,
    descending: desc.checked, status: status.value, limit: parseInt(rows.value, 10) } });
  filter.addEventListener("change", send);
  for (const c of [sort, desc, status, rows]) c.addEventListener("change", send);
  el.append(box);
}

function render({ model, el }) {
  el.classList.add("wb-run");
  el.innerHTML = `<div class="wb-runline">
      <div class="wb-progress" role="progressbar"><div class="wb-progress-fill"></div>
        <span class="wb-progress-label"></span></div>
      <span class="wb-eta"></span><span class="wb-best"></span></div>
    <div class="wb-figure-box"><div class="wb-plot"></div></div>
    <div class="wb-trials-box"></div>
    <div class="wb-failures"></div>`;
  const q = (c) => el.querySelector(c);
  controls(model, q(".wb-trials-box"));
  const table = document.createElement("div");
  table.className = "wb-trials";
  q(".wb-trials-box").append(table);
  const plot = q(".wb-plot");
  const base = model.get("figure") || { data: [], layout: {} };
  const fig = { data: base.data || [], layout: { ...(base.layout || {}), autosize: true } };
  const config = { responsive: true, displaylogo: false };
  let shownStatus = null;
  let pendingSeq = null;
  let timer = null;
  let holdUntil = 0;
  let drawn = false;

  const writeText = () => {
    const s = model.get("state") || {};
    const budget = Math.max(s.budget || 0, s.done || 0, 1);
    q(".wb-progress-fill").style.width = `${Math.min(100, (100 * (s.done || 0)) / budget)}%`;
    q(".wb-progress-label").textContent = `${s.done || 0} / ${s.budget || 0}`;
    q(".wb-eta").textContent = s.eta || "";
    q(".wb-best").textContent = s.best || "";
    if (table.dataset.html !== s.table_html) {
      table.innerHTML = s.table_html || "";
      table.dataset.html = s.table_html || "";
    }
    q(".wb-failures").innerHTML = s.failures_html || "";
    el.dataset.status = s.status || "";
    if (s.status !== shownStatus) {
      shownStatus = s.status;
      holdUntil = 0; // the answer to a click is on screen: charts may draw again
    }
    if (pendingSeq === null) model.send({ ack: s.seq || 0, draw_ms: 0 });
  };

  const draw = async () => {
    timer = null;
    const wait = holdUntil - performance.now();
    if (wait > 0) {
      timer = setTimeout(draw, wait);
      return;
    }
    if (pendingSeq === null) return;
    const seq = pendingSeq;
    pendingSeq = null;
    const t0 = performance.now();
    try {
      await Plotly.react(plot, fig.data, fig.layout, config);
      drawn = true;
    } finally {
      const ms = performance.now() - t0;
      el.dataset.draws = String(Number(el.dataset.draws || 0) + 1); // read by the load test
      el.dataset.drawMaxMs = String(Math.max(Number(el.dataset.drawMaxMs || 0), Math.round(ms)));
      model.send({ ack: seq, draw_ms: ms });
    }
  };

  let takenSeq = 0;
  const takeChart = () => {
    const c = model.get("chart");
    if (!c || !c.seq || c.seq === takenSeq) return;
    takenSeq = c.seq;
    for (const [i, props] of Object.entries(decode(c.traces || {}))) {
      const trace = fig.data[Number(i)];
      if (trace) for (const [k, v] of Object.entries(props)) assign(trace, k, v);
    }
    for (const [key, props] of Object.entries(c.layout || {})) {
      fig.layout[key] = { ...(fig.layout[key] || {}), ...props };
    }
    pendingSeq = c.seq;
    if (!timer) timer = setTimeout(draw, drawn ? 0 : 50);
  };

  const onClick = (e) => {
    const panel = el.closest(".wb-panel") || el;
    if (e.target instanceof Node && panel.contains(e.target) && !el.contains(e.target)) {
      holdUntil = performance.now() + HOLD_MS;
    }
  };
  document.addEventListener("pointerdown", onClick, true);
  const resize = new ResizeObserver(() => { if (drawn) Plotly.Plots.resize(plot); });
  resize.observe(q(".wb-figure-box"));

  // Backbone assigns every attribute of a message before it fires any change event, so
  // one handler sees the chart and the text of the same message together.
  const update = () => {
    takeChart();
    writeText();
  };
  model.on("change:chart", update);
  model.on("change:state", update);
  pendingSeq = 0; // the empty figure first, then the latest data
  update();
  if (!timer) timer = setTimeout(draw, 0);
  return () => {
    document.removeEventListener("pointerdown", onClick, true);
    resize.disconnect();
    if (timer) clearTimeout(timer);
    Plotly.purge(plot);
  };
}
export default { render };
