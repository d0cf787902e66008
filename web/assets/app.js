// jdwpaccel live monitor. Plain JavaScript, no dependencies: listens to the
// server-sent "snapshot" events at api/v1/events (or polls api/v1/snapshot
// where EventSource is missing) and fetches the heap map when it changes.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const CELL_PX = 2;        // CSS pixels per heap map cell
  const MAX_ROWS = 80;      // heap map rows at most
  const state = {
    vm: "",                 // selected VM ID
    threadRows: new Map(),  // DDM thread ID -> {tr, cells, last}
    firstThreads: true,     // no highlight on the first fill
    heapKey: "",            // "vm/generation/infotime/cells" last drawn
    heapBusy: false,
    heap: null,             // last heap summary
    colors: [],             // colour by kind
  };

  // ---- formatting ----
  const nf = new Intl.NumberFormat("en-US");
  const num = (n) => nf.format(n);
  function bytes(n) {
    if (n < 1024) return n + " B";
    const u = ["KB", "MB", "GB", "TB"];
    let i = -1;
    do { n /= 1024; i++; } while (n >= 1024 && i < u.length - 1);
    return (n >= 100 ? n.toFixed(0) : n >= 10 ? n.toFixed(1) : n.toFixed(2)) + " " + u[i];
  }
  function short(n) {
    if (n >= 1e6) return (n / 1e6).toFixed(n >= 1e7 ? 0 : 1) + "M";
    if (n >= 1e4) return (n / 1e3).toFixed(0) + "k";
    return num(n);
  }
  const ms = (s) => (s * 1000 >= 100 ? (s * 1000).toFixed(0) : (s * 1000).toFixed(1)) + " ms";
  function age(t) {
    let s = Math.max(0, Math.round((Date.now() - Date.parse(t)) / 1000));
    if (s < 60) return s + "s";
    if (s < 3600) return Math.floor(s / 60) + "m " + (s % 60) + "s";
    return Math.floor(s / 3600) + "h " + Math.floor((s % 3600) / 60) + "m";
  }
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function flash(e) { e.classList.remove("chg"); void e.offsetWidth; e.classList.add("chg"); }
  function setText(id, v) {
    const e = $(id);
    if (e.textContent !== v) { e.textContent = v; if (state.updates > 1) flash(e); }
  }

  // ---- live connection ----
  state.updates = 0;
  function connect() {
    if (!window.EventSource) { poll(); return; }
    const es = new EventSource("api/v1/events");
    es.addEventListener("snapshot", (ev) => apply(JSON.parse(ev.data)));
    es.onopen = () => live(true);
    es.onerror = () => live(false);
  }
  function poll() {
    fetch("api/v1/snapshot").then((r) => r.json()).then((s) => { live(true); apply(s); })
      .catch(() => live(false)).finally(() => setTimeout(poll, 1000));
  }
  function live(on) {
    const p = $("live");
    p.className = "pill " + (on ? "on" : "off");
    p.textContent = on ? "live" : "reconnecting…";
  }

  function apply(s) {
    state.updates++;
    document.body.dataset.updates = state.updates;
    $("clock").textContent = new Date(s.time).toLocaleTimeString();
    renderVMs(s.vms || []);
    renderSessions(s.sessions || []);
    renderAccel(s.accel);
    renderThreads((s.threads || {})[state.vm] || [], !!state.vm);
    const hb = (s.heaps || {})[state.vm] || { generation: 0 };
    renderHeapInfo(hb.info);
    maybeFetchHeap(hb.generation);
  }

  // ---- VMs and sessions ----
  function renderVMs(vms) {
    const sel = $("vmsel");
    const ids = vms.map((v) => v.id);
    if (sel.dataset.ids !== ids.join("\n")) {
      sel.dataset.ids = ids.join("\n");
      sel.textContent = "";
      for (const v of vms) {
        const o = el("option", "", (v.app || v.addr) + " — " + v.id);
        o.value = v.id;
        sel.appendChild(o);
      }
    }
    if (!ids.includes(state.vm)) { state.vm = ids[0] || ""; state.firstThreads = true; }
    sel.value = state.vm;
    const vm = vms.find((v) => v.id === state.vm);
    const box = $("vminfo");
    box.textContent = "";
    if (!vm) { box.appendChild(el("p", "muted", "No VM connected yet.")); return; }
    const title = el("div", "app", vm.app || vm.addr);
    title.appendChild(el("span", vm.ddm ? "badge" : "badge grey", vm.ddm ? "DDM" : "JDWP only"));
    box.appendChild(title);
    const dl = el("dl");
    const row = (k, v) => { dl.appendChild(el("dt", "", k)); dl.appendChild(el("dd", "", v)); };
    if (vm.ident) row("VM", vm.ident);
    if (vm.pid) row("pid", String(vm.pid));
    row("address", vm.addr);
    row("debugger", (vm.debuggers || []).length ? vm.debuggers.join(", ") : "none attached");
    if (vm.status) row("note", vm.status);
    box.appendChild(dl);
  }
  function renderSessions(ss) {
    const tb = $("sessions").tBodies[0];
    tb.textContent = "";
    if (!ss.length) {
      const tr = el("tr"); const td = el("td", "muted", "no debugger sessions"); td.colSpan = 5; tr.appendChild(td); tb.appendChild(tr);
      return;
    }
    for (const s of ss) {
      const tr = el("tr", s.open ? "" : "muted");
      tr.append(el("td", "", "#" + s.id), el("td", "", s.debugger), el("td", "num", num(s.packets)),
        el("td", "num", bytes(s.bytes)), el("td", "", s.open ? age(s.started) : "closed"));
      tb.appendChild(tr);
    }
  }

  // ---- accelerator ----
  function renderAccel(a) {
    if (!a) return;
    const st = $("accel-state");
    st.textContent = a.enabled ? "speculating" : "pass-through";
    st.className = "pill small " + (a.enabled ? "on" : "");
    setText("a-ratio", a.hits + a.misses ? (a.hit_ratio * 100).toFixed(1) + "%" : "–");
    setText("a-hits", short(a.hits));
    setText("a-misses", short(a.misses));
    setText("a-saved", short(a.round_trips_saved));
    setText("a-belays", short(a.belays));
    setText("a-wasted", short(a.wasted));
    $("a-steps").textContent = num(a.steps);
    const l = a.step_latency;
    $("a-p50").textContent = a.steps ? ms(l.p50_seconds) : "–";
    $("a-p90").textContent = a.steps ? ms(l.p90_seconds) : "–";
    $("a-p99").textContent = a.steps ? ms(l.p99_seconds) : "–";
    $("a-max").textContent = a.steps ? ms(l.max_seconds) : "–";
    let pts = a.recent_steps_seconds || [];
    let cap = "step latency, last " + pts.length + " steps";
    if (!pts.length) { pts = (a.history || []).map((h) => h.p50_seconds); cap = "step latency p50 over time"; }
    $("spark-cap").textContent = cap;
    spark(pts, l.p50_seconds);
  }
  function spark(pts, p50) {
    const svg = $("spark"), W = 600, H = 90, pad = 6;
    if (!pts.length) { svg.innerHTML = ""; return; }
    const hi = Math.max(...pts, p50) * 1.1 || 1;
    const x = (i) => pts.length === 1 ? W / 2 : pad + (i * (W - 2 * pad)) / (pts.length - 1);
    const y = (v) => H - pad - (v / hi) * (H - 2 * pad);
    const line = pts.map((v, i) => x(i).toFixed(1) + "," + y(v).toFixed(1)).join(" ");
    const area = "M" + x(0).toFixed(1) + "," + (H - pad) + " L" + line.split(" ").join(" L") + " L" + x(pts.length - 1).toFixed(1) + "," + (H - pad) + " Z";
    const last = pts[pts.length - 1];
    svg.innerHTML =
      '<defs><linearGradient id="sg" x1="0" x2="0" y1="0" y2="1"><stop offset="0" stop-color="#3b6ff5" stop-opacity=".35"/><stop offset="1" stop-color="#3b6ff5" stop-opacity="0"/></linearGradient></defs>' +
      '<path d="' + area + '" fill="url(#sg)"/>' +
      '<line x1="0" x2="' + W + '" y1="' + y(p50).toFixed(1) + '" y2="' + y(p50).toFixed(1) + '" stroke="#6a4ff0" stroke-dasharray="4 4" stroke-width="1" vector-effect="non-scaling-stroke"/>' +
      '<polyline points="' + line + '" fill="none" stroke="#3b6ff5" stroke-width="2" vector-effect="non-scaling-stroke" stroke-linejoin="round"/>' +
      '<circle cx="' + x(pts.length - 1).toFixed(1) + '" cy="' + y(last).toFixed(1) + '" r="3.5" fill="#3b6ff5"/>';
  }

  // ---- threads ----
  const COLS = ["id", "tid", "status", "utime", "stime", "cpu", "name"];
  function threadCells(t) {
    return {
      id: (t.daemon ? "*" : "") + t.id, tid: String(t.tid), status: t.status,
      utime: num(t.utime), stime: num(t.stime), cpu: ((t.utime + t.stime) / 100).toFixed(2), name: t.name,
    };
  }
  function renderThreads(ts, haveVM) {
    const tb = $("threads").tBodies[0];
    const seen = new Set();
    let changes = 0;
    ts.forEach((t, i) => {
      seen.add(t.id);
      const c = threadCells(t);
      let r = state.threadRows.get(t.id);
      if (!r) {
        const tr = el("tr", state.firstThreads ? "" : "new");
        const cells = {};
        for (const k of COLS) {
          const td = el("td", k === "name" ? "name" : k === "status" ? "" : "num");
          cells[k] = td;
          tr.appendChild(td);
        }
        r = { tr, cells, last: {} };
        state.threadRows.set(t.id, r);
        if (!state.firstThreads) changes++;
      }
      for (const k of COLS) {
        if (r.last[k] === c[k]) continue;
        const td = r.cells[k];
        if (k === "status") {
          td.textContent = "";
          td.appendChild(el("span", "st st-" + c.status.replace(/[^a-z-]/g, ""), c.status));
        } else {
          td.textContent = c[k];
        }
        if (k === "id") td.classList.toggle("daemon", t.daemon);
        if (k === "name") td.title = c.name;
        if (r.last[k] !== undefined) { flash(td); changes++; }
      }
      r.last = c;
      if (tb.children[i] !== r.tr) tb.insertBefore(r.tr, tb.children[i] || null);
    });
    for (const [id, r] of state.threadRows) {
      if (!seen.has(id)) { r.tr.remove(); state.threadRows.delete(id); changes++; }
    }
    if (ts.length) state.firstThreads = false;
    document.body.dataset.threadChanges = Number(document.body.dataset.threadChanges) + changes;
    $("thread-count").textContent = ts.length ? ts.length + " threads · * = daemon" : "";
    $("thread-note").textContent = !haveVM ? "" : ts.length ? "CPU times in clock ticks (1/100 s); changes flash." :
      "No thread data: the VM has not answered DDM thread requests (not an Android VM, or a release without them).";
  }

  // ---- heap ----
  function mapGeometry() {
    const w = $("heapmap").parentElement.clientWidth || 600;
    const cols = Math.max(16, Math.floor(w / CELL_PX));
    return { cols, cells: cols * MAX_ROWS };
  }
  function maybeFetchHeap(gen) {
    const g = mapGeometry();
    const key = state.vm + "/" + gen + "/" + g.cells;
    if (!state.vm || key === state.heapKey || state.heapBusy) return;
    state.heapBusy = true;
    fetch("api/v1/vms/" + encodeURIComponent(state.vm) + "/heap?cells=" + g.cells)
      .then((r) => r.json())
      .then((h) => { state.heapKey = key; state.heap = h; drawHeap(h, g.cols); })
      .catch(() => {})
      .finally(() => { state.heapBusy = false; });
  }
  function renderHeapInfo(info) {
    const hi = $("heapinfo");
    const key = JSON.stringify(info || null);
    if (hi.dataset.key === key) return;
    hi.dataset.key = key;
    hi.textContent = "";
    if (info) {
      const f = (k, v) => { const d = el("div"); d.append(el("div", "k", k), el("b", "", v)); hi.appendChild(d); };
      f("heap size", bytes(info.size_bytes));
      f("allocated", bytes(info.allocated_bytes));
      f("free", bytes(info.free_bytes));
      f("% used", (info.used_ratio * 100).toFixed(2) + "%");
      f("objects", num(info.objects));
      f("max", bytes(info.max_bytes));
      const bar = el("div", "usebar"), fill = el("div");
      fill.style.width = Math.min(100, info.used_ratio * 100).toFixed(1) + "%";
      bar.appendChild(fill); hi.appendChild(bar);
    } else {
      hi.appendChild(el("span", "muted", "No heap summary (HPIF) yet."));
    }
  }
  function hexRGB(c) { return [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16)); }
  function drawHeap(h, cols) {
    for (const k of h.kinds || []) state.colors[k.kind] = hexRGB(k.color);
    state.colors[0] = [192, 192, 192];
    $("heap-gen").textContent = h.updated ? "map of " + new Date(h.updated).toLocaleTimeString() + (h.truncated ? " (cut short)" : "") : "";
    // map
    const cv = $("heapmap"), m = h.map || { cells: 0, kinds: "" };
    const rows = Math.max(1, Math.ceil(m.cells / cols));
    const dpr = window.devicePixelRatio || 1;
    cv.style.height = rows * CELL_PX + "px";
    cv.style.width = cols * CELL_PX + "px";
    cv.width = Math.round(cols * CELL_PX * dpr);
    cv.height = Math.round(rows * CELL_PX * dpr);
    const ctx = cv.getContext("2d");
    ctx.clearRect(0, 0, cv.width, cv.height);
    if (m.cells) {
      const img = new ImageData(cols, rows);
      const d = img.data;
      for (let i = 0; i < cols * rows; i++) {
        const c = i < m.cells ? state.colors[m.kinds.charCodeAt(i) - 48] || [255, 0, 255] : state.colors[0];
        d[4 * i] = c[0]; d[4 * i + 1] = c[1]; d[4 * i + 2] = c[2]; d[4 * i + 3] = 255;
      }
      const off = document.createElement("canvas");
      off.width = cols; off.height = rows;
      off.getContext("2d").putImageData(img, 0, 0);
      ctx.imageSmoothingEnabled = false;
      ctx.drawImage(off, 0, 0, cv.width, cv.height);
    }
    cv.dataset.cells = m.cells;
    cv.dataset.cols = cols;
    cv.dataset.cellBytes = m.cell_bytes || 0;
    // legend
    const lg = $("legend");
    lg.textContent = "";
    for (const k of h.kinds || []) {
      const s = el("span"); const sw = el("span", "sw"); sw.style.background = k.color;
      s.append(sw, document.createTextNode(k.label)); lg.appendChild(s);
    }
    if (m.cell_bytes) lg.appendChild(el("span", "muted", "1 cell = " + bytes(m.cell_bytes)));
    // stats
    const tb = $("heapstats").tBodies[0];
    tb.textContent = "";
    for (const s of h.stats || []) {
      const tr = el("tr"), td = el("td");
      const sw = el("span", "sw"); sw.style.background = state.colors[s.kind] ? "rgb(" + state.colors[s.kind] + ")" : "#f0f";
      td.append(sw, document.createTextNode(s.label));
      tr.append(td, el("td", "num", num(s.count)), el("td", "num", bytes(s.total_bytes)), el("td", "num", bytes(s.smallest_bytes)),
        el("td", "num", bytes(s.largest_bytes)), el("td", "num", bytes(s.median_bytes)), el("td", "num", bytes(s.average_bytes)));
      tb.appendChild(tr);
    }
    histogram(h.histogram || { lower_bytes: [], series: [] });
  }
  function histogram(hg) {
    const svg = $("histo"), W = 700, H = 130, bot = 16, top = 4;
    const n = hg.lower_bytes.length;
    if (!n) { svg.innerHTML = ""; return; }
    const totals = new Array(n).fill(0);
    for (const s of hg.series) s.counts.forEach((c, i) => { totals[i] += c; });
    const lmax = Math.log10(1 + Math.max(...totals)) || 1;
    const bw = W / n;
    let out = "";
    for (let i = 0; i < n; i++) {
      if (!totals[i]) continue;
      const hgt = (Math.log10(1 + totals[i]) / lmax) * (H - bot - top);
      let y = H - bot;
      for (const s of hg.series) {
        const c = s.counts[i];
        if (!c) continue;
        const part = (hgt * c) / totals[i];
        y -= part;
        const col = state.colors[s.kind] ? "rgb(" + state.colors[s.kind] + ")" : "#f0f";
        out += '<rect x="' + (i * bw + 1).toFixed(1) + '" y="' + y.toFixed(1) + '" width="' + (bw - 2).toFixed(1) + '" height="' + part.toFixed(1) +
          '" fill="' + col + '" stroke="rgba(0,0,0,.25)" stroke-width=".5"><title>' + num(c) + " × ≥" + bytes(hg.lower_bytes[i]) + "</title></rect>";
      }
    }
    for (let i = 0; i < n; i += 2) {
      const b = hg.lower_bytes[i];
      const lb = i === 0 ? "<16 B" : b >= 1048576 ? "≥" + b / 1048576 + " MB" : b >= 1024 ? "≥" + b / 1024 + " KB" : "≥" + b + " B";
      out += '<text x="' + (i * bw + bw / 2).toFixed(1) + '" y="' + (H - 5) + '" text-anchor="middle">' + lb + "</text>";
    }
    out += '<line x1="0" x2="' + W + '" y1="' + (H - bot) + '" y2="' + (H - bot) + '" stroke="#c9d0da"/>';
    svg.innerHTML = out;
  }
  // Hovering the map names the kind under the pointer.
  $("heapmap").addEventListener("mousemove", (ev) => {
    const h = state.heap, cv = ev.currentTarget, tip = $("maptip");
    if (!h || !h.map || !h.map.cells) return;
    const cols = Number(cv.dataset.cols), r = cv.getBoundingClientRect();
    const i = Math.floor((ev.clientY - r.top) / CELL_PX) * cols + Math.floor((ev.clientX - r.left) / CELL_PX);
    if (i < 0 || i >= h.map.cells) { tip.hidden = true; return; }
    const kind = h.map.kinds.charCodeAt(i) - 48;
    const k = (h.kinds || []).find((x) => x.kind === kind);
    tip.textContent = (k ? k.label : "?") + " · +" + bytes(i * h.map.cell_bytes);
    tip.style.left = (ev.clientX - r.left + 12) + "px";
    tip.style.top = (ev.clientY - r.top + 12) + "px";
    tip.hidden = false;
  });
  $("heapmap").addEventListener("mouseleave", () => { $("maptip").hidden = true; });
  $("vmsel").addEventListener("change", (ev) => {
    state.vm = ev.target.value; state.firstThreads = true; state.heapKey = "";
    for (const r of state.threadRows.values()) r.tr.remove();
    state.threadRows.clear();
  });
  $("heap-request").addEventListener("click", () => {
    if (!state.vm) return;
    const msg = $("heap-request-msg");
    fetch("api/v1/vms/" + encodeURIComponent(state.vm) + "/heap/request", {
      method: "POST", headers: { "Content-Type": "application/json" }, body: "{}",
    }).then((r) => r.ok ? "requested" : r.text())
      .then((t) => { msg.textContent = t.trim(); })
      .catch((e) => { msg.textContent = String(e); });
  });
  window.addEventListener("resize", () => { state.heapKey = ""; });
  connect();
})();
