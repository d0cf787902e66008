package push

import (
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// TestFarPromisesAStopItGathersLater: a far end whose profile (here the
// built-in prior: an IDE's, on OpenJDK's JDI) came from a debugger set up
// otherwise than this one (thread start and death requests: jdb's) sends
// the first stop's event at once, after an empty bundle that tells the
// near end this end gathers the stop (it speculates on its own on a stop
// without one); one set up as the prior's debugger was gets the prior's
// stop gathered before the event. Fails with no bundle before the event
// for the former (far.promised), or a full one.
func TestFarPromisesAStopItGathersLater(t *testing.T) {
	for _, jdbLike := range []bool{false, true} {
		s := vmScript()
		s[jdwp.CmdVirtualMachineVersion] = jdwptest.Body(jdwptest.VersionBody("OpenJDK", "OpenJDK 64-Bit Server VM"))
		s[jdwp.CmdEventRequestSet] = jdwptest.Body(intBody(1))
		vm := jdwptest.StartVM(t, jdwptest.Script{Replies: s})
		d := attach(t, vm.Addr(), FarHooks(newSpec(), Config{MaxHold: time.Minute}), 0)
		if _, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil {
			t.Fatal(err)
		}
		kinds := []jdwp.EventKind{jdwp.EventClassPrepare, jdwp.EventClassUnload} // OpenJDK's JDI's own
		if jdbLike {
			kinds = append(kinds, jdwp.EventThreadStart, jdwp.EventThreadDeath)
		}
		for _, k := range kinds {
			if _, err := d.Call(jdwp.CmdEventRequestSet, []byte{byte(k), byte(jdwp.SuspendNone), 0, 0, 0, 0}); err != nil {
				t.Fatal(err)
			}
		}
		ev := stopEvent(77)
		var c codec
		_, _, recs := stopBundle(t, vm, d, ev, &c)
		c.close()
		switch {
		case jdbLike && len(recs) != 0:
			t.Errorf("a debugger set up otherwise than the prior's: %d records gathered before its first read, want none", len(recs))
		case !jdbLike && len(recs) == 0:
			t.Error("a debugger set up as the prior's: nothing gathered at the event")
		}
		if e := next(t, d); string(e) != string(ev) {
			t.Fatalf("after the bundle %v, want the stop event", e)
		}
	}
}
