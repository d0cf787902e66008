package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdbtest"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/journal"
	"github.com/jdwpaccel/jdwpaccel/web"
)

// observeRefused checks what an observer may and may not do: it reads,
// sets a SUSPEND_NONE request, and is refused a resume and a suspending
// request.
func observeRefused(t *testing.T, d *jdwptest.Debugger) {
	t.Helper()
	for _, c := range []struct {
		cmd  jdwp.Cmd
		body []byte
		code jdwp.ErrorCode
	}{
		{jdwp.CmdVirtualMachineIDSizes, nil, 0},
		{jdwp.CmdVirtualMachineAllThreads, nil, 0},
		{jdwp.CmdEventRequestSet, []byte{byte(jdwp.EventThreadStart), byte(jdwp.SuspendNone), 0, 0, 0, 0}, 0},
		{jdwp.CmdVirtualMachineResume, nil, jdwp.ErrorNotImplemented},
		{jdwp.CmdEventRequestSet, []byte{byte(jdwp.EventThreadStart), byte(jdwp.SuspendAll), 0, 0, 0, 0}, jdwp.ErrorNotImplemented},
	} {
		p, err := d.Call(c.cmd, c.body)
		if err != nil || p.ErrorCode() != c.code {
			t.Fatalf("observer's %v: %v, %v; want error %v", c.cmd, p, err, c.code)
		}
	}
}

// TestSplitSharedJDB: in split mode, jdb (the controller) and an observer
// on the near end's --read-only-listen share the VM behind the far end:
// jdb's transcript is the one it gets directly, while the observer reads
// the VM and is refused a resume.
func TestSplitSharedJDB(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	script := jdbtest.TranscriptScript(t)
	direct := jdbtest.Direct(testCtx(t), t, b, script)
	far := startFarEnd(t, jdwptest.StartJava(t, b, javavm.Transcript).Addr())
	near := startNearEnd(t, far.addr, "--read-only-listen", "127.0.0.1:0")
	near.logs.wait(t, "of the start probe", 10*time.Second, func(rec map[string]any) bool { return rec["message"] == "far end reached" })
	ro := near.logs.wait(t, "with the read-only address", 10*time.Second, func(rec map[string]any) bool {
		return rec["message"] == "read-only clients attach here: each is an observer, even the first"
	})["listen"].(string)

	gate, release := jdwptest.HoldAfterHandshake(t, near.addr)
	type result struct {
		transcript string
		err        error
	}
	jdb := make(chan result, 1)
	go func() {
		tr, err := jdbtest.Run(testCtx(t), b, gate, script)
		jdb <- result{tr, err}
	}()
	near.logs.wait(t, "of jdb attaching", 30*time.Second, func(rec map[string]any) bool {
		return rec["message"] == "client attached" && rec["role"] == "controller"
	})
	obs, err := jdwptest.Attach(ro)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	observeRefused(t, obs)
	close(release)
	res := <-jdb
	if res.err != nil {
		t.Fatalf("jdb: %v\nnear log:\n%s", res.err, near.logs)
	}
	jdbtest.Same(t, direct, res.transcript, "split mode, shared with an observer")
}

// TestADBFrontSharedClients: through the adb front, a debugger holds an
// app's one JDWP connection and a DDM client (as ddmlib beside Android
// Studio) attaches to the same process: it is an observer on the same
// session (its own stream to the device is closed unused), its DDM HELO is
// answered, and it is refused a resume.
func TestADBFrontSharedClients(t *testing.T) {
	ctx, _, _, up := startADB(t)
	front, _, logs, _ := startFront(t, up)
	port := strings.TrimSpace(mustADB(ctx, t, front, "forward", "tcp:0", "jdwp:4001"))
	if _, err := strconv.Atoi(port); err != nil {
		t.Fatalf("forward printed %q", port)
	}
	addr := net.JoinHostPort("127.0.0.1", port)
	ctl, err := jdwptest.Attach(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer ctl.Close()
	if p, err := ctl.Call(jdwp.CmdVirtualMachineSuspend, nil); err != nil || p.ErrorCode() != 0 {
		t.Fatalf("controller's Suspend: %v, %v", p, err)
	}
	obs, err := jdwptest.Attach(addr)
	if err != nil {
		t.Fatal(err)
	}
	defer obs.Close()
	p, err := obs.Call(jdwp.CmdDDMChunk, ddm.AppendPayload(nil, ddm.Hello{ClientVersion: 1}))
	if err != nil || p.ErrorCode() != 0 || len(p.Body()) == 0 {
		t.Fatalf("observer's HELO: %v, %v", p, err)
	}
	if p, err := obs.Call(jdwp.CmdVirtualMachineResume, nil); err != nil || p.ErrorCode() != jdwp.ErrorNotImplemented {
		t.Fatalf("observer's Resume: %v, %v; want NOT_IMPLEMENTED", p, err)
	}
	if p, err := ctl.Call(jdwp.CmdVirtualMachineResume, nil); err != nil || p.ErrorCode() != 0 {
		t.Fatalf("controller's Resume: %v, %v", p, err)
	}
	if n := strings.Count(logs.String(), `"message":"debugger session started"`); n != 1 {
		t.Errorf("%d relay sessions for two clients of one process, want 1; log:\n%s", n, logs)
	}
	if !strings.Contains(logs.String(), `"role":"observer"`) {
		t.Errorf("no observer attached; log:\n%s", logs)
	}
}

// TestSharedClientsOnPageAndJournal: the page's session lists each client
// sharing it with its role, and the journal records each attaching and
// leaving.
func TestSharedClientsOnPageAndJournal(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{})
	path := filepath.Join(t.TempDir(), "j.jsonl")
	p := startEnd(t, nearListening, "proxy", "--vm", vm.Addr(), "--listen", "127.0.0.1:0", "--journal", path, "--http-addr", "127.0.0.1:0")
	url := p.logs.wait(t, "with the page's address", 10*time.Second, func(rec map[string]any) bool { return rec["message"] == "live monitor" })["url"].(string)
	ctl, err := jdwptest.Attach(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	obs, err := jdwptest.Attach(p.addr)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := obs.Call(jdwp.CmdVirtualMachineResume, nil); err != nil || r.ErrorCode() != jdwp.ErrorNotImplemented {
		t.Fatalf("observer's Resume: %v, %v", r, err)
	}
	p.logs.wait(t, "of the session's start", 10*time.Second, func(rec map[string]any) bool { return rec["message"] == "debugger session started" })
	var ss []web.SessionJSON
	getJSON(t, url+"api/v1/sessions", &ss)
	if len(ss) != 1 || len(ss[0].Clients) != 2 || ss[0].Clients[0].Role != "controller" || ss[0].Clients[1].Role != "observer" ||
		ss[0].Clients[1].Denied != 1 || ss[0].Clients[1].Addr != obs.Conn().LocalAddr().String() {
		t.Fatalf("page's sessions: %+v", ss)
	}
	obs.Close()
	p.logs.wait(t, "of the observer leaving", 10*time.Second, func(rec map[string]any) bool {
		return rec["message"] == "client detached" && rec["debugger"] == obs.Conn().LocalAddr().String()
	})
	ctl.Call(jdwp.CmdVirtualMachineDispose, nil) // the last client's: it reaches the VM
	ctl.Close()
	p.logs.wait(t, "of the session's end", 10*time.Second, func(rec map[string]any) bool { return rec["message"] == "debugger session ended" })
	p.stop()
	recs, err := journal.ReadFiles(path)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range recs {
		if r.Type == journal.TypeClient {
			got = append(got, fmt.Sprintf("%d %s %s %s", r.Client, r.Debugger, r.Role, r.Left))
		}
	}
	want := []string{
		fmt.Sprintf("1 %s controller ", ctl.Conn().LocalAddr()),
		fmt.Sprintf("2 %s observer ", obs.Conn().LocalAddr()),
		fmt.Sprintf("2 %s observer closed", obs.Conn().LocalAddr()),
		fmt.Sprintf("1 %s controller closed", ctl.Conn().LocalAddr()),
	}
	slices.Sort(got) // the two attaches race
	slices.Sort(want)
	if !slices.Equal(got, want) {
		raw, _ := os.ReadFile(path)
		t.Fatalf("the journal's client records:\n%s\nwant\n%s\njournal:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"), raw)
	}
}
