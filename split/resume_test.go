package split

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/rs/zerolog"
)

// resumeRig is one resumable session: a debugger attached to a near end
// that reaches a far end through a faultHop, in front of a scripted VM
// that echoes each command's body in its reply.
type resumeRig struct {
	v       *vmSide
	f       *farEnd
	hop     *faultHop
	near    string
	nearLog *jdwptest.Buffer
	d       *jdwptest.Debugger
}

// testLinkTimeoutResume is the link timeout of the resume tests that
// stall the link.
const testLinkTimeoutResume = time.Second

func newResumeRig(t *testing.T, within time.Duration, fc FarConfig, nc NearConfig) *resumeRig {
	t.Helper()
	r := &resumeRig{nearLog: &jdwptest.Buffer{}}
	r.v = &vmSide{
		vm: jdwptest.StartVM(t, jdwptest.Script{Default: func(p jdwp.Packet) (jdwp.ErrorCode, []byte) {
			return jdwp.ErrorNone, bytes.Clone(p.Body())
		}}),
		closed: make(chan struct{}, 16),
	}
	fc.ResumeWithin = within
	r.f = startFar(t, r.v, "127.0.0.1:0", fc)
	r.hop = newFaultHop(t, r.f.addr)
	nc.Addr, nc.ResumeWithin, nc.Logger = r.hop.addr(), within, zerolog.New(r.nearLog)
	var hooks = NearHeartbeat(nc.LinkTimeout, nc.Link)
	if !nc.Heartbeat {
		hooks = nil
	}
	r.near = startNearHooks(t, nc, hooks)
	d, err := jdwptest.Attach(r.near)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	r.d = d
	r.echo(t, []byte("first"))
	return r
}

// echo sends a command with body through the session and checks that its
// reply comes back with the same body.
func (r *resumeRig) echo(t *testing.T, body []byte) {
	t.Helper()
	p, err := r.d.Call(jdwp.Cmd{Set: 64, Cmd: 1}, body)
	if err != nil {
		t.Fatalf("command through the session: %v\nnear log:\n%s\nfar log:\n%s", err, r.nearLog, r.f.log)
	}
	if !bytes.Equal(p.Body(), body) {
		t.Fatalf("reply body of %d bytes, want the %d sent", len(p.Body()), len(body))
	}
}

// attachAgain checks that a new debugger session works through the near
// end.
func (r *resumeRig) attachAgain(t *testing.T) {
	t.Helper()
	d, err := jdwptest.Attach(r.near)
	if err != nil {
		t.Fatalf("attach again: %v", err)
	}
	defer d.Close()
	p, err := d.Call(jdwp.Cmd{Set: 64, Cmd: 1}, []byte("again"))
	if err != nil || string(p.Body()) != "again" {
		t.Fatalf("a new session: %v, %v\nnear log:\n%s", p, err, r.nearLog)
	}
}

// held returns the far end's only resumable session.
func (r *resumeRig) held(t *testing.T) *stream {
	t.Helper()
	r.f.far.mu.Lock()
	defer r.f.far.mu.Unlock()
	if len(r.f.far.sessions) != 1 {
		t.Fatalf("the far end holds %d resumable sessions, want 1", len(r.f.far.sessions))
	}
	for _, st := range r.f.far.sessions {
		return st.st
	}
	return nil
}

// waitLost waits until both ends noticed that the link is gone.
func (r *resumeRig) waitLost(t *testing.T, losses int) {
	t.Helper()
	for _, end := range []struct {
		name string
		log  *jdwptest.Buffer
	}{{"near", r.nearLog}, {"far", r.f.log}} {
		jdwptest.Await(t, "the "+end.name+" end to notice the link loss", end.log.Changed, func() (bool, string) {
			n := strings.Count(end.log.String(), "the link to the other end was lost")
			return n >= losses, fmt.Sprintf("%d losses logged", n)
		})
	}
}

// noVMReset checks that the far end dialled the VM once and kept it.
func (r *resumeRig) noVMReset(t *testing.T) {
	t.Helper()
	if n := r.v.dials.Load(); n != 1 {
		t.Errorf("the far end dialled the VM %d times, want 1", n)
	}
	select {
	case <-r.v.closed:
		t.Errorf("the far end closed its VM connection")
	default:
	}
}

func pattern(n int, seed byte) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = seed + byte(i*7)
	}
	return b
}

// TestResumeAfterDrop: the link dies mid-session and stays dead for a
// while; the debugger's commands sent meanwhile and the VM's event wait,
// and once the link is back the conversation goes on byte for byte: each
// reply has its command's body, the event arrives as sent, the VM saw each
// command once, and the far end never dropped its VM connection.
func TestResumeAfterDrop(t *testing.T) {
	resumeAfterDrop(t, newResumeRig(t, 30*time.Second, FarConfig{}, NearConfig{}))
}

func resumeAfterDrop(t *testing.T, r *resumeRig) {
	r.hop.setDown(true)
	r.hop.drop()
	bodies := [][]byte{[]byte("during"), pattern(100<<10, 1), pattern(300<<10, 2)}
	ids := map[uint32][]byte{}
	for _, b := range bodies {
		id, err := r.d.Send(jdwp.Cmd{Set: 64, Cmd: 1}, b)
		if err != nil {
			t.Fatal(err)
		}
		ids[id] = b
	}
	event := jdwp.AppendCommand(nil, 77, jdwp.CmdEventComposite, append([]byte{byte(jdwp.SuspendAll), 0, 0, 0, 1}, pattern(200<<10, 3)...))
	if err := r.v.vm.Send(event); err != nil {
		t.Fatal(err)
	}
	r.waitLost(t, 1)
	r.hop.setDown(false)
	gotEvent := false
	for range len(bodies) + 1 {
		p, err := r.d.Next()
		if err != nil {
			t.Fatalf("after the link came back: %v\nnear log:\n%s\nfar log:\n%s", err, r.nearLog, r.f.log)
		}
		if p.IsReply() {
			want, ok := ids[p.ID()]
			if !ok || !bytes.Equal(p.Body(), want) {
				t.Errorf("reply %d: %d bytes, not its command's body", p.ID(), len(p.Body()))
			}
			delete(ids, p.ID())
			continue
		}
		gotEvent = true
		if !bytes.Equal(p, event) {
			t.Errorf("the event changed on its way: %d bytes, want %d", len(p), len(event))
		}
	}
	if !gotEvent || len(ids) > 0 {
		t.Errorf("event delivered: %v; commands unanswered: %d", gotEvent, len(ids))
	}
	seen := 0
	for _, c := range r.v.vm.Commands() {
		if c.Cmd() == (jdwp.Cmd{Set: 64, Cmd: 1}) {
			seen++
		}
	}
	if seen != len(bodies)+1 {
		t.Errorf("the VM got %d echo commands, want %d (each once)", seen, len(bodies)+1)
	}
	r.echo(t, []byte("after"))
	r.noVMReset(t)
	for _, want := range []string{"the link came back; the session goes on"} {
		if !strings.Contains(r.nearLog.String(), want) {
			t.Errorf("near log lacks %q:\n%s", want, r.nearLog)
		}
	}
	if !strings.Contains(r.f.log.String(), "the near end took the session up again") {
		t.Errorf("far log lacks the resume:\n%s", r.f.log)
	}
}

// TestResumeTenDrops: ten drops in a row, each while a command is in
// flight, and the session goes on after each.
func TestResumeTenDrops(t *testing.T) {
	resumeTenDrops(t, newResumeRig(t, 30*time.Second, FarConfig{}, NearConfig{}))
}

func resumeTenDrops(t *testing.T, r *resumeRig) {
	for i := range 10 {
		body := pattern(1000+i*5000, byte(i))
		id, err := r.d.Send(jdwp.Cmd{Set: 64, Cmd: 1}, body)
		if err != nil {
			t.Fatal(err)
		}
		r.hop.drop()
		p, err := r.d.Next()
		if err != nil {
			t.Fatalf("drop %d: %v\nnear log:\n%s", i+1, err, r.nearLog)
		}
		if p.ID() != id || !bytes.Equal(p.Body(), body) {
			t.Fatalf("drop %d: reply %d of %d bytes, want %d of %d", i+1, p.ID(), len(p.Body()), id, len(body))
		}
	}
	r.echo(t, []byte("after ten drops"))
	r.noVMReset(t)
	if n := r.hop.accepted(); n < 2 {
		t.Errorf("the hop carried %d link connections: the drops did not drop", n)
	}
}

// TestResumeAfterStall: the hop stops forwarding (a hung tunnel, its TCP
// connections open) for longer than the link timeout, so both ends give
// the link up and the near end dials again through the stalled hop; once
// it forwards again the session goes on.
func TestResumeAfterStall(t *testing.T) {
	r := newResumeRig(t, 30*time.Second, FarConfig{LinkTimeout: testLinkTimeoutResume},
		NearConfig{LinkTimeout: testLinkTimeoutResume, Heartbeat: true})
	r.hop.stall()
	id, err := r.d.Send(jdwp.Cmd{Set: 64, Cmd: 1}, []byte("stalled"))
	if err != nil {
		t.Fatal(err)
	}
	r.waitLost(t, 1)
	r.hop.unstall()
	p, err := r.d.Next()
	if err != nil || p.ID() != id || string(p.Body()) != "stalled" {
		t.Fatalf("after the stall: %v, %v\nnear log:\n%s\nfar log:\n%s", p, err, r.nearLog, r.f.log)
	}
	r.echo(t, []byte("after"))
	r.noVMReset(t)
}

// TestResumeExpires: a link gone for longer than the grace period ends the
// session on both ends, each with a line saying why; the far end closes
// its VM connection (the VM resets as after a detach) and the next attach
// works.
func TestResumeExpires(t *testing.T) {
	r := newResumeRig(t, time.Second, FarConfig{}, NearConfig{})
	r.hop.setDown(true)
	r.hop.drop()
	if err := r.d.WaitClosed(); err != nil {
		t.Errorf("the debugger's connection: %v", err)
	}
	select {
	case <-r.v.closed:
	case <-time.After(jdwptest.Timeout):
		t.Fatalf("the far end kept its VM connection past the grace; log:\n%s", r.f.log)
	}
	for name, log := range map[string]*jdwptest.Buffer{"near": r.nearLog, "far": r.f.log} {
		jdwptest.Await(t, "the "+name+" end to log why the session ended", log.Changed, func() (bool, string) {
			return strings.Contains(log.String(), "did not come back within the grace period"), log.String()
		})
	}
	r.hop.setDown(false)
	r.attachAgain(t)
}

// reconnectHello dials the far end directly with a reconnect hello and
// returns its reply.
func reconnectHello(t *testing.T, addr string, token []byte, res Resume) Reply {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(jdwptest.Timeout))
	if _, err := c.Write(AppendHello(nil, Hello{Version: ProtocolVersion, Flags: FlagReconnect, Token: token, Resume: res})); err != nil {
		t.Fatal(err)
	}
	rep, err := ReadReply(c)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// TestResumeStrangers: someone who holds the token and the session's ID
// but not its secret cannot take the session over, whether its link is up
// or down; nor can a reconnect with a stale sequence number (a replay of
// an old one, or a near end that lost its state) even with the secret.
// Each is refused with its reason logged, and the session goes on with
// its own near end.
func TestResumeStrangers(t *testing.T) {
	token := []byte("0123456789abcdef0123")
	r := newResumeRig(t, 30*time.Second, FarConfig{Token: token}, NearConfig{Token: token})
	r.echo(t, pattern(50<<10, 9)) // the far end's bytes are acknowledged from here on
	st := r.held(t)
	st.mu.Lock()
	id, secret, acked := st.id, st.secret, st.outBase
	st.mu.Unlock()
	if acked == 0 {
		t.Fatal("the near end acknowledged nothing: a stale number cannot be told")
	}
	wrong := secret
	wrong[0] ^= 1
	check := func(what string, res Resume, want Status) {
		t.Helper()
		if rep := reconnectHello(t, r.f.addr, token, res); rep.Status != want {
			t.Errorf("%s: status %v, want %v", what, rep.Status, want)
		}
	}
	check("no secret, link up", Resume{Session: id, Received: acked}, StatusRefused)
	check("a wrong secret, link up", Resume{Session: id, Secret: wrong, Received: acked}, StatusRefused)
	check("the secret, a stale sequence number", Resume{Session: id, Secret: secret, Received: acked - 1}, StatusRefused)
	check("the secret, a sequence number never sent", Resume{Session: id, Secret: secret, Received: 1 << 40}, StatusRefused)
	check("an unknown session", Resume{Secret: secret}, StatusGone)
	if rep := reconnectHello(t, r.f.addr, nil, Resume{Session: id, Secret: secret, Received: acked}); rep.Status != StatusUnauthorized {
		t.Errorf("the secret without the token: status %v, want unauthorized", rep.Status)
	}
	r.echo(t, []byte("still mine"))

	r.hop.setDown(true)
	r.hop.drop()
	r.waitLost(t, 1)
	check("no secret, link down", Resume{Session: id, Received: acked}, StatusRefused)
	r.hop.setDown(false)
	r.echo(t, []byte("mine again"))
	r.noVMReset(t)
	if n := r.f.count(OutcomeResumeRefused); n != 6 {
		t.Errorf("%v reconnects counted as refused, want 6", n)
	}
	// Refusals are logged once per host and minute: the first one.
	if !strings.Contains(r.f.log.String(), "wrong session secret") {
		t.Errorf("far log lacks why:\n%s", r.f.log)
	}
}

// TestResumeFarRestarted: the far end restarts while the link is down (it
// crashed: its session, and the VM's debugging state, are gone); the near
// end's reconnect learns that the far end does not hold the session, and
// ends the debugger's session with a line that says so.
func TestResumeFarRestarted(t *testing.T) {
	r := newResumeRig(t, 30*time.Second, FarConfig{}, NearConfig{})
	r.hop.setDown(true)
	r.hop.drop()
	r.waitLost(t, 1)
	r.f.stop()
	select {
	case <-r.v.closed:
	case <-time.After(jdwptest.Timeout):
		t.Fatal("the stopped far end kept its VM connection")
	}
	f2 := startFar(t, r.v, "127.0.0.1:0", FarConfig{ResumeWithin: 30 * time.Second})
	r.hop.setTarget(f2.addr)
	r.hop.setDown(false)
	if err := r.d.WaitClosed(); err != nil {
		t.Errorf("the debugger's connection: %v", err)
	}
	jdwptest.Await(t, "the near end to say why", r.nearLog.Changed, func() (bool, string) {
		return strings.Contains(r.nearLog.String(), "does not hold the session"), r.nearLog.String()
	})
	r.attachAgain(t)
}

// TestResumeFarShutdown: a far end that shuts down cleanly ends its
// sessions at once on the near end too, without waiting for a grace.
func TestResumeFarShutdown(t *testing.T) {
	r := newResumeRig(t, 30*time.Second, FarConfig{}, NearConfig{})
	r.f.stop()
	start := time.Now()
	if err := r.d.WaitClosed(); err != nil {
		t.Errorf("the debugger's connection: %v", err)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the near end took %v to end the session", d)
	}
	if strings.Contains(r.nearLog.String(), "the link to the other end was lost") {
		t.Errorf("the near end waited for a link after the far end ended the session:\n%s", r.nearLog)
	}
}

// TestResumeNotAgreed: a far end that does not agree (--resume-within 0)
// and a near end that does not offer it keep today's stream: the session
// ends with its link.
func TestResumeNotAgreed(t *testing.T) {
	for _, tc := range []struct {
		name       string
		far, near  time.Duration
		wantFramed bool
	}{{"far refuses", 0, time.Minute, false}, {"near does not offer", time.Minute, 0, false}, {"both", time.Minute, time.Minute, true}} {
		t.Run(tc.name, func(t *testing.T) {
			v := newVMSide(t)
			f := startFar(t, v, "127.0.0.1:0", FarConfig{ResumeWithin: tc.far})
			c, err := Dialer(NearConfig{Addr: f.addr, ResumeWithin: tc.near})(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Conn.Close()
			_, framed := c.Conn.(*stream)
			if framed != tc.wantFramed || c.Info.Resumable != tc.wantFramed {
				t.Errorf("framed %v, agreed %v; want %v", framed, c.Info.Resumable, tc.wantFramed)
			}
		})
	}
}

// TestResumeBufferBound: what one end has to send while the link is down
// is bounded; past the bound the session ends, saying so, instead of
// dropping anything.
func TestResumeBufferBound(t *testing.T) {
	r := newResumeRig(t, 30*time.Second, FarConfig{ResumeBuffer: 64 << 10}, NearConfig{})
	r.hop.setDown(true)
	r.hop.drop()
	r.waitLost(t, 1)
	if err := r.v.vm.Send(jdwp.AppendCommand(nil, 78, jdwp.CmdEventComposite, pattern(100<<10, 4))); err != nil {
		t.Fatal(err)
	}
	select {
	case <-r.v.closed:
	case <-time.After(jdwptest.Timeout):
		t.Fatalf("the far end held more than its bound; log:\n%s", r.f.log)
	}
	if !strings.Contains(r.f.log.String(), "more to send while the link was down than this end keeps") {
		t.Errorf("far log lacks why:\n%s", r.f.log)
	}
}

// TestResumeOverTLS: a session over TLS with a pinned client certificate
// resumes over a new TLS connection, each with its own handshake.
func TestResumeOverTLS(t *testing.T) {
	farCert, farDER := selfSigned(t, "far")
	nearCert, nearDER := selfSigned(t, "near")
	r := newResumeRig(t, 30*time.Second, FarConfig{TLS: ServerTLS(farCert, nearDER)}, NearConfig{TLS: ClientTLS(farDER, &nearCert)})
	for i := range 3 {
		id, err := r.d.Send(jdwp.Cmd{Set: 64, Cmd: 1}, pattern(20<<10, byte(i)))
		if err != nil {
			t.Fatal(err)
		}
		r.hop.drop()
		p, err := r.d.Next()
		if err != nil || p.ID() != id || !bytes.Equal(p.Body(), pattern(20<<10, byte(i))) {
			t.Fatalf("drop %d: %v, %v\nnear log:\n%s", i+1, p, err, r.nearLog)
		}
	}
	r.noVMReset(t)
	if n := r.f.count(OutcomeResumed); n < 1 {
		t.Errorf("%v resumes counted", n)
	}
}

// TestResumeFarewell: a debugger that leaves while the link is down ends
// its session on the near end at once; the near end goes on dialling and,
// once the link is back, tells the far end, which detaches from the VM
// then rather than when its grace passes.
func TestResumeFarewell(t *testing.T) {
	r := newResumeRig(t, time.Hour, FarConfig{}, NearConfig{})
	r.hop.setDown(true)
	r.hop.drop()
	r.waitLost(t, 1)
	r.d.Close()
	jdwptest.Await(t, "the near end to end the session", r.nearLog.Changed, func() (bool, string) {
		return strings.Contains(r.nearLog.String(), "telling the far end once the link is back"), r.nearLog.String()
	})
	select {
	case <-r.v.closed:
		t.Fatal("the far end closed its VM connection while the link was down")
	default:
	}
	r.hop.setDown(false)
	select {
	case <-r.v.closed:
	case <-time.After(jdwptest.Timeout):
		t.Fatalf("the far end kept its VM connection after the link came back\nnear log:\n%s\nfar log:\n%s", r.nearLog, r.f.log)
	}
	r.attachAgain(t)
}

// TestResumeOtherUser: a near end of another named user, holding the
// session's ID and secret, cannot take the session up: only the user who
// opened it may.
func TestResumeOtherUser(t *testing.T) {
	alice, bob := []byte("alice-token-0123456789"), []byte("bob-token-0123456789ab")
	users := &Users{}
	if err := users.AddToken("alice", alice); err != nil {
		t.Fatal(err)
	}
	if err := users.AddToken("bob", bob); err != nil {
		t.Fatal(err)
	}
	r := newResumeRig(t, 30*time.Second, FarConfig{Users: users}, NearConfig{Token: alice})
	r.echo(t, pattern(10<<10, 3))
	st := r.held(t)
	st.mu.Lock()
	id, secret, acked := st.id, st.secret, st.outBase
	st.mu.Unlock()
	if rep := reconnectHello(t, r.f.addr, bob, Resume{Session: id, Secret: secret, Received: acked}); rep.Status != StatusRefused {
		t.Errorf("bob with alice's session secret: status %v, want refused", rep.Status)
	}
	r.echo(t, []byte("still alice's"))
	r.noVMReset(t)
}
