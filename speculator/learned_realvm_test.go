package speculator

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// TestRealVMLearnedTemplates steps a JDK 17 VM with the IntelliJ-like and
// the java-debug-like JDI clients through the proxy: the learned rules
// learn, with no rule about either client, that it reads the fields of
// each object local and (IntelliJ-like: its threads view) the name of each
// thread AllThreads lists, and from the third stop its replay
// names at least 90% of what the client reads before it reads it (the
// rules written for IDEs fetch most of it first: the replay then sends
// nothing of its own), with the same digests as a direct session.
func TestRealVMLearnedTemplates(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	for _, c := range []struct {
		profile   string
		wantNames bool
	}{{javavm.ProfileIdeaLike, true}, {javavm.ProfileVSCodeLike, false}} {
		t.Run(c.profile, func(t *testing.T) { learnedTemplates(t, b, c.profile, c.wantNames) })
	}
}

func learnedTemplates(t *testing.T, b *javavm.Build, profile string, wantNames bool) {
	opts := javavm.DriverOptions{Debuggee: javavm.Deep, Profile: profile, Steps: 6}
	direct, _, err := runDriver(t, b, opts, -1, Config{})
	if err != nil {
		t.Fatal(err)
	}
	vm := jdwptest.StartJava(t, b, opts.Debuggee)
	sp := New(Config{MinRTT: -1}, zerolog.Nop(), nil)
	var mu sync.Mutex
	var sess *Session
	srv := relay.NewServer(relay.Config{DialVM: relay.DialTCP(vm.Addr()), Logger: zerolog.Nop(),
		NewHooks: func(rs *relay.Session) relay.Hooks {
			s := sp.NewTapped(rs, ModeAdaptive, nil)
			mu.Lock()
			sess = s
			mu.Unlock()
			return relay.Hooks{Interceptors: []relay.Interceptor{s.Interceptor()}}
		}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan struct{})
	go func() {
		srv.Serve(ctx, ln)
		close(done)
	}()
	defer func() {
		cancel()
		<-done
	}()
	opts.Addr = ln.Addr().String()
	res, err := javavm.RunDriver(ctx, b, opts)
	if err != nil {
		t.Fatalf("%v\nVM output:\n%s", err, vm.Output())
	}
	if d, p := strings.Join(direct.Digests(), ","), strings.Join(res.Digests(), ","); d != p {
		t.Errorf("digests through the proxy %s, direct %s", p, d)
	}
	mu.Lock()
	ss := sess.ss
	mu.Unlock()
	ss.mu.Lock()
	defer ss.mu.Unlock()
	var names, fields bool
	for _, g := range ss.lrn.graphs {
		for _, n := range g.nodes {
			if n.seen == 0 || n.from == nil {
				continue
			}
			lp := n.listParam()
			switch {
			case n.cmd.String() == "ThreadReference.Name" && n.from.cmd.String() == "VirtualMachine.AllThreads":
				names = lp != nil && lp.all
			case n.cmd.String() == "ObjectReference.GetValues" && n.from.cmd.String() == "StackFrame.GetValues":
				fields = true
			}
		}
	}
	if wantNames && !names || !fields {
		t.Errorf("learned each thread's name from AllThreads: %v; object locals' fields from the frame's values: %v", names, fields)
	}
	lr := &ss.lrn
	t.Logf("learned templates: %d of the client's %d reads from the third stop named before asked; speculation sent %d, used %d",
		lr.predicted, lr.asks, lr.sent, lr.used)
	if lr.asks == 0 || float64(lr.predicted) < 0.9*float64(lr.asks) {
		t.Errorf("the learned templates named %d of the client's %d reads before it asked, want at least 90%%", lr.predicted, lr.asks)
	}
}
