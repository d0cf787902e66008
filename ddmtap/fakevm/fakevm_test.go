package fakevm

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// These tests check the fake VM's bytes against fixtures written by hand
// from the reference's layout tables (ddm/PROTOCOL.md §1.1, §2, §4), not
// through the ddm codec.

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(strings.NewReplacer(" ", "", "|", "").Replace(s))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// u16 spells an ASCII string as big-endian UTF-16 hex.
func u16(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		fmt.Fprintf(&b, "00%02x", c)
	}
	return b.String()
}

type client struct {
	t *testing.T
	c net.Conn
	r *jdwp.Reader
}

func start(t *testing.T, cfg Config) (*VM, *client) {
	t.Helper()
	vm, err := Listen("127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { vm.Serve(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	c, err := net.Dial("tcp", vm.Addr())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	c.SetDeadline(time.Now().Add(10 * time.Second))
	c.Write([]byte(jdwp.Handshake))
	if err := jdwp.ReadHandshake(c); err != nil {
		t.Fatal(err)
	}
	return vm, &client{t: t, c: c, r: jdwp.NewReader(c, 0)}
}

// request sends a (199,1) command with one chunk given as hex.
func (c *client) request(id uint32, chunkHex string) {
	c.t.Helper()
	chunk := unhex(c.t, chunkHex)
	if _, err := c.c.Write(jdwp.AppendCommand(nil, id, jdwp.CmdDDMChunk, chunk)); err != nil {
		c.t.Fatal(err)
	}
}

// expect reads the next packet and compares it with hex.
func (c *client) expect(what, wantHex string) {
	c.t.Helper()
	p, err := c.r.Next()
	if err != nil {
		c.t.Fatalf("%s: %v", what, err)
	}
	if want := unhex(c.t, wantHex); !bytes.Equal(p, want) {
		c.t.Fatalf("%s:\n got %x\nwant %x", what, []byte(p), want)
	}
}

func TestHELOReplyPerProfile(t *testing.T) {
	// HELO request: type "HELO", length 4, server protocol version 1.
	const helo = "48454c4f 00000004 00000001"
	cases := []struct {
		p    Profile
		data string
	}{
		{Design2007, "00000001 00001092 0000000b 00000003 |" + u16("Dalvik v0.9") + u16("app")},
		{Dalvik, "00000001 00001092 0000000d 00000003 |" + u16("Dalvik v1.6.0") + u16("app") +
			"| 00000000 | 0000000b" + u16("armeabi-v7a") + "| 0000000e" + u16("CheckJNI=false")},
		{ART, "00000001 00001092 0000000d 00000003 |" + u16("Dalvik v2.1.0") + u16("app") +
			"| 00000000 | 0000000e" + u16("64-bit (arm64)") + "| 0000000e" + u16("CheckJNI=false") + "| 00 | 00000003" + u16("app")},
	}
	for _, tc := range cases {
		t.Run(tc.p.String(), func(t *testing.T) {
			_, c := start(t, Config{Profile: tc.p, AppName: "app"})
			c.request(0x50000001, helo)
			data := unhex(t, tc.data)
			// reply: length | id | flags 0x80 | error 0 | chunk "HELO" + length + data
			c.expect("HELO reply", fmt.Sprintf("%08x 50000001 80 0000 48454c4f %08x %x", 11+8+len(data), len(data), data))
		})
	}
}

func TestWAITBeforeHELO(t *testing.T) {
	_, c := start(t, Config{Profile: Dalvik, WaitForDebugger: true})
	c.request(1, "48454c4f 00000004 00000001")
	// VM-originated (199,1) command, Dalvik id 0x10000001: "WAIT", length 1, reason 0.
	c.expect("WAIT", "00000014 10000001 00 c7 01 57414954 00000001 00")
}

func TestThreadsFixtures(t *testing.T) {
	for _, tc := range []struct {
		p          Profile
		firstID    string
		thst       string
		nullReplyd bool
	}{
		{Dalvik, "10000001", "04 12 0001 | 00000001 01 00001092 0000000a 00000005 00", true},
		{Design2007, "10000001", "00000001 | 00000001 01 00", true},
		{ART, "80000001", "04 12 0001 | 00000001 01 00001092 0000000a 00000005 00", false},
	} {
		t.Run(tc.p.String(), func(t *testing.T) {
			_, c := start(t, Config{Profile: tc.p, Threads: -1})
			c.request(7, "5448454e 00000001 01") // THEN enable
			// THCR for main: id 1, name "main" (lstr).
			c.expect("THCR", "00000023 "+tc.firstID+" 00 c7 01 54484352 00000010 00000001 00000004"+u16("main"))
			if tc.nullReplyd {
				c.expect("THEN empty reply", "0000000b 00000007 80 0000")
			}
			c.request(8, "54485354 00000000") // THST
			data := unhex(t, tc.thst)
			c.expect("THST reply", fmt.Sprintf("%08x 00000008 80 0000 54485354 %08x %x", 19+len(data), len(data), data))
		})
	}
}

func TestHeapWalkFixture(t *testing.T) {
	heap := []Element{{State: 0x09, Units: 3}, {State: 0x00, Units: 2}, {State: 0x11, Units: 300}}
	_, c := start(t, Config{Profile: Dalvik, Heap: heap})
	c.request(1, "48505347 00000002 01 00") // HPSG when=1 what=0
	c.expect("HPSG empty reply", "0000000b 00000001 80 0000")
	c.request(2, "48504743 00000000") // HPGC
	c.expect("HPST", "00000017 10000001 00 c7 01 48505354 00000004 00000001")
	// heap 1 | unit 8 | start 0x12c00000 | offset 0 | 305 units | runs with a partial pair for 300 units
	c.expect("HPSG", "0000002c 10000002 00 c7 01 48505347 00000019 00000001 08 12c00000 00000000 00000131 0902 0001 91ff 112b")
	c.expect("HPEN", "00000017 10000003 00 c7 01 4850454e 00000004 00000001")
	c.expect("HPGC empty reply", "0000000b 00000002 80 0000")
}

func TestHPIFFixture(t *testing.T) {
	at := time.UnixMilli(0x18f00000000)
	heap := []Element{{State: 0x01, Units: 4}, {State: 0x00, Units: 4}}
	_, c := start(t, Config{Profile: Dalvik, Heap: heap, Now: func() time.Time { return at }})
	c.request(1, "48504946 00000001 01") // HPIF now
	// count 1 | heap 1 | ts | reason 1 | max 256 MiB | size 64 | allocated 32 | objects 1
	c.expect("HPIF", "00000034 10000001 00 c7 01 48504946 00000021 00000001 00000001 0000018f00000000 01 10000000 00000040 00000020 00000001")
	c.expect("HPIF empty reply", "0000000b 00000001 80 0000")
}

func TestARTIgnoresHeapUntilAgent(t *testing.T) {
	vm, c := start(t, Config{Profile: ART})
	c.request(1, "48504946 00000001 01") // HPIF: no handler, no reply
	c.request(2, "48454c4f 00000004 00000001")
	p, err := c.r.Next()
	if err != nil || p.ID() != 2 {
		t.Fatalf("first packet after HPIF should be the HELO reply (id 2): %v %v", p, err)
	}
	// A non-DDM packet loads the agent: now null results give empty replies.
	c.c.Write(jdwp.AppendCommand(nil, 3, jdwp.CmdIDSizes, nil))
	if p, err := c.r.Next(); err != nil || p.ID() != 3 || p.ErrorCode() != 0 {
		t.Fatalf("IDSizes reply %v %v", p, err)
	}
	c.request(4, "48504946 00000001 01")
	c.expect("empty reply with the agent loaded", "0000000b 00000004 80 0000")
	if s := vm.Stats(); !s.DebuggerAttached || s.NonDDMPackets != 1 || s.DDMRequests["HPIF"] != 2 {
		t.Fatalf("stats %+v", s)
	}
}

func TestMPRQPerProfile(t *testing.T) {
	for _, tc := range []struct {
		p     Profile
		reply string
	}{
		// reply: MPRQ chunk, length 1, 0 = no method profiling running
		{Dalvik, "00000014 00000009 80 0000 4d505251 00000001 00"},
		{ART, "00000014 00000009 80 0000 4d505251 00000001 00"},
		{Design2007, "0000000b 00000009 80 0000"}, // no handler: empty reply
	} {
		t.Run(tc.p.String(), func(t *testing.T) {
			_, c := start(t, Config{Profile: tc.p})
			c.request(9, "4d505251 00000000")
			c.expect("MPRQ reply", tc.reply)
		})
	}
}

func TestChurnStatusesPerProfile(t *testing.T) {
	for p, max := range map[Profile]uint8{Design2007: 8, Dalvik: 9, ART: 4} {
		vm, err := Listen("127.0.0.1:0", Config{Profile: p, Seed: 3, Threads: 6})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[uint8]bool{}
		for i := 0; i < 200; i++ {
			vm.Churn()
			for _, th := range vm.Threads() {
				seen[th.Status] = true
			}
		}
		vm.ln.Close()
		for s := range seen {
			if s < 1 || s > max {
				t.Fatalf("%v: status %d outside 1..%d", p, s, max)
			}
		}
		if !seen[max] {
			t.Fatalf("%v: status %d never produced in 200 steps: %v", p, max, seen)
		}
	}
}
