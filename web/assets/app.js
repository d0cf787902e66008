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
    threadRows: new Map(),  // thread key (DDM ID, or JDWP threadID "0x…") -> {tr, cells, last}
    threadMode: "",         // "ddm" or "jdwp": the columns the table has
    stackKey: "",           // thread whose stack is shown ("" : the current stop's)
    stackVM: "",
    snap: null,             // last snapshot
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
    state.snap = s;
    document.body.dataset.updates = state.updates;
    $("clock").textContent = new Date(s.time).toLocaleTimeString();
    renderRole(s.role || "");
    const vm = renderVMs(s.vms || []);
    renderSessions(s.sessions || [], s.vms || []);
    renderAccel(s.accel);
    renderThreads((s.threads || {})[state.vm] || [], vm);
    renderStack((s.stacks || {})[state.vm]);
    if (state.stackKey && state.updates % 2 === 0) fetchStack();
    const hb = (s.heaps || {})[state.vm] || { generation: 0 };
    renderHeapMode(vm);
    renderHeapInfo(hb.info);
    if (vm && vm.heap !== "none") maybeFetchHeap(hb.generation);
  }
  // The server embeds its first snapshot (and the first VM's heap map) in
  // the page, so the page shows data before the event stream connects: a
  // headless browser's --screenshot sees it.
  function applyInitial() {
    const e = $("initial-snapshot");
    if (!e) return;
    try {
      apply(JSON.parse(e.textContent));
      const p = $("live");
      p.className = "pill";
      p.textContent = "snapshot of " + $("clock").textContent;
      const hp = $("initial-heap");
      if (hp && state.vm) {
        const h = JSON.parse(hp.textContent);
        state.heap = h;
        drawHeap(h, mapGeometry().cols);
      }
    } catch (err) { /* the live stream will fill the page */ }
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
    if (!vm) { box.appendChild(el("p", "muted", "No VM connected yet.")); return null; }
    const title = el("div", "app", vm.app || vm.addr || vm.id);
    title.appendChild(el("span", vm.ddm ? "badge" : "badge grey", vm.ddm ? "DDM" : "JDWP only"));
    if (vm.kind) title.appendChild(el("span", "badge grey", vm.kind));
    if (vm.simulated) title.appendChild(el("span", "badge sim", "simulated"));
    box.appendChild(title);
    const dl = el("dl");
    const row = (k, v) => { dl.appendChild(el("dt", "", k)); dl.appendChild(el("dd", "", v)); };
    if (vm.ident) row("VM", vm.ident);
    if (vm.pid) row("pid", String(vm.pid));
    row("address", vm.addr || "–");
    row("debugger", (vm.debuggers || []).length ? vm.debuggers.join(", ") : "none attached");
    if (vm.status) row("note", vm.status);
    if (vm.threads_note) row("threads", vm.threads_note);
    if (vm.heap_note) row("heap", vm.heap_note);
    box.appendChild(dl);
    return vm;
  }
  function renderSessions(ss, vms) {
    const tb = $("sessions").tBodies[0];
    tb.textContent = "";
    if (!ss.length) {
      const tr = el("tr"); const td = el("td", "muted", "no debugger sessions"); td.colSpan = 6; tr.appendChild(td); tb.appendChild(tr);
      return;
    }
    const names = new Map(vms.map((v) => [v.id, v.app || v.addr || v.id]));
    for (const s of ss) {
      const tr = el("tr", s.open ? "" : "muted");
      const vmName = names.get(s.vm) || s.vm;
      const td = el("td", "name", vmName + (s.run ? " · " + s.run : ""));
      td.title = s.vm + (s.run ? " (run: " + s.run + ")" : "");
      // Several clients may share the session: each with its role.
      const who = (s.clients || []).length ?
        s.clients.map((c) => c.addr + " (" + c.role + (c.denied ? ", " + c.denied + " refused" : "") + ")").join(", ") : s.debugger;
      tr.append(el("td", "", "#" + s.id), td, el("td", "", who), el("td", "num", num(s.packets)),
        el("td", "num", bytes(s.bytes)), el("td", "", s.open ? age(s.started) : "closed"));
      tb.appendChild(tr);
    }
  }

  // The page of another end (split mode's far end, shown under the near
  // end's /far/) says so in its header and title.
  function renderRole(role) {
    const r = $("role");
    if (r.textContent === role) return;
    r.textContent = role;
    r.hidden = !role;
    document.title = "jdwpaccel monitor" + (role ? " · " + role : "");
    $("ratio-note").textContent = role === "far end" ?
      "The far end sees only what the near end could not answer itself, so its own hit ratio is low by design; the near end's page shows what the debugger got." :
      $("ratio-note").dataset.text;
  }

  // ---- accelerator ----
  function renderAccel(a) {
    if (!a) return;
    const st = $("accel-state");
    st.textContent = a.state || (a.enabled ? "speculating" : "pass-through");
    st.className = "pill small " + (st.textContent === "speculating" ? "on" : "");
    st.title = a.state_note || "";
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
    let cap = "time per step (resume to refreshed view), last " + pts.length + " steps" + (a.run ? " of " + a.run : "");
    if (!pts.length) { pts = (a.history || []).map((h) => h.p50_seconds); cap = "step latency p50 over time"; }
    $("spark-cap").textContent = cap;
    spark(pts, l.p50_seconds, a.recent_steps || []);
    mix(a);
    waterfall(a.last_step);
  }
  // Where a step's time goes, on its critical path, and how the debugger's
  // commands were answered.
  const PARTS = [
    ["run_seconds", "resume → stop (VM runs)", "#9aa5b8"],
    ["vm_seconds", "VM round trips (misses)", "#d64545"],
    ["belay_seconds", "waiting on speculation (belays)", "#d97706"],
    ["cache_seconds", "cache hits", "#1f9d55"],
    ["debugger_seconds", "debugger's own time", "#c9d0da"],
  ];
  const SERVED = { miss: "#d64545", belay: "#d97706", hit: "#1f9d55" };
  function mix(a) {
    const box = $("mix");
    const n = a.hits + a.belays + a.misses;
    box.textContent = "";
    if (!n) return;
    for (const [k, label, col] of [["hits", "hits", SERVED.hit], ["belays", "belays", SERVED.belay], ["misses", "misses (VM round trips)", SERVED.miss]]) {
      if (!a[k]) continue;
      const seg = el("div", "seg");
      seg.style.width = (100 * a[k] / n).toFixed(2) + "%";
      seg.style.background = col;
      seg.title = num(a[k]) + " " + label + " (" + (100 * a[k] / n).toFixed(1) + "%)";
      if (a[k] / n > 0.12) seg.textContent = label.split(" ")[0] + " " + (100 * a[k] / n).toFixed(0) + "%";
      box.appendChild(seg);
    }
    const lg = $("step-legend");
    if (!lg.childNodes.length) {
      for (const [, label, col] of PARTS) {
        const s = el("span"); const sw = el("span", "sw"); sw.style.background = col;
        s.append(sw, document.createTextNode(label)); lg.appendChild(s);
      }
    }
  }
  function waterfall(st) {
    const box = $("waterfall");
    if (!st) return;
    const key = st.t + "/" + st.total_seconds;
    if (box.dataset.key === key) return;
    box.dataset.key = key;
    box.textContent = "";
    $("wf-cap").textContent = ms(st.total_seconds) + (st.idle_seconds ? " (+ " + ms(st.idle_seconds) + " idle, not counted)" : "") + " · " + st.event + " · " + st.round_trips + " serial round trips after the stop · " +
      st.hits + " hits, " + st.belays + " belays, " + st.misses + " misses" + (st.dropped ? " (" + st.dropped + " more not shown)" : "");
    const W = 600, total = Math.max(st.total_seconds + (st.idle_seconds || 0), 1e-6), rowH = 12, labelW = 200, PW = W - labelW;
    // One row per VM round trip or belay, in order; cache hits share one
    // row of ticks (they take no round trip).
    const rows = [{ label: "resume", start: 0, end: st.resume_end_seconds || 0, col: "#6b7585" },
      { label: "VM runs to the " + st.event.toLowerCase().replace(/_/g, " "), start: st.resume_end_seconds || 0, end: st.run_seconds, col: "#9aa5b8" }];
    const hits = [];
    for (const c of st.commands || []) {
      if (c.served === "hit") { hits.push(c); continue; }
      rows.push({ label: c.cmd + (c.served === "belay" ? " (belay)" : ""), start: c.start_seconds, end: c.end_seconds || c.start_seconds, col: SERVED[c.served] || "#888" });
    }
    if (hits.length) rows.push({ label: hits.length + " cache hits", ticks: hits, col: SERVED.hit });
    const H = rows.length * rowH + 16;
    const X = (t) => labelW + (t / total) * PW;
    let out = "";
    rows.forEach((r, i) => {
      const y = i * rowH;
      out += '<text x="' + (labelW - 6) + '" y="' + (y + rowH - 3) + '" text-anchor="end">' + r.label.replace(/&/g, "&amp;").replace(/</g, "&lt;") + "</text>";
      if (r.ticks) {
        for (const c of r.ticks) out += '<rect x="' + X(c.start_seconds).toFixed(1) + '" y="' + (y + 2) + '" width="1.5" height="' + (rowH - 4) + '" fill="' + r.col + '"><title>' + c.cmd + " (hit) at " + ms(c.start_seconds) + "</title></rect>";
        return;
      }
      const w = Math.max(1.5, ((r.end - r.start) / total) * PW);
      out += '<rect x="' + X(r.start).toFixed(1) + '" y="' + (y + 2) + '" width="' + w.toFixed(1) + '" height="' + (rowH - 4) + '" fill="' + r.col + '"><title>' +
        r.label + ": " + ms(r.start) + " → " + ms(r.end) + "</title></rect>";
    });
    // The critical path, as one stacked bar under the rows.
    let x = labelW;
    out += '<text x="' + (labelW - 6) + '" y="' + (rows.length * rowH + 12) + '" text-anchor="end" font-weight="600">critical path</text>';
    for (const [k, label, col] of PARTS) {
      const w = (st[k] / total) * PW;
      if (w <= 0) continue;
      out += '<rect class="crit" x="' + x.toFixed(1) + '" y="' + (rows.length * rowH + 3) + '" width="' + w.toFixed(1) + '" height="10" fill="' + col + '"><title>' + label + ": " + ms(st[k]) + "</title></rect>";
      x += w;
    }
    const svg = document.createElementNS("http://www.w3.org/2000/svg", "svg");
    svg.setAttribute("viewBox", "0 0 " + W + " " + H);
    svg.style.height = "auto";
    svg.innerHTML = out;
    box.appendChild(svg);
  }
  function spark(pts, p50, parts) {
    const svg = $("spark"), W = 600, H = 90, pad = 6;
    if (!pts.length) { svg.innerHTML = ""; return; }
    const hi = Math.max(...pts, p50) * 1.1 || 1;
    // Each real step as a bar stacked by where its time went.
    let bars = "";
    if (parts.length === pts.length) {
      const bw = (W - 2 * pad) / pts.length;
      parts.forEach((st, i) => {
        let y = H - pad;
        for (const [k, label, col] of PARTS) {
          const h = (st[k] / hi) * (H - 2 * pad);
          if (h <= 0) continue;
          y -= h;
          bars += '<rect x="' + (pad + i * bw + bw * 0.15).toFixed(1) + '" y="' + y.toFixed(1) + '" width="' + (bw * 0.7).toFixed(1) + '" height="' + h.toFixed(1) +
            '" fill="' + col + '" opacity=".8"><title>step: ' + ms(st.total_seconds) + " · " + label + " " + ms(st[k]) + "</title></rect>";
        }
      });
    }
    const x = (i) => parts.length === pts.length ? pad + (i + 0.5) * (W - 2 * pad) / pts.length : pts.length === 1 ? W / 2 : pad + (i * (W - 2 * pad)) / (pts.length - 1);
    const y = (v) => H - pad - (v / hi) * (H - 2 * pad);
    const line = pts.map((v, i) => x(i).toFixed(1) + "," + y(v).toFixed(1)).join(" ");
    const area = "M" + x(0).toFixed(1) + "," + (H - pad) + " L" + line.split(" ").join(" L") + " L" + x(pts.length - 1).toFixed(1) + "," + (H - pad) + " Z";
    const last = pts[pts.length - 1];
    svg.innerHTML = bars +
      '<defs><linearGradient id="sg" x1="0" x2="0" y1="0" y2="1"><stop offset="0" stop-color="#3b6ff5" stop-opacity=".35"/><stop offset="1" stop-color="#3b6ff5" stop-opacity="0"/></linearGradient></defs>' +
      (bars ? "" : '<path d="' + area + '" fill="url(#sg)"/>') +
      '<line x1="0" x2="' + W + '" y1="' + y(p50).toFixed(1) + '" y2="' + y(p50).toFixed(1) + '" stroke="#6a4ff0" stroke-dasharray="4 4" stroke-width="1" vector-effect="non-scaling-stroke"/>' +
      '<polyline points="' + line + '" fill="none" stroke="#3b6ff5" stroke-width="2" vector-effect="non-scaling-stroke" stroke-linejoin="round"/>' +
      '<circle cx="' + x(pts.length - 1).toFixed(1) + '" cy="' + y(last).toFixed(1) + '" r="3.5" fill="#3b6ff5"/>';
  }

  // ---- threads ----
  // DDM threads (Android) have the DDMS columns; threads read from the
  // debugger's JDWP conversation (any VM) have what the debugger asked.
  const MODES = {
    ddm: {
      cols: ["id", "tid", "status", "utime", "stime", "cpu", "name"],
      head: '<th class="num">ID</th><th class="num">Tid</th><th>Status</th><th class="num">utime</th><th class="num">stime</th><th class="num" title="user + system CPU time, seconds">CPU</th><th>Name</th>',
      cells: (t) => ({
        id: (t.daemon ? "*" : "") + t.id, tid: String(t.tid), status: t.status,
        utime: num(t.utime), stime: num(t.stime), cpu: ((t.utime + t.stime) / 100).toFixed(2), name: t.name,
      }),
    },
    jdwp: {
      cols: ["object", "status", "frames", "top", "name"],
      head: '<th class="num" title="JDWP threadID">Thread</th><th>Status</th><th class="num">Frames</th><th>Top frame</th><th>Name</th>',
      cells: (t) => ({
        object: (t.current ? "▶ " : "") + t.object, status: t.status + (t.suspended ? " · susp." : ""),
        frames: t.frames ? String(t.frames) : "", top: t.top || "", name: t.name,
      }),
    },
  };
  const tkey = (t) => t.object || String(t.id);
  function renderThreads(ts, vm) {
    const haveVM = !!vm;
    const mode = vm && (vm.threads === "jdwp" || vm.threads === "none" && !vm.ddm) ? "jdwp" : "ddm";
    const M = MODES[mode];
    if (state.threadMode !== mode) {
      state.threadMode = mode;
      $("threads").tHead.innerHTML = "<tr>" + M.head + "</tr>";
      for (const r of state.threadRows.values()) r.tr.remove();
      state.threadRows.clear();
      state.firstThreads = true;
    }
    $("thread-source").textContent = vm && vm.threads_note ? "Source: " + vm.threads_note + "." : "";
    const tb = $("threads").tBodies[0];
    const seen = new Set();
    let changes = 0;
    ts.forEach((t, i) => {
      const key = tkey(t);
      seen.add(key);
      const c = M.cells(t);
      let r = state.threadRows.get(key);
      if (!r) {
        const tr = el("tr", state.firstThreads ? "" : "new");
        tr.dataset.key = key;
        const cells = {};
        for (const k of M.cols) {
          const td = el("td", k === "name" || k === "top" ? "name" : k === "status" ? "" : "num");
          cells[k] = td;
          tr.appendChild(td);
        }
        r = { tr, cells, last: {} };
        state.threadRows.set(key, r);
        if (!state.firstThreads) changes++;
      }
      r.tr.classList.toggle("sel", key === state.stackKey);
      r.tr.classList.toggle("current", !!t.current);
      for (const k of M.cols) {
        if (r.last[k] === c[k]) continue;
        const td = r.cells[k];
        if (k === "status") {
          td.textContent = "";
          td.appendChild(el("span", "st st-" + t.status.replace(/[^a-z-]/g, ""), c.status));
        } else {
          td.textContent = c[k];
        }
        if (k === "id") td.classList.toggle("daemon", t.daemon);
        if (k === "status" && t.as_of_stop) td.title = "as of stop " + t.as_of_stop;
        if (k === "name" || k === "top") td.title = c[k];
        if (r.last[k] !== undefined) { flash(td); changes++; }
      }
      r.last = c;
      if (tb.children[i] !== r.tr) tb.insertBefore(r.tr, tb.children[i] || null);
    });
    for (const [key, r] of state.threadRows) {
      if (!seen.has(key)) { r.tr.remove(); state.threadRows.delete(key); changes++; }
    }
    if (ts.length) state.firstThreads = false;
    document.body.dataset.threadChanges = Number(document.body.dataset.threadChanges) + changes;
    $("thread-count").textContent = !ts.length ? "" : ts.length + " threads" + (mode === "ddm" ? " · * = daemon" : " · ▶ = thread of the last stop · susp. = suspended") + " · click for the stack";
    $("thread-note").textContent = !haveVM ? "" : ts.length ? (mode === "ddm" ? "CPU times in clock ticks (1/100 s); changes flash." :
      "Nothing is sent to the VM for this table: it shows what the debugger (and the speculator) already asked.") :
      vm.ddm ? "No thread data: the VM has not answered DDM thread requests (a release without them)." :
      "No thread data yet: this VM speaks no DDM; attach a debugger and its threads appear here, read from its own conversation.";
  }
  // The stack of the clicked thread, or of the thread of the last stop.
  function renderStack(cur) {
    if (state.stackVM !== state.vm) { state.stackVM = state.vm; state.stackKey = ""; }
    if (state.stackKey) return; // a clicked thread: fetched on click and on each snapshot below
    showStack(cur);
  }
  function showStack(st) {
    const box = $("stackbox");
    if (!st || !st.frames) { box.hidden = true; return; }
    box.hidden = false;
    $("stack-name").textContent = (st.name || st.thread) + (state.stackKey ? "" : " (thread of the last stop)");
    $("stack-note").textContent = st.note ? "· " + st.note : "";
    const ol = $("stack");
    ol.textContent = "";
    if (!st.frames.length) ol.appendChild(el("li", "muted", "no frames known"));
    for (const f of st.frames) {
      const li = el("li");
      const where = f.class || f.method ? (f.class || "class " + f.class_id) + "." + (f.method || "method " + f.method_id) : "class " + f.class_id + ", method " + f.method_id;
      li.appendChild(el("span", "m", where));
      const at = f.line >= 0 ? (f.source ? f.source + ":" : "line ") + f.line : f.line === -2 ? "native" : "code index " + (f.index || 0);
      li.appendChild(el("span", "muted", " " + at));
      ol.appendChild(li);
    }
  }
  function fetchStack() {
    if (!state.stackKey || !state.vm) return;
    const key = state.stackKey, vm = state.vm;
    fetch("api/v1/vms/" + encodeURIComponent(vm) + "/threads/" + encodeURIComponent(key) + "/stack")
      .then((r) => r.ok ? r.json() : r.json().then((e) => ({ thread: key, note: e.error, frames: [] })))
      .then((st) => { if (state.stackKey === key && state.vm === vm) showStack(st); })
      .catch(() => {});
  }
  $("threads").addEventListener("click", (ev) => {
    const tr = ev.target.closest("tr");
    if (!tr || !tr.dataset.key) return;
    state.stackKey = state.stackKey === tr.dataset.key ? "" : tr.dataset.key;
    for (const r of state.threadRows.values()) r.tr.classList.toggle("sel", r.tr.dataset.key === state.stackKey);
    if (state.stackKey) fetchStack(); else renderStack(((state.snap || {}).stacks || {})[state.vm]);
  });

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
  // A VM that speaks no DDM has no heap picture to ask for: say so instead
  // of offering a request; one that ignored heap requests says that.
  function renderHeapMode(vm) {
    const mode = vm ? vm.heap || "ddm" : "none";
    $("heap-request").hidden = mode !== "ddm";
    $("heap-body").hidden = mode === "none";
    $("heap-note").textContent = vm && vm.heap_note ? vm.heap_note + "." : "";
    $("heapcard").dataset.heap = mode;
    document.body.classList.toggle("noheap", mode === "none");
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
      hi.appendChild(el("span", "muted", $("heapcard").dataset.heap === "ddm" ?
        "No heap picture yet: press \u201crequest heap\u201d (the VM then collects garbage and sends its summary and map)." : "No heap summary (HPIF)."));
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
    state.vm = ev.target.value; state.firstThreads = true; state.heapKey = ""; state.stackKey = "";
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
  applyInitial();
  connect();
})();
