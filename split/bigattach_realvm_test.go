package split

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/link"
	"github.com/jdwpaccel/jdwpaccel/internal/jdktest"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/rs/zerolog"
)

// loadMany loads and links every class named in the file args[0] (so a
// debugger's AllClasses lists them), then waits for debuggers.
const loadMany = `import java.nio.file.*;
public class LoadMany {
  public static void main(String[] a) throws Exception {
    int n = 0;
    for (String l : Files.readAllLines(Path.of(a[0]))) {
      try { Class.forName(l.replace('/', '.'), false, ClassLoader.getSystemClassLoader()).getDeclaredFields(); n++; } catch (Throwable t) {}
    }
    System.out.println("loaded " + n);
    Thread.sleep(600000);
  }
}
`

// bigVM starts a JVM that loads n of the JDK's classes and returns a
// channel of the addresses its JDWP agent listens on: a new one after
// each debugger detaches.
func bigVM(t *testing.T, n int) <-chan string {
	t.Helper()
	jdktest.RequireJDK(t)
	dir := t.TempDir()
	var names []string
	names = append(names, jdkClassNames(t, n)...)
	if err := os.WriteFile(filepath.Join(dir, "classes.txt"), []byte(strings.Join(names, "\n")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "LoadMany.java"), []byte(loadMany), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("javac", "-d", dir, filepath.Join(dir, "LoadMany.java")).CombinedOutput(); err != nil {
		t.Fatalf("javac: %v: %s", err, out)
	}
	cmd := exec.Command("java", "-agentlib:jdwp=transport=dt_socket,server=y,suspend=n,address=127.0.0.1:0",
		"-cp", dir, "LoadMany", filepath.Join(dir, "classes.txt"))
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addrs := make(chan string, 16)
	loaded := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			l := sc.Text()
			if port, ok := strings.CutPrefix(l, "Listening for transport dt_socket at address: "); ok {
				addrs <- "127.0.0.1:" + strings.TrimSpace(port)
			} else if strings.HasPrefix(l, "loaded ") {
				loaded <- l
			}
		}
		close(addrs)
	}()
	select {
	case l := <-loaded:
		t.Logf("the VM %s classes", l)
	case <-time.After(2 * time.Minute):
		t.Fatal("the VM did not load its classes in time")
	}
	return addrs
}

// classSignatures parses an AllClassesWithGeneric reply body (HotSpot's
// 8-byte reference type IDs) into its classes' tags, signatures, generic
// signatures and statuses, sorted.
func classSignatures(t *testing.T, body []byte) []string {
	t.Helper()
	str := func() string {
		n := int(binary.BigEndian.Uint32(body))
		s := string(body[4 : 4+n])
		body = body[4+n:]
		return s
	}
	n := int(binary.BigEndian.Uint32(body))
	body = body[4:]
	out := make([]string, 0, n)
	for range n {
		tag := body[0]
		body = body[9:]
		sig, gen := str(), str()
		out = append(out, fmt.Sprintf("%d %s %s %d", tag, sig, gen, binary.BigEndian.Uint32(body)))
		body = body[4:]
	}
	if len(body) != 0 {
		t.Fatalf("%d bytes after the classes", len(body))
	}
	slices.Sort(out)
	return out
}

// jdkClassNames lists up to n class names of the JDK's module image.
func jdkClassNames(t testing.TB, n int) []string {
	java, err := exec.LookPath("java")
	if err == nil {
		java, err = filepath.EvalSymlinks(java)
	}
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Dir(filepath.Dir(java))
	out, err := exec.Command(filepath.Join(home, "bin", "jimage"), "list", filepath.Join(home, "lib", "modules")).Output()
	if err != nil {
		t.Fatalf("jimage list: %v", err)
	}
	var names []string
	for l := range strings.Lines(string(out)) {
		l = strings.TrimSpace(l)
		if name, ok := strings.CutSuffix(l, ".class"); ok && !strings.HasSuffix(name, "module-info") && len(names) < n {
			names = append(names, name)
		}
	}
	return names
}

// TestCompressedBigAttachRealVM asks a real VM with 15,000 of the JDK's
// classes loaded for AllClassesWithGeneric (the attach's biggest reply)
// through both ends over a 1 MB/s link, plain and compressed: the reply
// must be the same, and the compressed link must carry it in far fewer
// bytes.
func TestCompressedBigAttachRealVM(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a JVM with 15,000 classes")
	}
	addrs := bigVM(t, 15000)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var replies [][]byte
	var down []int64
	for _, compress := range []bool{false, true} {
		var vmAddr string
		select {
		case vmAddr = <-addrs:
		case <-ctx.Done():
			t.Fatal("the VM's agent did not listen again")
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		far := NewFar(FarConfig{Relay: relay.Config{DialVM: relay.DialTCP(vmAddr), Logger: zerolog.Nop()}, Compress: compress, ResumeWithin: time.Minute})
		fctx, stopFar := context.WithCancel(ctx)
		farDone := make(chan error, 1)
		go func() { farDone <- far.Serve(fctx, ln) }()
		lk, err := link.Listen(ctx, "127.0.0.1:0", ln.Addr().String(), link.Config{RTT: 5 * time.Millisecond, Bandwidth: 1000000, Seed: 1}, zerolog.Nop())
		if err != nil {
			t.Fatal(err)
		}
		d, err := jdwptest.Attach(startNear(t, NearConfig{Addr: lk.Addr().String(), Compress: compress, ResumeWithin: time.Minute}))
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		p, err := d.Call(jdwp.CmdVirtualMachineAllClassesWithGeneric, nil)
		if err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		d.Close()
		lk.Close()
		stopFar()
		<-farDone
		dn := lk.Bytes().BToA
		t.Logf("compress %v: AllClassesWithGeneric, %d bytes, in %v; the link carried %d bytes far → near", compress, len(p), took.Round(time.Millisecond), dn)
		replies = append(replies, bytes.Clone(p.Body()))
		down = append(down, dn)
	}
	// Each session numbers the classes its own way: compare what it says
	// of them.
	if a, b := classSignatures(t, replies[0]), classSignatures(t, replies[1]); !slices.Equal(a, b) {
		t.Errorf("the reply differs: %d classes plain, %d compressed", len(a), len(b))
	}
	if len(replies[0]) < 500000 {
		t.Errorf("AllClassesWithGeneric of %d bytes: the VM did not load its classes", len(replies[0]))
	}
	if down[1]*3 > down[0] {
		t.Errorf("the compressed link carried %d bytes, the plain one %d: want a third at most", down[1], down[0])
	}
}
