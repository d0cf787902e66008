// Package web owns jdwpaccel's live monitor: the HTTP surface that serves
// the page at /, its JSON API under /api/v1, a server-sent event stream of
// snapshots, each VM's live event stream (package feed's history, with
// WithFeed), and the Prometheus /metrics endpoint.
//
// The page (embedded from assets/, plain HTML, CSS and JavaScript, no
// network dependencies) shows the VMs and debuggers, a live thread table
// (from DDM, or for VMs without DDM from the debugger's own conversation,
// read by package convo) with stacks, the heap as DDMS drew it (segment map
// coloured by kind, per-kind statistics, a size histogram) and the
// accelerator's figures with a chart of real steps and where their time
// went. The page embeds its first snapshot and renders it as it loads.
//
// The handler reads a [Source] of plain view-model structs; the adapters
// here (SessionTracker, DDMSource) build one from the relay, the DDM tap
// and the speculator's metrics. The tests feed it a made-up app
// (FakeSource, in fake_test.go).
//
//	h := web.NewHandler(src, reg, log)
//	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: web.Guard(h, "127.0.0.1:8080")}
//
// [Guard] keeps other web sites out: it answers only requests addressed to
// localhost (or the listen address), refuses cross-origin state changes,
// and forbids framing.
package web
