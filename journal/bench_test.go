package journal

import (
	"io"
	"path/filepath"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// BenchmarkRelay measures packets per second through a relay.Server over
// loopback, to the fake VM and back, with the journal off and on (to a
// discarding writer, which measures the journal's own cost, and to a real
// file in each format). The debugger pipelines 64 commands at a time.
//
//	go test -run XXX -bench Relay -benchtime 200000x ./journal
func BenchmarkRelay(b *testing.B) {
	type variant struct {
		name string
		open func(b *testing.B) *Journal
	}
	file := func(f Format) func(b *testing.B) *Journal {
		return func(b *testing.B) *Journal {
			j, err := Open(Options{Path: filepath.Join(b.TempDir(), "j"), Format: f})
			if err != nil {
				b.Fatal(err)
			}
			return j
		}
	}
	variants := []variant{
		{"journal=off", nil},
		{"journal=discard", func(b *testing.B) *Journal {
			j, err := New(io.Discard, Options{})
			if err != nil {
				b.Fatal(err)
			}
			return j
		}},
		{"journal=jsonl", file(FormatJSONLines)},
		{"journal=perfetto", file(FormatPerfetto)},
		{"journal=pcapng", file(FormatPcapng)},
	}
	for _, v := range variants {
		b.Run(v.name, func(b *testing.B) {
			vm := startFakeVM(b)
			var j *Journal
			if v.open != nil {
				j = v.open(b)
			}
			addr, stop := startProxy(b, vm.Addr(), func(*relay.Session) relay.Hooks {
				if j == nil {
					return relay.Hooks{}
				}
				return relay.Hooks{Observers: []relay.Observer{j}}
			})
			d := dialDebugger(b, addr)
			body := threadBody(testThread)
			const window = 64
			var out []byte
			b.ResetTimer()
			start := time.Now()
			for sent := 0; sent < b.N; {
				n := min(window, b.N-sent)
				out = out[:0]
				for i := range n {
					out = jdwp.AppendCommand(out, uint32(sent+i+1), jdwp.CmdThreadReferenceFrameCount, body)
				}
				if _, err := d.Conn().Write(out); err != nil {
					b.Fatal(err)
				}
				for range n {
					if _, err := d.Next(); err != nil {
						b.Fatal(err)
					}
				}
				sent += n
			}
			elapsed := time.Since(start)
			b.StopTimer()
			b.ReportMetric(float64(2*b.N)/elapsed.Seconds(), "packets/s")
			d.Close()
			stop()
			if j != nil {
				if err := j.Close(); err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(j.Dropped()), "dropped")
			}
		})
	}
}

// BenchmarkWriter measures the writer goroutine alone: records encoded per
// second in each format, a command and its reply per iteration, to a
// discarding sink. This is the rate the journal sustains without drops.
func BenchmarkWriter(b *testing.B) {
	for _, f := range []Format{FormatJSONLines, FormatPerfetto, FormatPcapng} {
		b.Run(string(f), func(b *testing.B) {
			j := &Journal{opts: Options{Format: f, RawLimit: defaultRawLimit, Version: "bench"}, start: time.Now(), keep: defaultRawLimit, metrics: newMetrics(nil)}
			w := newWriter(j, newWriterSink(io.Discard), f)
			j.ws = []*writer{w}
			now := time.Now()
			j.slot(&slot{typ: slotSessionStart, session: 1, time: now, sizes: testSizes})
			cmd := jdwp.AppendCommand(nil, 1, jdwp.CmdThreadReferenceFrames, threadBody(testThread))
			reply := jdwp.AppendReply(nil, 1, 0, make([]byte, 64))
			c := slot{typ: slotPacket, session: 1, dir: relay.ToVM, kind: relay.KindCommand, cmd: jdwp.CmdThreadReferenceFrames, length: len(cmd), time: now, buf: cmd}
			c.rec = new(cmdRec) // as Observe links them
			r := slot{rec: c.rec, typ: slotPacket, session: 1, dir: relay.ToDebugger, kind: relay.KindReply, cmd: jdwp.CmdThreadReferenceFrames, length: len(reply), time: now, buf: reply, latency: time.Millisecond}
			b.ReportAllocs()
			b.ResetTimer()
			start := time.Now()
			for i := range b.N {
				c.id, r.id = uint32(i), uint32(i)
				c.wireID, r.wireID = c.id, r.id
				j.slot(&c)
				j.slot(&r)
				j.recycle()
			}
			b.ReportMetric(float64(2*b.N)/time.Since(start).Seconds(), "records/s")
		})
	}
}
