package main

import (
	"bufio"
	"net"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/adbfront"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// versionRTT attaches to a JDWP stream on c (handshake) and times n
// sequential VirtualMachine.Version round trips; it returns the median.
func versionRTT(t *testing.T, c net.Conn, n int) time.Duration {
	t.Helper()
	defer c.Close()
	c.SetDeadline(time.Now().Add(60 * time.Second))
	if err := jdwp.WriteHandshake(c); err != nil {
		t.Fatal(err)
	}
	if err := jdwp.ReadHandshake(c); err != nil {
		t.Fatal(err)
	}
	r := jdwp.NewReader(c, 0)
	var d []time.Duration
	for i := range n {
		start := time.Now()
		if _, err := c.Write(jdwp.AppendCommand(nil, uint32(i+1), jdwp.CmdVirtualMachineVersion, nil)); err != nil {
			t.Fatal(err)
		}
		for {
			p, err := r.Next()
			if err != nil {
				t.Fatal(err)
			}
			if p.IsReply() && p.ID() == uint32(i+1) {
				break
			}
		}
		d = append(d, time.Since(start))
	}
	sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
	return d[len(d)/2]
}

// dialADBStream opens host:transport:SERIAL + jdwp:PID on the adb server
// (or front) at port.
func dialADBStream(t *testing.T, port int, serial string, pid int) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", "127.0.0.1:"+strconv.Itoa(port))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for _, req := range []string{"host:transport:" + serial, "jdwp:" + strconv.Itoa(pid)} {
		c.Write(adbfront.AppendRequest(nil, req))
		st := make([]byte, 4)
		if _, err := br.Read(st); err != nil || string(st) != "OKAY" {
			t.Fatalf("%s: %q %v", req, st, err)
		}
	}
	return c
}

// TestADBPathRoundTrips times one JDWP round trip (VirtualMachine.Version
// to a fake VM) along each path: direct, the adb server's own stream and
// forward, and the front's stream and forward without speculation. It
// fails only if a path breaks; the times are logged.
func TestADBPathRoundTrips(t *testing.T) {
	requireADB(t)
	ctx := testCtx(t)
	vm := startFakeVM(t)
	dev := startFakeDevice(t, vm.Addr())
	up := startADBServer(ctx, t)
	connectDevice(ctx, t, up, dev)
	front, _, _, _ := startFront(t, up, "--speculate=false", "--ddm=false")
	const n = 100
	dial := func(addr string) net.Conn {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	var out []string
	out = append(out, "direct "+versionRTT(t, dial(vm.Addr()), n).String())
	out = append(out, "adb-stream "+versionRTT(t, dialADBStream(t, up, dev, 4001), n).String())
	p := strings.TrimSpace(mustADB(ctx, t, up, "forward", "tcp:0", "jdwp:4001"))
	out = append(out, "adb-forward "+versionRTT(t, dial("127.0.0.1:"+p), n).String())
	out = append(out, "front-stream "+versionRTT(t, dialADBStream(t, front, dev, 4001), n).String())
	p = strings.TrimSpace(mustADB(ctx, t, front, "forward", "tcp:0", "jdwp:4001"))
	out = append(out, "front-forward "+versionRTT(t, dial("127.0.0.1:"+p), n).String())
	t.Logf("median JDWP round trip: %s", strings.Join(out, ", "))
}
