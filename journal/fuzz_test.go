package journal

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// FuzzRead feeds arbitrary bytes to the journal reader: it returns records
// or a typed error, never panics.
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"type":"header","schema":1}` + "\n" + `{"type":"packet","session":1,"t":5,"view":"both","dir":"to_vm","kind":"command","id":1,"set":1,"cmd":1,"len":11,"served":"forwarded","bytes":"AAAACwAAAAEAAQE=","thread":"18446744073709551615"}` + "\n"))
	f.Add([]byte(`{"type":"header","schema":99}`))
	f.Add([]byte("\x0a\x0d\x0d\x0a garbage"))
	f.Add([]byte(`{"type":"header","schema":1}` + "\n" + `{"type":"packet","thread":-1}`))
	f.Add([]byte(`{"type":"header","schema":1}` + "\n{\"type\":\"pa"))
	f.Fuzz(func(t *testing.T, b []byte) {
		recs, _ := Read(bytes.NewReader(b))
		Check(recs)
		ComputeStats(recs)
		for i := range recs {
			FormatRecord(&recs[i], FormatOptions{Hex: true})
		}
	})
}

// FuzzEncode runs arbitrary packet bytes, as any kind of frame, through
// the writer's decoding (IDSizes, threads, events, DDM chunk types) and all
// three encoders. The JSON Lines output must read back, record for record.
func FuzzEncode(f *testing.F) {
	var c jdwp.Composite
	c.SuspendPolicy = 1
	c.Events = []jdwp.Event{{Kind: jdwp.EventBreakpoint, RequestID: 2, Thread: 9, Location: jdwp.Location{TypeTag: 1, Class: 1, Method: 2, Index: 3}}}
	ev := jdwp.AppendCommand(nil, 7, jdwp.CmdComposite, jdwptest.AppendComposite(nil, testSizes, &c))
	f.Add([]byte(ev), uint8(relay.KindEvent), uint8(relay.Forwarded), uint8(64), uint8(100), uint8(8), 0)
	f.Add([]byte(jdwp.AppendCommand(nil, 1, jdwp.CmdThreadReferenceFrames, threadBody(5))), uint8(relay.KindCommand), uint8(relay.Belay), uint8(11), uint8(6), uint8(4), 16)
	f.Add([]byte(jdwp.AppendReply(nil, 1, 0, []byte("HELO\x00\x00"))), uint8(relay.KindReply), uint8(relay.Synthetic), uint8(199), uint8(1), uint8(1), -1)
	f.Add([]byte(jdwp.AppendCommand(nil, 3, jdwp.CmdObjectReferenceInvokeMethod, make([]byte, 7))), uint8(relay.KindCommand), uint8(relay.CacheHit), uint8(9), uint8(6), uint8(3), 0)
	f.Fuzz(func(t *testing.T, pkt []byte, kind, origin, set, cmd, idSize uint8, rawLimit int) {
		if len(pkt) < jdwp.HeaderSize || len(pkt) > 1<<16 {
			return
		}
		z := int(idSize%8) + 1
		sizes := jdwp.IDSizes{FieldID: z, MethodID: z, ObjectID: z, ReferenceTypeID: z, FrameID: z}
		k := relay.Kind(kind % 6)
		o := relay.Origin(origin % 4)
		dir := relay.ToVM
		if k == relay.KindReply || k == relay.KindEvent || k == relay.KindDDM || k == relay.KindVMCommand {
			dir = relay.ToDebugger
		}
		for _, format := range []Format{FormatJSONLines, FormatPerfetto, FormatPcapng} {
			var buf bytes.Buffer
			j := &Journal{opts: Options{Format: format, RawLimit: rawLimit%70 - 5, Version: "fuzz"}, start: time.Now(), keep: 64, metrics: newMetrics(nil)}
			if j.opts.RawLimit == 0 {
				j.opts.RawLimit = 1
			}
			j.keep = max(j.opts.RawLimit, minCopy)
			w := newWriter(j, newWriterSink(&buf), format)
			j.ws = []*writer{w}
			now := time.Now()
			j.slot(&slot{typ: slotSessionStart, session: 1, time: now, sizes: sizes})
			keep := pkt[:min(len(pkt), j.keep)]
			for _, id := range []uint32{1, 1, 2} {
				j.slot(&slot{typ: slotPacket, session: 1, dir: dir, kind: k, origin: o, id: id, wireID: id ^ 0x40000000,
					cmd: jdwp.Cmd{Set: jdwp.CommandSet(set), Cmd: cmd}, length: len(pkt), time: now, buf: keep})
			}
			j.slot(&slot{typ: slotSessionEnd, session: 1, time: now})
			if err := w.close(); err != nil {
				t.Fatal(err)
			}
			switch format {
			case FormatJSONLines:
				recs, err := Read(&buf)
				if err != nil {
					t.Fatalf("output does not read back: %v\n%s", err, buf.Bytes())
				}
				if n := count(recs, func(r *Record) bool { return r.Type == TypePacket }); n != 3 {
					t.Fatalf("%d packet records, want 3", n)
				}
			case FormatPerfetto:
				var v []json.RawMessage
				if err := json.Unmarshal(buf.Bytes(), &v); err != nil {
					t.Fatalf("not a JSON array: %v\n%s", err, buf.Bytes())
				}
			}
		}
	})
}
