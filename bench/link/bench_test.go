package link

import (
	"context"
	"io"
	"testing"
	"time"
)

// BenchmarkLinkThroughput measures bulk throughput through a Pipe with no
// delay (the hop's own cost) and with a 10 ms RTT (bounded by the in-flight
// buffer); allocations per op show whether the data path allocates.
func BenchmarkLinkThroughput(b *testing.B) {
	for _, bc := range []struct {
		name string
		cfg  Config
	}{{"rtt=0", Config{}}, {"rtt=10ms", Config{RTT: 10 * time.Millisecond}}} {
		b.Run(bc.name, func(b *testing.B) {
			client, a := tcpPair(b)
			c2, server := tcpPair(b)
			for _, c := range []interface{ SetDeadline(time.Time) error }{client, a, c2, server} {
				c.SetDeadline(time.Time{}) // no test deadline: -benchtime may be long
			}
			done := make(chan error, 1)
			go func() {
				_, err := Pipe(context.Background(), a, c2, bc.cfg)
				done <- err
			}()
			drained := make(chan int64, 1)
			go func() {
				n, _ := io.Copy(io.Discard, server)
				drained <- n
			}()
			buf := make([]byte, 64<<10)
			b.SetBytes(int64(len(buf)))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if _, err := client.Write(buf); err != nil {
					b.Fatal(err)
				}
			}
			client.CloseWrite()
			if n := <-drained; n != int64(b.N)*int64(len(buf)) {
				b.Fatalf("delivered %d bytes, want %d", n, int64(b.N)*int64(len(buf)))
			}
			b.StopTimer()
			server.Close()
			client.Close()
			<-done
		})
	}
}
