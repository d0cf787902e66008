package split

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdktest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// allClassesReply is a VM's reply to AllClassesWithGeneric for names:
// per class its tag, a reference type ID (as HotSpot's: small and rising),
// signature, empty generic signature and status.
func allClassesReply(names []string) []byte {
	body := binary.BigEndian.AppendUint32(nil, uint32(len(names)))
	for i, n := range names {
		body = append(body, 1)
		body = binary.BigEndian.AppendUint64(body, uint64(400+i))
		body = binary.BigEndian.AppendUint32(body, uint32(len(n)+2))
		body = append(body, 'L')
		body = append(body, n...)
		body = append(body, ';')
		body = binary.BigEndian.AppendUint32(body, 0)
		body = binary.BigEndian.AppendUint32(body, 7) // verified, prepared, initialized
	}
	return jdwp.AppendReply(nil, 5, jdwp.ErrorNone, body)
}

// BenchmarkCompressAllClasses compresses, as a compressed link sends it,
// the attach's biggest reply: AllClassesWithGeneric in a VM with 15,000
// of the JDK's classes loaded, in the module image's order (packages
// together) and shuffled (a worst case of load order). It reports the
// bytes on the link and the ratio: run with
// go test -run X -bench CompressAllClasses ./split/
func BenchmarkCompressAllClasses(b *testing.B) {
	jdktest.RequireJDK(b)
	names := jdkClassNames(b, 15000)
	shuffled := append([]string(nil), names...)
	rand.New(rand.NewPCG(1, 1)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
	for _, tc := range []struct {
		name  string
		names []string
	}{{"image-order", names}, {"shuffled", shuffled}} {
		b.Run(tc.name, func(b *testing.B) {
			pkt := allClassesReply(tc.names)
			var buf bytes.Buffer
			b.SetBytes(int64(len(pkt)))
			for b.Loop() {
				buf.Reset()
				w := newCompressor(&buf)
				if _, err := w.Write(pkt); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(pkt)), "raw-bytes")
			b.ReportMetric(float64(buf.Len()), "link-bytes")
			b.ReportMetric(float64(len(pkt))/float64(buf.Len()), "ratio")
		})
	}
}

// BenchmarkCompressSmallPacket is the compressed link's cost per small
// JDWP packet (60 bytes, a command or reply of a step), as a leg pays it:
// compressed and flushed by one end, decompressed by the other, through a
// pipe. Run with go test -run X -bench CompressSmallPacket ./split/
func BenchmarkCompressSmallPacket(b *testing.B) {
	pr, pw := io.Pipe()
	w, r := newCompressor(pw), newDecompressor(pr)
	pkt := jdwp.AppendCommand(nil, 1, jdwp.CmdThreadReferenceFrames, make([]byte, 49))
	done := make(chan error, 1)
	go func() {
		buf := make([]byte, 4096)
		for {
			if _, err := r.Read(buf); err != nil {
				done <- err
				return
			}
		}
	}()
	b.ReportAllocs()
	id := uint32(0)
	for b.Loop() {
		id++
		binary.BigEndian.PutUint32(pkt[4:], id) // each packet a little different, as IDs are
		if _, err := w.Write(pkt); err != nil {
			b.Fatal(err)
		}
	}
	pw.Close()
	if err := <-done; err != io.EOF {
		b.Fatal(err)
	}
}
