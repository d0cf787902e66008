package split

import (
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/rs/zerolog"
)

// BenchmarkSplitPingPong measures serial round trips (a command and its
// reply) through a near end and a far end on loopback, as split mode runs
// by default (a resumable, compressed stream) and without either, against
// the VM directly in the same run: what split mode adds to each round
// trip a debugger waits on. Reported: p50 and p99 round trip, and
// allocations per round trip (whole process: the fake VM's and the
// client's count too, as the direct case shows; the ends' trace logging is
// off, as it is by default).
func BenchmarkSplitPingPong(b *testing.B) {
	defer zerolog.SetGlobalLevel(zerolog.GlobalLevel())
	zerolog.SetGlobalLevel(zerolog.InfoLevel)
	for _, bc := range []struct {
		name     string
		split    bool
		resume   time.Duration
		compress bool
	}{
		{name: "direct"},
		{name: "plain", split: true},
		{name: "resumable", split: true, resume: DefaultResumeWithin},
		{name: "resumable-compressed", split: true, resume: DefaultResumeWithin, compress: true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			v := newVMSide(b)
			addr := v.vm.Addr()
			if bc.split {
				f := startFar(b, v, "127.0.0.1:0", FarConfig{Compress: bc.compress, ResumeWithin: bc.resume})
				addr = startNear(b, NearConfig{Addr: f.addr, Compress: bc.compress, ResumeWithin: bc.resume, Logger: zerolog.Nop()})
			}
			d, err := jdwptest.Attach(addr)
			if err != nil {
				b.Fatal(err)
			}
			defer d.Close()
			jdwptest.RoundTrips(b, func() {
				if _, err := d.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}
