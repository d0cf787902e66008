package javavm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// VMOptions tunes Start. The zero value is fine.
type VMOptions struct {
	// JVMArgs are extra JVM flags, placed before the main class.
	JVMArgs []string
	// Args are the program's arguments.
	Args []string
	// StartTimeout bounds the wait for the agent's "Listening" line
	// (default 30s).
	StartTimeout time.Duration
	// Dir is the JVM's working directory (default: the caller's).
	Dir string
	// FixedPort makes Start pick a free port first and start the agent on
	// it, so that the agent listens on the same port again after a
	// debugger detaches; with the default, address=127.0.0.1:0, it picks a
	// new port every time and a second debugger must learn it (NextListen).
	FixedPort bool
}

// DefaultVMArgs are the JVM flags Start always passes (before
// VMOptions.JVMArgs): a small serial-GC heap keeps a 2-core machine calm.
var DefaultVMArgs = []string{"-XX:+UseSerialGC", "-Xmx128m"}

// VM is a debuggee JVM started with the JDWP agent listening on a loopback
// port and suspended until a debugger attaches (suspend=y). Stop it with
// Stop; it is also killed when the context given to Start is cancelled.
type VM struct {
	cmd *exec.Cmd
	out *LockedBuffer

	mu      sync.Mutex // guards port and listens
	port    int        // the port of the latest announcement taken
	listens int        // announcements taken so far

	done    chan struct{} // closed once the process has been waited for
	waitErr error         // written before done is closed

	stopOnce sync.Once
}

// ErrVMExited is returned by Start when the JVM exits before listening.
var ErrVMExited = errors.New("javavm: JVM exited before the JDWP agent listened")

// listenRE matches the agent's announcement of its port on stdout.
var listenRE = regexp.MustCompile(`Listening for transport dt_socket at address: (\d+)`)

// parseListeningPorts returns the ports of every announcement, in order;
// the agent announces again, on a new port, after a debugger detaches.
func parseListeningPorts(out []byte) []int {
	var ports []int
	for _, m := range listenRE.FindAllSubmatch(out, -1) {
		p, err := strconv.Atoi(string(m[1]))
		if err != nil || p <= 0 || p > 65535 {
			continue
		}
		ports = append(ports, p)
	}
	return ports
}

// Start runs
//
//	java -agentlib:jdwp=transport=dt_socket,server=y,suspend=y,address=127.0.0.1:0 -cp <classes> mainClass
//
// (with opts.FixedPort, a free port instead of 0) and returns once the agent
// has announced its port. The JVM is killed when ctx is cancelled or Stop is
// called.
func Start(ctx context.Context, b *Build, mainClass string, opts VMOptions) (*VM, error) {
	if !opts.FixedPort {
		return start(ctx, b, mainClass, opts, 0)
	}
	// Another process may take the free port between its choice and the
	// agent's bind; then the JVM exits, and another port is tried.
	var err error
	for range 3 {
		var port int
		if port, err = FreePort(); err != nil {
			return nil, err
		}
		var v *VM
		if v, err = start(ctx, b, mainClass, opts, port); err == nil {
			return v, nil
		}
		if !errors.Is(err, ErrVMExited) {
			return nil, err
		}
	}
	return nil, err
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago,
// for an agent that must listen on the same port again after each
// debugger (FixedPort). It is taken from below the kernel's ephemeral
// range, so no other program's "port 0" listener or outgoing connection
// can be given it meanwhile: only another program that picks ports the
// same way could collide, and Start then tries another.
func FreePort() (int, error) {
	low := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil && n > 2048 {
				low = n
			}
		}
	}
	span := low - 1024
	base := rand.IntN(span)
	for i := range 64 {
		port := 1024 + (base+i*7919)%span
		ln, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			continue
		}
		ln.Close()
		return port, nil
	}
	return 0, errors.New("javavm: no free port below the ephemeral range")
}

func start(ctx context.Context, b *Build, mainClass string, opts VMOptions, port int) (*VM, error) {
	args := []string{"-agentlib:jdwp=transport=dt_socket,server=y,suspend=y,address=127.0.0.1:" + strconv.Itoa(port)}
	args = append(args, DefaultVMArgs...)
	args = append(args, opts.JVMArgs...)
	args = append(args, "-cp", b.Classes, mainClass)
	args = append(args, opts.Args...)
	v := &VM{out: NewLockedBuffer(), done: make(chan struct{})}
	v.cmd = exec.CommandContext(ctx, "java", args...)
	v.cmd.Dir = opts.Dir
	v.cmd.Stdout = v.out
	v.cmd.Stderr = v.out
	if err := v.cmd.Start(); err != nil {
		return nil, fmt.Errorf("javavm: starting java: %w", err)
	}
	go func() {
		v.waitErr = v.cmd.Wait()
		close(v.done)
	}()

	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	tctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if _, err := v.NextListen(tctx); err != nil {
		v.Stop()
		if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
			return nil, fmt.Errorf("javavm: JDWP agent did not listen within %v:\n%s", timeout, v.out.Bytes())
		}
		return nil, err
	}
	return v, nil
}

// NextListen waits for the agent's next "Listening" announcement not yet
// taken, makes its port the VM's Port, and returns the new Addr. Start takes
// the first. The agent announces again, on a new port, after a debugger
// detaches (VirtualMachine.dispose), so call NextListen before attaching a
// second debugger to the same VM.
func (v *VM) NextListen(ctx context.Context) (string, error) {
	v.mu.Lock()
	want := v.listens + 1
	v.mu.Unlock()
	for {
		data, _, changed := v.out.Snapshot(0)
		if ports := parseListeningPorts(data); len(ports) >= want {
			v.mu.Lock()
			v.listens = want
			v.port = ports[want-1]
			v.mu.Unlock()
			return v.Addr(), nil
		}
		select {
		case <-changed:
		case <-v.done:
			data, _, _ := v.out.Snapshot(0)
			if len(parseListeningPorts(data)) >= want {
				continue
			}
			return "", fmt.Errorf("%w: %v\n%s", ErrVMExited, v.waitErr, data)
		case <-ctx.Done():
			return "", ctx.Err()
		}
	}
}

// redialTimeout bounds how long Dial waits for the agent to listen again.
const redialTimeout = 30 * time.Second

// Dial connects to the agent. When the agent refuses (a debugger has just
// detached and the agent is not listening again yet), it waits for the
// agent's next "Listening" announcement and tries again, for up to 30 s.
// With VMOptions.FixedPort the agent comes back on the same port, so Dial
// serves as the dial function of a link or proxy in front of the VM for
// any number of debuggers in a row.
func (v *VM) Dial(ctx context.Context) (net.Conn, error) {
	ctx, cancel := context.WithTimeout(ctx, redialTimeout)
	defer cancel()
	var d net.Dialer
	for {
		c, err := d.DialContext(ctx, "tcp", v.Addr())
		if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
			return c, err
		}
		if _, lerr := v.NextListen(ctx); lerr != nil {
			return nil, fmt.Errorf("%w (waiting for the agent to listen again: %v)", err, lerr)
		}
	}
}

// Port is the agent's TCP port on 127.0.0.1 (from the latest announcement
// taken by Start or NextListen).
func (v *VM) Port() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.port
}

// Addr is the agent's address, "127.0.0.1:port".
func (v *VM) Addr() string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(v.Port())) }

// Pid is the JVM's process id.
func (v *VM) Pid() int { return v.cmd.Process.Pid }

// Output is everything the JVM wrote to stdout and stderr so far.
func (v *VM) Output() string { return string(v.out.Bytes()) }

// Done is closed when the JVM process has exited and been reaped.
func (v *VM) Done() <-chan struct{} { return v.done }

// Stop kills the JVM and waits for it to be reaped. It is idempotent and
// safe to call from t.Cleanup and from several goroutines.
func (v *VM) Stop() {
	v.stopOnce.Do(func() {
		_ = v.cmd.Process.Kill() // an already-exited process is fine
	})
	<-v.done
}

// LockedBuffer is an io.Writer that keeps everything written and wakes
// waiters on every write (Snapshot).
type LockedBuffer struct {
	mu      sync.Mutex    // guards buf and changed
	buf     bytes.Buffer  // everything written so far
	changed chan struct{} // closed and replaced on every write
}

// NewLockedBuffer returns an empty LockedBuffer.
func NewLockedBuffer() *LockedBuffer {
	return &LockedBuffer{changed: make(chan struct{})}
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	n, err := b.buf.Write(p)
	close(b.changed)
	b.changed = make(chan struct{})
	return n, err
}

// Bytes returns a copy of everything written so far.
func (b *LockedBuffer) Bytes() []byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	return bytes.Clone(b.buf.Bytes())
}

// Snapshot returns a copy of the bytes from off on, the new length, and the
// channel closed at the next write, atomically, so a waiter cannot miss a
// write between reading and waiting.
func (b *LockedBuffer) Snapshot(off int) ([]byte, int, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	all := b.buf.Bytes()
	if off > len(all) {
		off = len(all)
	}
	return bytes.Clone(all[off:]), len(all), b.changed
}
