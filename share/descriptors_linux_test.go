//go:build linux

package share_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/share"
	"github.com/rs/zerolog"
)

// dialHelperEnv makes this test binary, run as a child of
// TestProxyOutlivesRunningOutOfDescriptors, a client that connects to the
// address it names once it reads a line on its standard input, then holds
// the connection until its input ends.
const dialHelperEnv = "JDWPACCEL_TEST_DIAL_HELPER"

func TestMain(m *testing.M) {
	if addr := os.Getenv(dialHelperEnv); addr != "" {
		os.Exit(dialHelper(addr))
	}
	os.Exit(m.Run())
}

func dialHelper(addr string) int {
	in := bufio.NewReader(os.Stdin)
	if _, err := in.ReadString('\n'); err != nil {
		return 1
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return 1
	}
	defer c.Close()
	io.Copy(io.Discard, in) //nolint:errcheck // holds the connection until the parent is done
	return 0
}

// A proxy whose process runs out of file descriptors (a flood of
// connections can do that) fails to accept a connection: it must wait and
// accept it later, not stop listening and end every debugger's session.
// The connection comes from another process, so that the descriptor the
// proxy lacks is the only one this process needs.
func TestProxyOutlivesRunningOutOfDescriptors(t *testing.T) {
	vm := jdwptest.StartVM(t, jdwptest.Script{Replies: map[jdwp.Cmd]jdwptest.ReplyFunc{
		jdwp.CmdVirtualMachineIDSizes: jdwptest.Body(jdwp.AppendIDSizes(nil, sizes8)),
	}})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	logs := &jdwptest.Buffer{}
	front := share.NewFront("test-vm", share.Config{Logger: zerolog.New(logs)})
	srv := relay.NewServer(relay.Config{DialVM: relay.DialTCP(vm.Addr()), Logger: zerolog.New(logs)})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- share.Serve(ctx, srv, front, ln, nil, 0) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the proxy's Serve: %v", err)
		}
	}()
	// A debugger that stays attached through the shortage.
	before := attachAt(t, ln.Addr().String())

	child := exec.Command(os.Args[0])
	child.Env = append(os.Environ(), dialHelperEnv+"="+ln.Addr().String())
	go1, err := child.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	child.Stderr = os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	defer child.Wait() //nolint:errcheck // it ends with its input
	defer go1.Close()

	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
		t.Fatal(err)
	}
	lowered := old
	lowered.Cur = lowestFreeDescriptor(t)
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lowered); err != nil {
		t.Fatal(err)
	}
	restored := false
	restore := func() {
		if !restored {
			restored = true
			if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &old); err != nil {
				t.Fatal(err)
			}
		}
	}
	defer restore()
	if _, err := go1.Write([]byte("dial\n")); err != nil {
		restore()
		t.Fatal(err)
	}
	jdwptest.Await(t, "the proxy to fail to accept the helper's connection", logs.Changed, func() (bool, string) {
		return strings.Contains(logs.String(), "cannot accept a connection now"), "no such log line"
	})
	restore()

	// The proxy accepts again: the debugger attached before it still works,
	// and a new one attaches.
	if r := call(t, before, jdwp.CmdVirtualMachineIDSizes, nil); r.ErrorCode() != 0 {
		t.Fatalf("the attached debugger's IDSizes after the shortage: error %d", r.ErrorCode())
	}
	after := attachAt(t, ln.Addr().String())
	if r := call(t, after, jdwp.CmdVirtualMachineIDSizes, nil); r.ErrorCode() != 0 {
		t.Fatalf("a new debugger's IDSizes after the shortage: error %d", r.ErrorCode())
	}
}

// lowestFreeDescriptor is the number the process's next descriptor would
// get: with RLIMIT_NOFILE lowered to it, opening any fails with EMFILE.
func lowestFreeDescriptor(t *testing.T) uint64 {
	t.Helper()
	d, err := os.Open("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	names, err := d.Readdirnames(-1)
	self := int(d.Fd())
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	var open []int
	for _, n := range names {
		if fd, err := strconv.Atoi(n); err == nil && fd != self {
			open = append(open, fd)
		}
	}
	slices.Sort(open)
	free := 0
	for _, fd := range open {
		if fd != free {
			break
		}
		free++
	}
	return uint64(free)
}
