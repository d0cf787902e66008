package main

import (
	"bufio"
	"io"
	"net"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/adbwire"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// versionRTT attaches to a JDWP stream on c (handshake) and times n
// sequential VirtualMachine.Version round trips; it returns the median.
func versionRTT(t *testing.T, c net.Conn, n int) time.Duration {
	t.Helper()
	defer c.Close()
	dbg, err := jdwptest.AttachConn(c)
	if err != nil {
		t.Fatal(err)
	}
	var d []time.Duration
	for range n {
		start := time.Now()
		if _, err := dbg.Call(jdwp.CmdVirtualMachineVersion, nil); err != nil {
			t.Fatal(err)
		}
		d = append(d, time.Since(start))
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// dialADBStream opens host:transport:SERIAL + jdwp:PID on the adb server
// (or front) at port.
func dialADBStream(t *testing.T, port int, serial string, pid int) net.Conn {
	return dialADBStreamVia(t, port, "host:transport:"+serial, pid)
}

// dialADBStreamVia opens transport (host:transport…, or host:tport:…,
// whose answer carries an 8-byte transport ID) + jdwp:PID.
func dialADBStreamVia(t *testing.T, port int, transport string, pid int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	c.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(c)
	for _, req := range []string{transport, "jdwp:" + strconv.Itoa(pid)} {
		c.Write(adbwire.AppendMessage(nil, req))
		n := 4
		if strings.HasPrefix(req, "host:tport:") {
			n += 8
		}
		st := make([]byte, n)
		if _, err := io.ReadFull(br, st); err != nil || string(st[:4]) != "OKAY" {
			t.Fatalf("%s: %q %v", req, st, err)
		}
	}
	c.SetDeadline(time.Time{})
	return &bufferedConn{Conn: c, r: br}
}

type bufferedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *bufferedConn) Read(p []byte) (int, error) { return c.r.Read(p) }

// TestADBPathRoundTrips times one JDWP round trip (VirtualMachine.Version
// to a fake VM) along each path: direct, the adb server's own stream and
// forward, and the front's stream and forward without speculation. It
// fails only if a path breaks; the times are logged.
func TestADBPathRoundTrips(t *testing.T) {
	ctx, vm, dev, up := startADB(t)
	front, _, logs, _ := startFront(t, up, "--speculate=false", "--ddm=false")
	const n = 100
	dial := func(addr string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var out []string
	out = append(out, "direct "+versionRTT(t, dial(vm), n).String())
	out = append(out, "adb-stream "+versionRTT(t, dialADBStream(t, up, dev, 4001), n).String())
	p := strings.TrimSpace(mustADB(ctx, t, up, "forward", "tcp:0", "jdwp:4001"))
	out = append(out, "adb-forward "+versionRTT(t, dial("127.0.0.1:"+p), n).String())
	out = append(out, "front-stream "+versionRTT(t, dialADBStream(t, front, dev, 4001), n).String())
	// As newer adb clients and adblib open streams: the front relays the
	// transport ID and learns the device's serial from it.
	out = append(out, "front-tport-any "+versionRTT(t, dialADBStreamVia(t, front, "host:tport:any", 4001), n).String())
	streams := 0
	for _, line := range strings.Split(logs.String(), "\n") {
		if strings.Contains(line, "JDWP stream: relaying through the accelerator") && strings.Contains(line, `"device":"`+dev+`","pid":4001`) {
			streams++
		}
	}
	if streams != 2 {
		t.Errorf("%d streams logged with device %s and pid 4001, want 2 (transport:SERIAL and tport:any):\n%s", streams, dev, logs)
	}
	p = strings.TrimSpace(mustADB(ctx, t, front, "forward", "tcp:0", "jdwp:4001"))
	out = append(out, "front-forward "+versionRTT(t, dial("127.0.0.1:"+p), n).String())
	t.Logf("median JDWP round trip: %s", strings.Join(out, ", "))
}
