// The panel's run view: progress, ETA, best, the charts, the trial table and the recent
// failures, all drawn from ONE model ("state" + "chart", sent together in one message).
// plotly.js travels apart, in the model's "_plotly_js" (state_view.py says why: this module
// must load within anywidget's 2 s), and a page evaluates it once for all its panels.
//
// Scheduling, so that a click is answered within a second on a loaded machine:
// - text (status, progress, table) is written to the DOM as soon as a message arrives;
// - the charts are drawn later, on their own tasks, only the latest state, one draw at a time
//   (the WebGL parallel coordinates apart, at most every SIDE_EVERY_MS);
//   the kernel sends the next chart only after the "ack" of the last one (backpressure);
// - a click inside the panel holds chart drawing (at most HOLD_MS) until the kernel's answer
//   (a new status) has been written, so no draw starts between a click and its answer;
//   except a click on the runtime-axis toggle, whose answer is a draw (held, it waited the
//   whole HOLD_MS: press -> redrawn 1.7 s beside two CPU hogs, bench_lab_browser.py).
let Plotly = null; // set once plotlyOf() has evaluated plotly.js on this page
const HOLD_MS = 1500;
const SIDE_EVERY_MS = 5000;
// A view that hears nothing after its hello asks again after HELLO_RETRY_MS, then twice as
// long each time (at most HELLO_RETRY_MAX_MS); the kernel gives a deaf model's panel a new
// one (state_view.py, DEAF_AFTER_S).
const HELLO_RETRY_MS = 10000;
const HELLO_RETRY_MAX_MS = 60000;
const PLOTLY_KEY = "__workbenchPlotly";

function plotlyOf(model) {
  // One evaluation of plotly.js per page and version, shared by every panel on it.
  const version = model.get("_plotly_version") || "?";
  const cache = (window[PLOTLY_KEY] = window[PLOTLY_KEY] || {});
  if (!cache[version]) {
    const url = URL.createObjectURL(new Blob([model.get("_plotly_js") || ""],
                                             { type: "text/javascript" }));
    cache[version] = import(/* webpackIgnore: true */ url).then(() => {
      URL.revokeObjectURL(url);
      if (!window.Plotly || !window.Plotly.react) throw new Error("plotly.js did not load");
      return window.Plotly;
    });
    cache[version].catch(() => { delete cache[version]; }); // the next view tries again
  }
  return cache[version];
}

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

function warmUp(traces) {
  // one invisible point per WebGL trace, so that drawing them sets up the GL context
  return traces.map((t) => {
    if (t.type === "scattergl") return { ...t, x: [1], y: [1], marker: { ...t.marker, opacity: 0 } };
    if (t.type === "parcoords") {
      return { ...t, dimensions: (t.dimensions || []).map((d) => ({ ...d, values: [1] })),
               line: { ...t.line, color: [1] } };
    }
    return t;
  });
}

// Parallel-coordinates labels that never overlap, at any width: horizontal where each fits
// between its neighbours, else the smallest angle at which parallel labels clear each other
// (from -27 degrees on plotly starts a label at its axis and runs it up and to the right);
// the axes start below the room the labels take. Sets them on the trace; true if changed.
const LABEL_GAP_PX = 4;
const RANGE_TEXT_PX = 30; // the axis' top value and the label's offset above it
let measureCanvas = null;

function arrangeLabels(fig, width) {
  const trace = fig.data[0];
  const layout = fig.layout;
  if (!trace || trace.type !== "parcoords" || !width || !layout.height) return false;
  const dims = (trace.dimensions || []).filter((d) => d.visible !== false);
  if (dims.length < 2) return false;
  const m = layout.margin || {};
  const domain = trace.domain || {};
  const [x0, x1] = domain.x || [0, 1];
  const spacing = ((width - (m.l || 0) - (m.r || 0)) * (x1 - x0)) / (dims.length - 1);
  const plotHeight = layout.height - (m.t || 0) - (m.b || 0);
  const size = (trace.labelfont && trace.labelfont.size) || 11;
  measureCanvas = measureCanvas || document.createElement("canvas");
  const ctx = measureCanvas.getContext("2d");
  ctx.font = `${size}px "Open Sans", verdana, arial, sans-serif`;
  const widths = dims.map((d) => ctx.measureText(String(d.label || "")).width);
  const lineHeight = size * 1.3;
  let angle = 0;
  if (widths.some((w, i) => i > 0 && (w + widths[i - 1]) / 2 + LABEL_GAP_PX > spacing)) {
    const clears = (a) => spacing * Math.sin((a * Math.PI) / 180) >= lineHeight + LABEL_GAP_PX;
    angle = -([30, 45, 60].find(clears) || 90);
  }
  const rad = (Math.abs(angle) * Math.PI) / 180;
  const room = Math.max(...widths) * Math.sin(rad) + lineHeight * Math.cos(rad) + RANGE_TEXT_PX;
  const top = Math.round(100 * Math.max(0.4, Math.min(0.95, 1 - room / plotHeight))) / 100;
  const y = domain.y || [0, 1];
  if (trace.labelangle === angle && y[0] === 0 && y[1] === top) return false;
  trace.labelangle = angle;
  trace.domain = { ...domain, y: [0, top] };
  trace.line = { ...trace.line, colorbar: { ...(trace.line || {}).colorbar, len: top,
                                             y: top / 2 } };
  return true;
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
  // Enter applies the filter too (the range editor does the same); the notebook must not
  // take the key as its own shortcut
  filter.addEventListener("keydown", (e) => {
    if (e.key !== "Enter") return;
    e.preventDefault();
    e.stopPropagation();
    send();
  });
  for (const c of [sort, desc, status, rows]) c.addEventListener("change", send);
  el.append(box);
}

function render({ model, el }) {
  el.classList.add("wb-run");
  el.innerHTML = `<div class="wb-runline">
      <div class="wb-progress" role="progressbar"><div class="wb-progress-fill"></div>
        <span class="wb-progress-label"></span></div>
      <span class="wb-eta"></span><span class="wb-best"></span></div>
    <div class="wb-figure-empty"></div>
    <div class="wb-figure-box"><div class="wb-plot"></div>
      <button type="button" class="wb-parcoords-toggle">show parallel coordinates</button>
      <div class="wb-parcoords" style="display: none"></div></div>
    <div class="wb-trials-box"></div>
    <div class="wb-failures"></div>`;
  const q = (c) => el.querySelector(c);
  const controlsBox = document.createElement("div");
  const table = document.createElement("div");
  table.className = "wb-trials";
  q(".wb-trials-box").append(controlsBox, table);
  const showControls = () => {
    controlsBox.replaceChildren();
    controls(model, controlsBox);
  };
  showControls();
  const config = { responsive: true, displaylogo: false };
  const figure = (base) => ({ data: (base && base.data) || [],
    layout: { ...((base && base.layout) || {}), autosize: true } });
  // Two plots, each drawn on its own task: the charts, and the WebGL parallel coordinates
  // (most of a draw's time under load), these at most every SIDE_EVERY_MS.
  const sideOf = () => {
    const side = model.get("parcoords") || {};
    return [side, Number.isInteger(side.trace) ? side.trace : -1];
  };
  let [side, sideTrace] = sideOf();
  const parts = [
    { div: q(".wb-plot"), fig: figure(model.get("figure")), dirty: true, last: 0, every: 0 },
    { div: q(".wb-parcoords"), fig: figure(side), dirty: sideTrace >= 0, last: 0,
      every: SIDE_EVERY_MS, shown: false },
  ];
  // The parallel coordinates are plotly's one WebGL trace, and a page gets about 16 WebGL
  // contexts: with several panels open the oldest lost theirs and went blank. They are drawn
  // only on demand, and purged (their context given back) when hidden; a hidden box takes
  // no room, so it never lies over the trial table.
  const sidePart = parts[1];
  const toggle = q(".wb-parcoords-toggle");
  toggle.style.display = sideTrace >= 0 ? "" : "none";
  const showSide = (shown) => {
    sidePart.shown = shown;
    toggle.textContent = shown ? "hide parallel coordinates" : "show parallel coordinates";
    sidePart.div.style.display = shown ? "" : "none";
    if (shown) {
      sidePart.dirty = sideTrace >= 0;
      sidePart.last = 0;
      schedule(0);
    } else {
      if (Plotly) inTurn(sidePart, () => Plotly.purge(sidePart.div));
      sidePart.last = 0;
      sidePart.dirty = sideTrace >= 0;
    }
  };
  toggle.addEventListener("click", () => showSide(!sidePart.shown));
  // The plotly calls on one plot run one after another, each when the last has finished: a
  // relayout issued while a draw was under way (or two draws at once) left the parallel
  // coordinates' axes laid out for the old width beside a CPU hog.
  for (const part of parts) part.calls = Promise.resolve();
  const inTurn = (part, call) => {
    const next = part.calls.then(call, call);
    part.calls = next.catch(() => {}); // a failed call does not stop the ones after it
    return next;
  };
  let shownStatus = null;
  let pendingSeq = 0; // the empty figures first, then the latest data
  let takenSeq = 0;
  let timer = null;
  let timerAt = 0;
  let holdUntil = 0;
  let drawn = false;

  const schedule = (delay) => {
    const at = performance.now() + Math.max(0, delay);
    if (timer && timerAt <= at) return;
    if (timer) clearTimeout(timer);
    timerAt = at;
    timer = setTimeout(draw, Math.max(0, delay));
  };

  const writeText = () => {
    const s = model.get("state") || {};
    const budget = Math.max(s.budget || 0, s.done || 0, 1);
    q(".wb-progress-fill").style.width = `${Math.min(100, (100 * (s.done || 0)) / budget)}%`;
    q(".wb-progress-label").textContent = s.progress_label || `${s.done || 0} / ${s.budget || 0}`;
    q(".wb-eta").textContent = s.eta || "";
    q(".wb-best").textContent = s.best || "";
    q(".wb-figure-empty").innerHTML = s.empty_html || "";
    q(".wb-figure-box").style.display = s.empty_html ? "none" : "";
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

  // The plots take the box's width (the panel's), by relayout: plotly's own resize deletes
  // the layout's height and takes the div's (0 while the box is hidden: no trial yet), and a
  // plot first drawn before JupyterLab attached it stays at 700 px. The width is read when
  // the plot's turn comes (a resize under way ends at the last width), and goes into the
  // plot's layout once the relayout has been issued (it may be the same object: set first,
  // the relayout would see nothing to change).
  const fitPart = (part) => {
    part.fitting = false;
    const box = q(".wb-figure-box");
    const width = Math.round(box.clientWidth);
    const shown = part.div._fullLayout && part.div._fullLayout.width;
    if (width === 0 || box.style.display === "none" || shown === width) return undefined;
    if (part.shown === false) return undefined;
    if (part === parts[1]) {
      // the parallel coordinates are drawn afresh at a new width: after a react or relayout
      // of the width under load, their axes and labels stayed where the old width put them
      arrangeLabels(part.fig, width);
      part.fig.layout.width = width;
      return Plotly.newPlot(part.div, part.fig.data, part.fig.layout, config);
    }
    const done = Plotly.relayout(part.div, { width });
    part.fig.layout.width = width;
    return done;
  };
  const fit = () => {
    for (const part of parts) {
      if (!part.last || part.fitting) continue; // one fit waiting per plot is enough
      part.fitting = true;
      inTurn(part, () => fitPart(part));
    }
  };

  const draw = async () => {
    timer = null;
    if (!Plotly) { // the text is on screen already; the charts once plotly.js is loaded
      plotlyReady.then(() => schedule(0), (e) => console.error("[workbench] charts:", e));
      return;
    }
    let busy = 0;
    for (const part of parts) {
      const wait = Math.max(holdUntil - performance.now(),
                            part.last + part.every - performance.now());
      if (!part.dirty || part.shown === false) continue;
      if (wait > 0) {
        schedule(wait);
        continue;
      }
      if (busy > 0) await new Promise((r) => setTimeout(r, 0)); // let a click through
      if (holdUntil > performance.now()) {
        schedule(holdUntil - performance.now());
        break;
      }
      part.dirty = false;
      const t0 = performance.now();
      try {
        if (!part.last) {
          // Software WebGL (a browser without a GPU) spends seconds setting up a plot's GL
          // on its first points: pay that now, with invisible ones, not on the first data
          // after Launch, when a Pause or Stop may be pressed.
          await inTurn(part, () => Plotly.react(part.div, warmUp(part.fig.data),
                                                part.fig.layout, config));
          await new Promise((r) => setTimeout(r, 0));
        }
        await inTurn(part, () => {
          arrangeLabels(part.fig, part.fig.layout.width || q(".wb-figure-box").clientWidth);
          return Plotly.react(part.div, part.fig.data, part.fig.layout, config);
        });
      } finally {
        part.last = performance.now();
        busy += part.last - t0;
        const log = (el.dataset.drawLog || "").split(" ").filter(Boolean).slice(-40);
        log.push(`${parts.indexOf(part)}:${Math.round(t0)}+${Math.round(part.last - t0)}`);
        el.dataset.drawLog = log.join(" "); // part:start+ms, read by the load test
      }
    }
    if (busy > 0) {
      drawn = true;
      fit();
      el.dataset.draws = String(Number(el.dataset.draws || 0) + 1); // read by the load test
      el.dataset.drawMaxMs = String(Math.max(Number(el.dataset.drawMaxMs || 0),
                                             Math.round(busy)));
    }
    if (pendingSeq !== null && !parts[0].dirty) {
      model.send({ ack: pendingSeq, draw_ms: busy });
      pendingSeq = null;
    }
  };

  const takeChart = () => {
    const c = model.get("chart");
    if (!c || !c.seq || c.seq === takenSeq) return;
    takenSeq = c.seq;
    for (const [i, props] of Object.entries(decode(c.traces || {}))) {
      const part = Number(i) === sideTrace ? parts[1] : parts[0];
      const trace = part.fig.data[Number(i) === sideTrace ? 0 : Number(i)];
      if (!trace) continue;
      for (const [k, v] of Object.entries(props)) assign(trace, k, v);
      part.dirty = true;
    }
    for (const [key, props] of Object.entries(c.layout || {})) {
      const layout = parts[0].fig.layout;
      layout[key] = { ...(layout[key] || {}), ...props };
      parts[0].dirty = true;
    }
    pendingSeq = c.seq;
    schedule(drawn ? 0 : 50);
  };

  const onPress = (e) => {
    const panel = el.closest(".wb-panel") || el;
    if (e.target instanceof Element && panel.contains(e.target) && !el.contains(e.target)
        && !e.target.closest(".wb-yscale")) {
      holdUntil = performance.now() + HOLD_MS;
    }
  };
  document.addEventListener("pointerdown", onPress, true);
  const resize = new ResizeObserver(() => fit());
  resize.observe(q(".wb-figure-box"));

  // Backbone assigns every attribute of a message before it fires any change event, so
  // one handler sees the chart and the text of the same message together.
  const update = () => {
    takeChart();
    writeText();
  };
  let heard = false; // a state came in since this view asked for the whole state
  model.on("change:chart", update);
  model.on("change:state", () => { heard = true; update(); });
  // Another template (or other ranges): new empty figures for its parameters, drawn at the
  // width the plots have now; the kernel's next chart fills them.
  const refigure = () => {
    [side, sideTrace] = sideOf();
    toggle.style.display = sideTrace >= 0 ? "" : "none";
    const next = [figure(model.get("figure")), figure(side)];
    parts.forEach((part, i) => {
      const width = part.fig.layout.width;
      part.fig = next[i];
      if (width) part.fig.layout.width = width;
      part.dirty = i === 0 || sideTrace >= 0;  // drawn when shown (part.shown)
      part.last = Math.min(part.last, performance.now() - part.every); // redraw at once
    });
    schedule(0);
  };
  model.on("change:figure", refigure);
  model.on("change:parcoords", refigure);
  model.on("change:table_options", showControls);
  const plotlyReady = plotlyOf(model).then((p) => { Plotly = p; });
  update();
  schedule(0);
  // Ask for the whole state now that this view listens: updates the kernel sent while the
  // page was still creating the model found no listener and were dropped. Ask again while
  // nothing comes: a model that anywidget failed to set up in 2 s drops every message, and
  // the kernel answers a second unheard hello with a new model (state_view.py).
  const viewId = Math.random().toString(36).slice(2, 14);
  let helloTimer = null;
  const hello = (waitMs) => {
    heard = false;
    model.send({ hello: true, view: viewId, seen: (model.get("state") || {}).seq || 0 });
    helloTimer = setTimeout(() => {
      if (!heard) hello(Math.min(2 * waitMs, HELLO_RETRY_MAX_MS));
    }, waitMs);
  };
  hello(HELLO_RETRY_MS);
  return () => {
    document.removeEventListener("pointerdown", onPress, true);
    resize.disconnect();
    if (timer) clearTimeout(timer);
    if (helloTimer) clearTimeout(helloTimer);
    if (Plotly) for (const part of parts) Plotly.purge(part.div);
  };
}
export default { render };
