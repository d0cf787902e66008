package web

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// TestSessionTracker runs one relay session: the debugger resumes, the VM
// stops (an event), the debugger asks two questions and gets answers. The
// tracker lists the session with its traffic and times one step.
func TestSessionTracker(t *testing.T) {
	tr := NewSessionTracker()
	dbgConn, dbgProxy := net.Pipe()
	vmProxy, vmConn := net.Pipe()
	srv := relay.NewServer(relay.Config{
		DialVM:   relay.Plain(func(context.Context) (net.Conn, error) { return vmProxy, nil }),
		Logger:   zerolog.Nop(),
		NewHooks: func(*relay.Session) relay.Hooks { return relay.Hooks{Observers: []relay.Observer{tr}} },
	})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- srv.ServeConn(ctx, dbgProxy) }()

	// The VM: answer the handshake, then every command; after the resume,
	// send a stop event first.
	vmDone := make(chan error, 1)
	go func() {
		vmDone <- func() error {
			if err := jdwp.ReadHandshake(vmConn); err != nil {
				return err
			}
			if err := jdwp.WriteHandshake(vmConn); err != nil {
				return err
			}
			r := jdwp.NewReader(vmConn, 1<<20)
			for {
				p, err := r.Next()
				if err != nil {
					return nil // the session ended
				}
				if _, err := vmConn.Write(jdwp.AppendReply(nil, p.ID(), 0, []byte{1, 2, 3})); err != nil {
					return err
				}
				if p.Cmd() == jdwp.CmdVirtualMachineResume {
					if _, err := vmConn.Write(jdwp.AppendCommand(nil, 0x20000001, jdwp.CmdComposite, []byte{2, 0, 0, 0, 0})); err != nil {
						return err
					}
				}
			}
		}()
	}()

	// Before the debugger's handshake no session can have started; after
	// it, one may have at any moment.
	if ss := tr.Sessions(); len(ss) != 0 {
		t.Fatalf("sessions before start: %+v", ss)
	}
	if err := jdwp.WriteHandshake(dbgConn); err != nil {
		t.Fatal(err)
	}
	if err := jdwp.ReadHandshake(dbgConn); err != nil {
		t.Fatal(err)
	}
	r := jdwp.NewReader(dbgConn, 1<<20)
	next := func() jdwp.Packet {
		t.Helper()
		p, err := r.Next()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	send := func(id uint32, c jdwp.Cmd) {
		t.Helper()
		if _, err := dbgConn.Write(jdwp.AppendCommand(nil, id, c, nil)); err != nil {
			t.Fatal(err)
		}
	}
	send(1, jdwp.CmdVirtualMachineResume)
	if p := next(); !p.IsReply() || p.ID() != 1 {
		t.Fatalf("want the resume reply, got %v", p)
	}
	if p := next(); p.Cmd() != jdwp.CmdComposite {
		t.Fatalf("want the stop event, got %v", p)
	}
	send(2, jdwp.Cmd{Set: 11, Cmd: 6}) // ThreadReference.Frames
	next()
	send(3, jdwp.Cmd{Set: 16, Cmd: 1}) // StackFrame.GetValues
	next()

	ss := tr.Sessions()
	if len(ss) != 1 || ss[0].Packets != 7 || !ss[0].Ended.IsZero() || ss[0].VM == "" {
		t.Fatalf("sessions = %+v", ss)
	}
	var a AccelStats
	tr.AddSteps(&a)
	if a.Steps != 0 {
		t.Fatalf("step counted before the debugger went quiet: %+v", a)
	}
	tr.mu.Lock()
	tr.now = func() time.Time { return time.Now().Add(time.Hour) } // long quiet
	tr.mu.Unlock()
	tr.AddSteps(&a)
	if a.Steps != 1 || len(a.RecentSteps) != 1 || a.RecentSteps[0] <= 0 || a.StepLatency.P50 != a.RecentSteps[0] {
		t.Fatalf("steps = %+v", a)
	}

	dbgConn.Close()
	if err := <-done; err != nil {
		t.Logf("session ended with %v", err)
	}
	if err := <-vmDone; err != nil {
		t.Fatal(err)
	}
	ss = tr.Sessions()
	if len(ss) != 1 || ss[0].Ended.IsZero() {
		t.Fatalf("after the end: %+v", ss)
	}
}

func TestAccelFromGatherer(t *testing.T) {
	reg := prometheus.NewRegistry()
	if a := AccelFromGatherer(reg); a.Enabled || a.Hits != 0 {
		t.Fatalf("empty registry: %+v", a)
	}
	req := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jdwpaccel_cache_requests_total", Help: "h"}, []string{"result"})
	spec := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "jdwpaccel_speculative_commands_total", Help: "h"}, []string{"outcome"})
	reg.MustRegister(req, spec)
	req.WithLabelValues("hit").Add(10)
	req.WithLabelValues("miss").Add(3)
	req.WithLabelValues("belay").Add(2)
	spec.WithLabelValues("sent").Add(20)
	spec.WithLabelValues("wasted").Add(4)
	a := AccelFromGatherer(reg)
	if !a.Enabled || a.Hits != 10 || a.Misses != 3 || a.Belays != 2 || a.Wasted != 4 || a.RoundTripsSaved != 12 {
		t.Fatalf("accel = %+v", a)
	}
}
