// Package web owns jdwpaccel's live monitor: the HTTP surface that serves
// the page at /, its JSON API under /api/v1, a server-sent event stream of
// snapshots, and the Prometheus /metrics endpoint.
//
// The page (embedded from assets/, plain HTML, CSS and JavaScript, no
// network dependencies) shows the connected VMs and debuggers, a live DDM
// thread table, the heap as DDMS drew it (segment map coloured by kind,
// per-kind statistics, a size histogram) and the accelerator's figures with
// a chart of step latency.
//
// The package depends on no other jdwpaccel package: it reads a [Source] of
// plain view-model structs, which the command adapts from the relay, the DDM
// tap and the speculator. The tests feed it a made-up app (FakeSource, in
// fake_test.go).
//
//	h := web.NewHandler(src, reg, log)
//	srv := &http.Server{Addr: "127.0.0.1:8080", Handler: web.Guard(h, "127.0.0.1:8080")}
//
// [Guard] keeps other web sites out: it answers only requests addressed to
// localhost (or the listen address), refuses cross-origin state changes,
// and forbids framing.
package web
