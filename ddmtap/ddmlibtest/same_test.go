package ddmlibtest

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/ddmtap"
	"github.com/jdwpaccel/jdwpaccel/ddmtap/fakevm"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/speculator"
	"github.com/rs/zerolog"
)

// ddmlibSession runs ddmlib against addr through a fixed script (the
// connect-time requests, threads on, heap info and segments on, a GC, a
// one-shot HPIF, a thread status poll) and returns every line it logged
// and its final dump.
func ddmlibSession(t *testing.T, addr string, vm *fakevm.VM) ([]string, ClientState) {
	t.Helper()
	peer := startPeerAllLogs(t, addr, testPID)
	peer.connected()
	peer.send("threads on")
	want := vm.Threads()
	peer.wait("THCR for every thread", func(s ClientState) bool { return sameNames(s, want) })
	threadTable(peer, want)
	peer.send("heapinfo on")
	peer.send("segments on")
	peer.send("gc")
	peer.send("hpif")
	peer.send("heapinfo off")
	peer.send("segments off")
	peer.send("threads off")
	peer.sync() // every answer to the script is in
	return normalize(peer.allLogs()), peer.current()
}

// normalize keeps the lines of what ddmlib received and how it handled
// it, in order: not its lines about sending (they come from the thread
// that sends, interleaved with the receiving thread's as it happens), nor
// about socket reads (their sizes follow TCP's segmentation), and without
// the object identities of its handlers.
func normalize(lines []string) []string {
	var out []string
	for _, l := range lines {
		if strings.Contains(l, ": Sending ") || strings.Contains(l, ": Read ") || strings.Contains(l, ": Checking ") || strings.Contains(l, ": Now ready: ") {
			continue
		}
		out = append(out, handlerID.ReplaceAllString(l, "@"))
	}
	return out
}

var handlerID = regexp.MustCompile(`@[0-9a-f]+`)

// TestDdmlibSameThroughProxy: ddmlib through the proxy (with the proxy's
// own DDM monitor on the same VM connection, and its speculator, as
// `jdwpaccel proxy` runs them) logs exactly what it logs
// connected to the VM directly, line for line, verbose and debug lines
// included ("Got empty reply" for each empty reply it received), and ends
// with the same client data: the proxy answers nothing the VM would not.
func TestDdmlibSameThroughProxy(t *testing.T) {
	for _, prof := range ddmlibProfiles {
		t.Run(prof.String(), func(t *testing.T) {
			direct := jdwptest.StartDDMVM(t, vmConfig(prof))
			dLogs, dState := ddmlibSession(t, direct.Addr(), direct)

			behind := jdwptest.StartDDMVM(t, vmConfig(prof))
			spec := speculator.New(speculator.Config{}, zerolog.Nop(), nil)
			mon, addr := startProxyHooks(t, behind.Addr(), spec.Hooks)
			waitMon(t, mon, "identity", func(s ddmtap.Snapshot) bool { return s.Identity.DDM == ddmtap.DDMYes })
			pLogs, pState := ddmlibSession(t, addr, behind)

			n := max(len(dLogs), len(pLogs))
			for i := range n {
				var d, p string
				if i < len(dLogs) {
					d = dLogs[i]
				}
				if i < len(pLogs) {
					p = pLogs[i]
				}
				if d != p {
					t.Fatalf("ddmlib's log differs at line %d:\n direct: %q\n  proxy: %q\ndirect:\n%s\nproxy:\n%s", i+1, d, p, strings.Join(dLogs, "\n"), strings.Join(pLogs, "\n"))
				}
			}
			if vm := behind.Stats(); vm.NonDDMPackets != 0 || vm.DebuggerAttached {
				t.Errorf("the proxy sent the VM %d non-DDM packets for a DDM-only client (ART loads its JDWP agent on the first)", vm.NonDDMPackets)
			}
			if !reflect.DeepEqual(dState, pState) {
				t.Fatalf("ddmlib's client data differs:\n direct %+v\n  proxy %+v", dState, pState)
			}
		})
	}
}
