package split

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"testing"
	"testing/synctest"
	"time"

	"github.com/rs/zerolog"
)

// FuzzReadFrame: any bytes give a frame or an error, never a panic, and a
// frame read re-encodes to the bytes it was read from.
func FuzzReadFrame(f *testing.F) {
	f.Add(appendFrame(nil, frameData, 14, 3, []byte("JDWP")))
	f.Add(appendFrame(nil, frameAck, 1, 1<<40, nil))
	f.Add(appendFrame(nil, frameFin, 9, 0, nil))
	f.Add([]byte{frameData, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff})
	f.Fuzz(func(t *testing.T, b []byte) {
		fr, _, err := readFrame(bytes.NewReader(b), nil)
		if err != nil {
			return
		}
		if again := appendFrame(nil, fr.kind, fr.seq, fr.ack, fr.payload); !bytes.HasPrefix(b, again) {
			t.Fatalf("frame %+v re-encodes to %x, read from %x", fr, again, b)
		}
	})
}

// pipePair is two ends of a stream joined by an in-memory link.
func pipePair(within time.Duration) (near, far *stream, a, b net.Conn) {
	a, b = net.Pipe()
	cfg := streamConfig{within: within, buffer: 1 << 20, log: zerolog.Nop()}
	near = newStream(cfg, SessionID{1}, [32]byte{2}, a)
	far = newStream(cfg, SessionID{1}, [32]byte{2}, b)
	near.start(&leg{conn: a, br: bufio.NewReader(a)})
	far.start(&leg{conn: b, br: bufio.NewReader(b)})
	return near, far, a, b
}

// TestStreamGrace: a stream whose link is lost waits exactly its grace
// period for a new one, then fails its reads with ErrResumeExpired.
func TestStreamGrace(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		near, far, a, _ := pipePair(time.Minute)
		defer near.Close()
		defer far.Close()
		a.Close() // the link drops
		synctest.Wait()
		errc := make(chan error, 1)
		go func() {
			_, err := far.Read(make([]byte, 1))
			errc <- err
		}()
		time.Sleep(time.Minute - time.Nanosecond)
		synctest.Wait()
		select {
		case err := <-errc:
			t.Fatalf("the session ended before its grace: %v", err)
		default:
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if err := <-errc; !errors.Is(err, ErrResumeExpired) {
			t.Errorf("read after the grace: %v, want ErrResumeExpired", err)
		}
	})
}

// TestStreamResend: bytes written on both ends while the link is down, and
// bytes the lost link swallowed, arrive once and in order over the next
// link, each end resending from what the other says it received.
func TestStreamResend(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		near, far, a, _ := pipePair(time.Minute)
		defer near.Close()
		defer far.Close()
		if _, err := near.Write([]byte("hello ")); err != nil {
			t.Fatal(err)
		}
		got := make([]byte, 6)
		if _, err := io.ReadFull(far, got); err != nil || string(got) != "hello " {
			t.Fatalf("far read %q, %v", got, err)
		}
		a.Close()
		synctest.Wait()
		near.Write([]byte("while "))
		far.Write([]byte("events"))
		near.Write([]byte("down"))
		synctest.Wait()
		// The far end takes the near end's reconnect.
		c, d := net.Pipe()
		near.mu.Lock()
		res := Resume{Session: near.id, Secret: near.secret, Received: near.recv}
		gen := near.gen
		near.mu.Unlock()
		l := &leg{conn: d, br: bufio.NewReader(d)}
		recv, err := far.takeOver(l, res)
		if err != nil {
			t.Fatal(err)
		}
		far.start(l)
		if err := near.resumed(gen, &leg{conn: c, br: bufio.NewReader(c), sent: recv}, 1); err != nil {
			t.Fatal(err)
		}
		got = make([]byte, len("while down"))
		if _, err := io.ReadFull(far, got); err != nil || string(got) != "while down" {
			t.Errorf("far read %q, %v", got, err)
		}
		got = make([]byte, len("events"))
		if _, err := io.ReadFull(near, got); err != nil || string(got) != "events" {
			t.Errorf("near read %q, %v", got, err)
		}
		// The near end's next bytes acknowledge the events; a reconnect
		// that says it has not received them (stale: a replay of the
		// last one) is refused from then on.
		near.Write([]byte("!"))
		if _, err := io.ReadFull(far, got[:1]); err != nil {
			t.Fatal(err)
		}
		far.mu.Lock()
		acked := far.outBase
		far.mu.Unlock()
		if acked == 0 {
			t.Fatal("nothing acknowledged")
		}
		e, _ := net.Pipe()
		defer e.Close()
		if _, err := far.takeOver(&leg{conn: e}, res); !errors.Is(err, errStale) {
			t.Errorf("a stale reconnect: %v, want errStale", err)
		}
	})
}

// TestStreamClose: Close on one end reaches the other as the end of the
// stream, after every byte written before it.
func TestStreamClose(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		near, far, _, _ := pipePair(time.Minute)
		defer far.Close()
		near.Write([]byte("last words"))
		near.Close()
		got, err := io.ReadAll(far)
		if err != nil || string(got) != "last words" {
			t.Errorf("far read %q, %v", got, err)
		}
	})
}

// TestStreamForwardsWithoutAllocating: a packet written on one end of a
// live stream and read on the other, then the reply back, allocates
// nothing in either end's loops (their frame buffers and wake-ups are
// reused), as forwarding through the relay does not.
func TestStreamForwardsWithoutAllocating(t *testing.T) {
	near, far, _, _ := pipePair(time.Minute)
	defer near.Close()
	defer far.Close()
	msg := make([]byte, 64)
	got := make([]byte, len(msg))
	exchange := func() {
		if _, err := near.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(far, got); err != nil {
			t.Fatal(err)
		}
		if _, err := far.Write(msg); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(near, got); err != nil {
			t.Fatal(err)
		}
	}
	exchange() // the loops' buffers
	if n := testing.AllocsPerRun(200, exchange); n != 0 {
		t.Errorf("%v allocations a round trip through a stream, want 0", n)
	}
}
