package adbdevice

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// host is a test adb server's side of a transport connection.
type host struct {
	t *testing.T
	c net.Conn
}

func (h *host) send(m Message) {
	h.t.Helper()
	if _, err := h.c.Write(AppendMessage(nil, m)); err != nil {
		h.t.Fatal(err)
	}
}

func (h *host) recv() Message {
	h.t.Helper()
	h.c.SetReadDeadline(time.Now().Add(10 * time.Second))
	m, err := ReadMessage(h.c, 0, true)
	if err != nil {
		h.t.Fatalf("reading from the device: %v", err)
	}
	return m
}

func (h *host) expect(cmd Command, arg1 uint32) Message {
	h.t.Helper()
	m := h.recv()
	if m.Command != cmd || m.Arg1 != arg1 {
		h.t.Fatalf("got %s, want %s(_, %d)", m, cmd, arg1)
	}
	return m
}

// startDevice serves a device on one end of a TCP connection and returns
// the other end, past the CNXN exchange.
func startDevice(t *testing.T, cfg Config) (*host, chan error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	dc, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- New(cfg).ServeConn(ctx, dc) }()
	t.Cleanup(func() { cancel(); c.Close(); <-done })
	h := &host{t: t, c: c}
	h.send(Message{Command: CmdCNXN, Arg0: VersionMin, Arg1: 4096, Data: []byte("host::features=shell_v2")})
	m := h.recv()
	if m.Command != CmdCNXN || !strings.HasPrefix(string(m.Data), "device::") || !strings.Contains(string(m.Data), "ro.product.model=jdwpaccel_fake;") {
		t.Fatalf("device answered CNXN with %s %q", m, m.Data)
	}
	return h, done
}

// readStream collects a stream's WRTEs, acknowledging each, until CLSE.
func (h *host) readStream(local uint32) string {
	h.t.Helper()
	var b strings.Builder
	for {
		m := h.recv()
		switch m.Command {
		case CmdWRTE:
			b.Write(m.Data)
			h.send(Message{Command: CmdOKAY, Arg0: local, Arg1: m.Arg0})
		case CmdCLSE:
			return b.String()
		default:
			h.t.Fatalf("unexpected %s", m)
		}
	}
}

func TestDeviceShellAndJDWPList(t *testing.T) {
	h, _ := startDevice(t, Config{Processes: []Process{{PID: 7, Name: "a.b", Addr: "127.0.0.1:1"}, {PID: 9, Name: "c.d", Addr: "127.0.0.1:1"}}, Logger: zerolog.Nop()})
	for i, c := range []struct{ svc, want string }{
		{"shell:getprop ro.build.version.sdk\x00", "30\n"},
		{"shell:getprop ro.serialno\x00", "jdwpaccel-fake\n"},
		{"shell:pidof -s c.d\x00", "9\n"},
		{"shell:pidof nothing\x00", ""},
		{"exec:frobnicate\x00", "/system/bin/sh: frobnicate: inaccessible or not found\n"},
		{"jdwp\x00", "7\n9\n"},
		{"shell:cat /proc/9/cmdline\x00", "c.d\x00"},
		{"shell:cat /proc/8/cmdline\x00", "cat: /proc/8/cmdline: No such file or directory\n"},
		{"shell:cat /etc/hosts\x00", "cat: /etc/hosts: No such file or directory\n"},
	} {
		local := uint32(100 + i)
		h.send(Message{Command: CmdOPEN, Arg0: local, Data: []byte(c.svc)})
		ok := h.expect(CmdOKAY, local)
		if got := h.readStream(local); got != c.want {
			t.Errorf("%q answered %q, want %q", c.svc, got, c.want)
		}
		_ = ok
	}
	h.send(Message{Command: CmdOPEN, Arg0: 200, Data: []byte("track-jdwp\x00")})
	ok := h.expect(CmdOKAY, 200)
	m := h.expect(CmdWRTE, 200)
	if string(m.Data) != "00047\n9\n" {
		t.Errorf("track-jdwp sent %q", m.Data)
	}
	h.send(Message{Command: CmdOKAY, Arg0: 200, Arg1: ok.Arg0})
	h.send(Message{Command: CmdCLSE, Arg0: 200, Arg1: ok.Arg0})

	h.send(Message{Command: CmdOPEN, Arg0: 300, Data: []byte("sync:\x00")})
	if m := h.expect(CmdCLSE, 300); m.Arg0 != 0 {
		t.Errorf("refused OPEN answered %s, want CLSE(0, 300)", m)
	}
	h.send(Message{Command: CmdOPEN, Arg0: 301, Data: []byte("jdwp:8\x00")})
	h.expect(CmdCLSE, 301)
}

// TestDeviceJDWPStream relays a jdwp:PID stream to an echo server in
// pieces larger than the server's maxdata, with adb's one-WRTE-per-OKAY
// flow control.
func TestDeviceJDWPStream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		io.Copy(c, c) //nolint:errcheck
		c.Close()
	}()
	h, _ := startDevice(t, Config{Processes: []Process{{PID: 4001, Name: "x", Addr: ln.Addr().String()}}, Logger: zerolog.Nop()})
	h.send(Message{Command: CmdOPEN, Arg0: 5, Data: []byte("jdwp:4001\x00")})
	dev := h.expect(CmdOKAY, 5).Arg0
	payload := bytes.Repeat([]byte("0123456789abcdef"), 1000) // 16000 bytes: 4 WRTEs at maxdata 4096
	h.send(Message{Command: CmdWRTE, Arg0: 5, Arg1: dev, Data: payload})
	var got []byte
	acked := false
	for len(got) < len(payload) {
		m := h.recv()
		switch {
		case m.Command == CmdOKAY && m.Arg1 == 5:
			acked = true
		case m.Command == CmdWRTE && m.Arg1 == 5:
			if len(m.Data) > 4096 {
				t.Fatalf("device wrote %d bytes, more than the server's maxdata", len(m.Data))
			}
			got = append(got, m.Data...)
			h.send(Message{Command: CmdOKAY, Arg0: 5, Arg1: dev})
		default:
			t.Fatalf("unexpected %s", m)
		}
	}
	if !acked || !bytes.Equal(got, payload) {
		t.Fatalf("echo: acked %v, %d bytes equal %v", acked, len(got), bytes.Equal(got, payload))
	}
	h.send(Message{Command: CmdCLSE, Arg0: 5, Arg1: dev})
}

// TestDeviceBadInput: a corrupt header ends that connection with an error.
func TestDeviceBadInput(t *testing.T) {
	for name, bad := range map[string][]byte{
		"magic":   func() []byte { b := AppendMessage(nil, Message{Command: CmdOPEN, Arg0: 1}); b[20] ^= 1; return b }(),
		"command": AppendMessage(nil, Message{Command: 0x41414141, Arg0: 1}),
		"checksum": func() []byte {
			b := AppendMessage(nil, Message{Command: CmdWRTE, Data: []byte("x")})
			b[16]++
			return b
		}(),
		"auth": AppendMessage(nil, Message{Command: CmdAUTH, Arg0: 1, Data: []byte("token")}),
	} {
		t.Run(name, func(t *testing.T) {
			h, done := startDevice(t, Config{Logger: zerolog.Nop()})
			if _, err := h.c.Write(bad); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				done <- err // for the cleanup
				if err == nil {
					t.Error("ServeConn returned nil after bad input")
				}
			case <-time.After(10 * time.Second):
				t.Fatal("the device kept the connection after bad input")
			}
			h.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if _, err := h.c.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
				t.Errorf("connection not closed: %v", err)
			}
		})
	}
}

func TestMessageRoundTrip(t *testing.T) {
	m := Message{Command: CmdWRTE, Arg0: 3, Arg1: 9, Data: []byte("hello")}
	b := AppendMessage(nil, m)
	if len(b) != HeaderSize+5 {
		t.Fatalf("%d bytes", len(b))
	}
	got, err := ReadMessage(bytes.NewReader(b), 0, true)
	if err != nil || got.Command != m.Command || got.Arg0 != 3 || got.Arg1 != 9 || string(got.Data) != "hello" {
		t.Fatalf("got %v, %v", got, err)
	}
	if _, err := ReadMessage(bytes.NewReader(b), 4, false); !errors.Is(err, ErrTooLong) {
		t.Errorf("5 bytes with maxData 4: %v", err)
	}
	if _, err := ReadMessage(bytes.NewReader(b[:HeaderSize+2]), 0, false); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("truncated payload: %v", err)
	}
	if got := CmdCNXN.String(); got != "CNXN" {
		t.Errorf("CmdCNXN.String() = %q", got)
	}
}
