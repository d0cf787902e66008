package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/ddmtap/fakevm"
	"github.com/jdwpaccel/jdwpaccel/discover"
	"github.com/jdwpaccel/jdwpaccel/feed"
	"github.com/jdwpaccel/jdwpaccel/internal/adbtest"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/web"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

const testSerial = "emulator-5554"

// fakeDevice is a test adb server with one device whose debuggable
// processes are fake DDM VMs, one per app name; the process names (what
// /proc/PID/cmdline says) are "<pre-initialized>", so only DDM can name
// the apps.
func fakeDevice(t *testing.T, apps ...string) (*adbtest.Server, []*fakevm.VM) {
	t.Helper()
	srv, err := adbtest.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(srv.Close)
	srv.AddDevice(testSerial, "device")
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	var vms []*fakevm.VM
	for i, app := range apps {
		pid := 1000 + i
		vm, err := fakevm.Listen("127.0.0.1:0", fakevm.Config{Profile: fakevm.Dalvik, Seed: uint64(i + 1), PID: uint32(pid), AppName: app, Logger: zerolog.Nop()})
		if err != nil {
			t.Fatal(err)
		}
		go vm.Serve(ctx) //nolint:errcheck // ends with ctx, closing the listener
		addr := vm.Addr()
		srv.AddProcess(testSerial, adbtest.Proc{PID: pid, Name: "<pre-initialized>", Dial: func() (net.Conn, error) {
			return net.Dial("tcp", addr)
		}})
		vms = append(vms, vm)
	}
	return srv, vms
}

// monitorURL is the live monitor's URL from the proxy's JSON log.
func monitorURL(t *testing.T, logs *jdwptest.Buffer) string {
	t.Helper()
	for _, line := range strings.Split(logs.String(), "\n") {
		var rec map[string]any
		if json.Unmarshal([]byte(line), &rec) == nil && rec["message"] == "live monitor" {
			if u, ok := rec["url"].(string); ok {
				return strings.TrimSuffix(u, "/")
			}
		}
	}
	t.Fatalf("no live monitor URL in the log:\n%s", logs)
	return ""
}

func getJSON(t *testing.T, u string, v any) {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("GET %s: %s %s", u, resp.Status, b)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
}

func vmKey(pid int) string { return fmt.Sprintf("adb:%s:%d", testSerial, pid) }

// pageVMs lists /api/v1/vms, and with withThreads each VM's live thread
// count (only while no VM may vanish between the two requests).
func pageVMs(t *testing.T, base string, withThreads bool) (map[string]web.VM, map[string]int) {
	var vms []web.VM
	getJSON(t, base+"/api/v1/vms", &vms)
	byID := map[string]web.VM{}
	threads := map[string]int{}
	for _, vm := range vms {
		byID[vm.ID] = vm
		if !withThreads {
			continue
		}
		var ts []web.Thread
		getJSON(t, base+"/api/v1/vms/"+url.PathEscape(vm.ID)+"/threads", &ts)
		threads[vm.ID] = len(ts)
	}
	return byID, threads
}

// TestDiscoveredVMsGetDDMMonitors runs "jdwpaccel proxy --vm adb:" over a
// fake device with two fake DDM VMs: each gets its own monitor (threads
// and app name on the page, DDM names in "jdwpaccel vms"), a debugger
// gets the held connection, and a VM that goes away drops off the page.
func TestDiscoveredVMsGetDDMMonitors(t *testing.T) {
	srv, vms := fakeDevice(t, "com.example.one", "com.example.two")
	addr, logs := startProxy(t, "adb:", "--adb-server", srv.Addr(), "--vm-port-base", "0", "--ddm-poll", "100ms")
	base := monitorURL(t, logs)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("proxy log:\n%s", logs)
		}
	})
	want := map[string]string{vmKey(1000): "com.example.one", vmKey(1001): "com.example.two"}

	jdwptest.Eventually(t, "both monitors on the page with threads", func() (bool, string) {
		got, threads := pageVMs(t, base, true)
		for key, app := range want {
			if vm, ok := got[key]; !ok || vm.App != app || !vm.DDM || threads[key] == 0 {
				return false, fmt.Sprintf("vms %+v threads %v", got, threads)
			}
		}
		return len(got) == len(want), fmt.Sprintf("vms %+v", got)
	})
	for i, vm := range vms {
		if st := vm.Stats(); st.Connections != 1 || st.DDMRequests["HELO"] == 0 {
			t.Errorf("VM %d: %d connections, DDM requests %v; want 1 held connection with HELO", i, st.Connections, st.DDMRequests)
		}
	}

	var snap discover.Snapshot
	getJSON(t, base+discover.APIPrefix+"vms", &snap)
	if len(snap.VMs) != 2 {
		t.Fatalf("discover API lists %d VMs, want 2: %+v", len(snap.VMs), snap)
	}
	for _, st := range snap.VMs {
		if st.Name != want[st.Key] {
			t.Errorf("discover API names %s %q, want the DDM name %q", st.Key, st.Name, want[st.Key])
		}
	}

	// A debugger on the current-VM port, once it reaches VM two, gets the
	// held connection: no second connection to the VM.
	body := strings.NewReader(`{"vm": "com.example.two"}`)
	resp, err := http.Post(base+discover.APIPrefix+"select", "application/json", body)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("select by DDM name: %s", resp.Status)
	}
	attachAndVersion(t, addr)
	if st := vms[1].Stats(); st.Connections != 1 || !st.DebuggerAttached {
		t.Errorf("VM two: %d connections, debugger attached %v; want the held connection handed to the debugger", st.Connections, st.DebuggerAttached)
	}
	jdwptest.Eventually(t, "the session listed on VM two", func() (bool, string) {
		got, _ := pageVMs(t, base, false)
		d := got[vmKey(1001)].Debuggers
		return len(d) == 1 && len(got[vmKey(1000)].Debuggers) == 0, fmt.Sprintf("%+v", got)
	})

	srv.RemoveProcess(testSerial, 1000)
	jdwptest.Eventually(t, "VM one dropping off the page", func() (bool, string) {
		got, _ := pageVMs(t, base, false)
		_, one := got[vmKey(1000)]
		_, two := got[vmKey(1001)]
		return !one && two, fmt.Sprintf("%+v", got)
	})
}

// attachAndVersion attaches a debugger to addr and asks for the VM's
// version; it keeps the connection open until the test ends.
func attachAndVersion(t *testing.T, addr string) {
	t.Helper()
	d, err := jdwptest.Attach(addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	p, err := d.Call(jdwp.CmdVirtualMachineVersion, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p.ErrorCode() != 0 || !bytes.Contains(p.Body(), []byte("Dalvik")) {
		t.Fatalf("Version reply: error %d body %q", p.ErrorCode(), p.Body())
	}
}

// TestDiscoveryWithoutDDM: with --ddm=false nothing connects to a
// discovered VM before a debugger does, and the page lists no VM.
func TestDiscoveryWithoutDDM(t *testing.T) {
	srv, vms := fakeDevice(t, "com.example.one")
	addr, logs := startProxy(t, "adb:", "--adb-server", srv.Addr(), "--vm-port-base", "0", "--ddm=false")
	base := monitorURL(t, logs)
	jdwptest.Eventually(t, "the VM found", func() (bool, string) {
		var snap discover.Snapshot
		getJSON(t, base+discover.APIPrefix+"vms", &snap)
		return len(snap.VMs) == 1 && snap.Selected == vmKey(1000), fmt.Sprintf("%+v", snap)
	})
	attachAndVersion(t, addr)
	if st := vms[0].Stats(); st.Connections != 1 || st.DDMRequests["HELO"] != 0 {
		t.Errorf("VM: %d connections, DDM requests %v; want only the debugger's, without DDM", st.Connections, st.DDMRequests)
	}
	// The page lists every VM served, DDM or not: this one without DDM
	// data, and without a heap request to offer.
	var got []web.VM
	getJSON(t, base+"/api/v1/vms", &got)
	if len(got) != 1 || got[0].ID != vmKey(1000) || got[0].DDM || got[0].Kind != discover.KindADB || got[0].Heap != web.HeapNone || len(got[0].Debuggers) != 1 {
		t.Errorf("page lists %+v with --ddm=false; want the one VM, without DDM", got)
	}
	if strings.Contains(logs.String(), "holding a VM connection") {
		t.Errorf("a DDM holder ran with --ddm=false:\n%s", logs)
	}
}

// TestBuildStackDiscoveryDDM: buildStack makes per-VM DDM holders for
// discovery only when --ddm is on.
func TestBuildStackDiscoveryDDM(t *testing.T) {
	for _, on := range []bool{true, false} {
		mode := ddmOff
		if on {
			mode = ddmOn
		}
		pf := &proxyFlags{vm: "adb:", ddm: ddmFlags{mode: mode}}
		st, err := buildStack(context.Background(), pf, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		if st.holder != nil || (st.vmDDM != nil) != on || st.tracker.VMOf != nil {
			t.Errorf("--ddm=%v: holder %v, per-VM DDM %v, a session-VM mapping besides the servers' own names: %v", on, st.holder, st.vmDDM, st.tracker.VMOf != nil)
		}
	}
}

// TestDDMVMsStart: an adb VM's holder is wired into its relay
// configuration and registered until stop; a scanned local JVM gets none.
func TestDDMVMsStart(t *testing.T) {
	dial := func(ctx context.Context) (net.Conn, error) { return nil, context.Canceled }
	for _, c := range []struct {
		kind string
		want bool
	}{
		{discover.KindADB, true},
		{discover.KindScan, false},
	} {
		d := newDDMVMs(ddmFlags{mode: ddmOn}, prometheus.NewRegistry(), feed.New(feed.Config{}))
		vm := discover.VM{Key: c.kind + ":1", Kind: c.kind, Dial: dial}
		var cfg relay.Config
		stop := d.start(context.Background(), vm, dial, &cfg)
		if got := len(d.mons.List()) == 1; got != c.want || (cfg.DialVM != nil) != c.want {
			t.Errorf("%s: holder %v (dialling through it %v), want %v", c.kind, got, cfg.DialVM != nil, c.want)
		}
		stop()
		if n := len(d.mons.List()); n != 0 {
			t.Errorf("%s: %d monitors after stop", c.kind, n)
		}
	}
}

// TestSetupDDMStopJoinsHolder: the single-VM DDM holder's stop ends its
// monitoring and returns only once the holder has shut down (its DDM
// connection closed), so an exiting proxy does not cut the shutdown off.
func TestSetupDDMStopJoinsHolder(t *testing.T) {
	vm := jdwptest.StartDDMVM(t, fakevm.Config{Profile: fakevm.Dalvik, Threads: 2, Logger: zerolog.Nop()})
	var cfg relay.Config
	f := ddmFlags{mode: ddmForce, poll: time.Hour, timeout: 5 * time.Second, reconnect: time.Second}
	h, stop := setupDDM(context.Background(), zerolog.Nop(), prometheus.NewRegistry(), vm.Addr(), f, &cfg, nil)
	if h == nil || cfg.DialVM == nil {
		t.Fatalf("holder %v, dialling through it %v", h, cfg.DialVM != nil)
	}
	ctx, cancel := context.WithTimeout(context.Background(), jdwptest.Timeout)
	defer cancel()
	if _, err := h.Monitor().Wait(ctx, func(s ddmtap.Snapshot) bool { return s.Connected }); err != nil {
		t.Fatalf("the holder never connected: %v", err)
	}
	stop()
	if h.Monitor().Snapshot().Connected {
		t.Error("stop returned while the holder's DDM connection was still up")
	}
	if _, stopOff := setupDDM(context.Background(), zerolog.Nop(), prometheus.NewRegistry(), vm.Addr(), ddmFlags{mode: ddmOff}, &cfg, nil); stopOff == nil {
		t.Error("setupDDM without DDM returned a nil stop")
	} else {
		stopOff()
	}
}
