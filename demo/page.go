// Package demo owns what "jdwpaccel demo" shows besides the benchmark's
// comparison: the live page's source (Page: the demo's real JVM, a
// simulated DDM VM, each run's sessions and figures), the fake Android VM
// that feeds the page's DDM views, the kept setup for the user's IDE
// (Keep) and the instructions to attach one (PrintAttachHelp). The command
// in cmd/jdwpaccel wires them to its proxy stack.
package demo

import (
	"slices"
	"sync"

	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/jdwpaccel/jdwpaccel/web"
	"github.com/jdwpaccel/jdwpaccel/web/convo"
)

// JVMID is the page's ID of the demo's real debuggee JVM.
const JVMID = "deep-jvm"

// FakeAppName names the fake DDM VM that feeds the page's thread and heap
// views: it is not the demo's debuggee, and says so.
const FakeAppName = "simulated (fake DDM VM) com.example.demo"

// Page is the live page's source for the demo. The demo runs twice
// through one speculator: the comparison, then (with --keep) the VM kept
// for the user's IDE. The page shows the demo's real JVM first, then the
// simulated DDM VM; the accelerator's figures of the current run only; and
// every run's sessions, numbered across runs (each run has its own relay
// server, which numbers its sessions from 1).
type Page struct {
	*web.DDMSource // the VMs, threads, stacks and heap (its Served is p.served)
	spec           *speculator.Speculator
	convo          *convo.Watcher // the debuggee's threads, from the runs' conversations

	mu   sync.Mutex // guards runs
	runs []*run     // the current run last
}

// run is one run's figures.
type run struct {
	label   string
	tracker *web.SessionTracker
	base    speculator.Stats // the speculator's counters when the run started
	offset  uint64           // added to the run's session IDs

	mu     sync.Mutex // guards vmAddr
	vmAddr string     // where the run's latest session reached the VM
}

// NewPage returns the page's source over ddm (the simulated VM's
// monitors), whose Served, Conversation and SessionsFunc it sets, and spec
// (nil: no accelerator figures).
func NewPage(ddm *web.DDMSource, spec *speculator.Speculator) *Page {
	p := &Page{DDMSource: ddm, spec: spec, convo: convo.NewWatcher(func(*relay.Session) string { return JVMID })}
	ddm.Served = p.served
	ddm.Conversation = p.convo
	ddm.SessionsFunc = p.Sessions
	return p
}

// StartRun begins a run labelled label and returns the relay hooks for its
// sessions: the speculator and the run's session tracker.
func (p *Page) StartRun(label string) func(*relay.Session) relay.Hooks {
	r := &run{label: label, tracker: web.NewSessionTracker()}
	if p.spec != nil {
		r.base = p.spec.Stats()
	}
	r.tracker.VMOf = func(s *relay.Session) string {
		if a := s.VMAddr(); a != nil {
			r.mu.Lock()
			r.vmAddr = a.String()
			r.mu.Unlock()
		}
		return JVMID
	}
	p.mu.Lock()
	for _, prev := range p.runs {
		for _, s := range prev.tracker.Sessions() {
			r.offset = max(r.offset, s.ID+prev.offset)
		}
	}
	p.runs = append(p.runs, r)
	p.mu.Unlock()
	return func(s *relay.Session) relay.Hooks {
		h := relay.Hooks{Observers: []relay.Observer{r.tracker, p.convo}}
		if p.spec != nil {
			h.Interceptors = []relay.Interceptor{p.spec.NewSession(s)}
		}
		return h
	}
}

func (p *Page) current() *run {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.runs) == 0 {
		return nil
	}
	return p.runs[len(p.runs)-1]
}

// served lists the demo's JVM, then the simulated VM (DDMSource.Served).
func (p *Page) served() []web.VM {
	jvm := web.VM{
		ID: JVMID, App: "Deep (OpenJDK), the demo's debuggee", Kind: "demo",
		Status: "HotSpot speaks no DDM: its threads come from the debugger's own conversation; the simulated VM (in the VM menu) shows the DDM thread and heap views",
	}
	if r := p.current(); r != nil {
		jvm.App += ": " + r.label
		r.mu.Lock()
		jvm.Addr = r.vmAddr
		r.mu.Unlock()
	}
	out := []web.VM{jvm}
	if p.Monitors != nil {
		for _, m := range p.Monitors() {
			out = append(out, web.VM{ID: m.Name(), Kind: "fake", Simulated: true, Status: "simulated: a fake Android VM served by the demo, not the debuggee"})
		}
	}
	return out
}

// Accel implements web.Source: the current run's figures.
func (p *Page) Accel() web.AccelStats {
	r := p.current()
	var a web.AccelStats
	if p.spec != nil {
		var base speculator.Stats
		if r != nil {
			base = r.base
		}
		a = web.AccelFromStats(p.spec.Stats().Since(base))
	}
	if r == nil {
		return a
	}
	r.tracker.AddSteps(&a)
	a.Run = r.label
	return a
}

// Sessions implements web.Source: the current run's sessions first, each
// numbered across runs.
func (p *Page) Sessions() []web.Session {
	p.mu.Lock()
	runs := slices.Clone(p.runs)
	p.mu.Unlock()
	var out []web.Session
	for _, r := range slices.Backward(runs) {
		for _, s := range r.tracker.Sessions() {
			s.ID += r.offset
			s.Run = r.label
			out = append(out, s)
		}
	}
	return out
}
