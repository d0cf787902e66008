// Package javavm owns the Java side of jdwpaccel's tests and benchmarks:
// embedded Java debuggees, an IDE-like JDI workload driver, and helpers that
// compile them, start debuggee JVMs with the JDWP agent and run the driver
// (internal/jdbtest runs the real jdb against them).
//
// The Java sources under java/ are embedded and compiled at run time with
// javac into a cache directory keyed by a hash of the sources (Compile).
// Debuggees are started with Start; the workload driver with RunDriver.
// Tests that need a JDK call internal/jdktest.RequireJDK first (test
// support lives there, so this package does not link testing).
//
// Debuggees (main classes, all run until killed, print nothing themselves):
//
//   - Deep: a stop method 27 frames deep, 26 threads.
//   - Shallow: one frame of user code, 6 threads.
//   - NewClasses: each step (the driver steps into) enters a class never used
//     before, so class metadata is cold on nearly every stop.
//   - ToStringWatch: an object whose toString() the driver invokes per stop.
//   - HotSwap: calls HotTarget, which the driver redefines half way.
//   - Server: a pooled server, 200 worker threads parked on the pool's queue
//     and the main thread handling requests.
//   - Transcript: the debuggee of the jdb transcript tests.
//   - Shared: the debuggee of the shared-VM tests (several clients on one
//     VM): each turn of its loop starts and joins one thread, worker-N.
//   - BigApp: an application-sized VM: over 15,000 classes of the JDK's own
//     modules loaded before its first breakpoint, 40 pool threads, and a
//     HashMap and arrays in the stop method's locals. The driver attaches
//     to it as an IDE does to a real application (30 classes watched, most
//     never loaded) and shows its variables three levels deep. Its start-up
//     takes seconds: it is not in the default bench.
//
// Tracer is a JDI tool that only observes (the shared-VM tests' tracer):
// see its source for what it prints.
//
// Each has a breakpoint line marked "// @breakpoint" in its source; see
// BreakpointLine. Some have other breakpoint lines, never hit, marked
// "// @breakpoint-extra CLASS" (ExtraBreakpoints).
package javavm

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
)

//go:embed java
var javaSources embed.FS

// Debuggee main classes.
const (
	Deep          = "Deep"
	Shallow       = "Shallow"
	NewClasses    = "NewClasses"
	ToStringWatch = "ToStringWatch"
	HotSwap       = "HotSwap"
	Transcript    = "Transcript"
	Shared        = "Shared"
	Server        = "Server"
	BigApp        = "BigApp"
	// Layouts: 24 classes with different field layouts take turns in the
	// same locals (a test of the speculator's field IDs, not a benchmark).
	Layouts = "Layouts"
)

// Debuggees lists every debuggee main class.
var Debuggees = []string{Deep, Shallow, NewClasses, ToStringWatch, HotSwap, Transcript, Server, BigApp}

// breakpointMarker marks the breakpoint line in a debuggee's source;
// extraMarker, followed by the class name, the lines of other breakpoints.
const (
	breakpointMarker = "// @breakpoint"
	extraMarker      = "// @breakpoint-extra"
)

// compileFormat is mixed into the cache key; bump it when the javac
// invocation or the cache layout changes.
const compileFormat = "javavm-1 --release 17 -g"

// CacheEnv names an environment variable that, when set, replaces the cache
// root (default: os.UserCacheDir()/jdwpaccel/javavm).
const CacheEnv = "JDWPACCEL_JAVAVM_CACHE"

// Build is one compiled copy of the embedded Java sources. Its directories
// are immutable once Compile returned them.
type Build struct {
	// Dir is the root of this build in the cache.
	Dir string
	// Classes is the classpath holding every debuggee and Driver.
	Classes string
	// HotSwap holds the version-2 HotTarget.class the driver redefines with.
	HotSwap string
	// Source is the source root, for jdb -sourcepath.
	Source string
}

// compiled memoises Compile within a process.
var compiled struct {
	mu sync.Mutex // guards b
	b  *Build
}

// Compile compiles the embedded Java sources with javac, once per source
// hash: the result is cached on disk and in the process. It is safe for two
// processes to compile at once (each compiles into a temporary directory and
// renames it into place; the loser uses the winner's).
func Compile(ctx context.Context) (*Build, error) {
	compiled.mu.Lock()
	defer compiled.mu.Unlock()
	if compiled.b != nil {
		return compiled.b, nil
	}
	b, err := compile(ctx)
	if err != nil {
		return nil, err
	}
	compiled.b = b
	return b, nil
}

func cacheRoot() string {
	if d := os.Getenv(CacheEnv); d != "" {
		return d
	}
	d, err := os.UserCacheDir()
	if err != nil {
		d = os.TempDir()
	}
	return filepath.Join(d, "jdwpaccel", "javavm")
}

// sourceHash hashes every embedded file (path and contents) and the format.
func sourceHash() (string, error) {
	h := sha256.New()
	h.Write([]byte(compileFormat))
	var paths []string
	err := fs.WalkDir(javaSources, "java", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(paths)
	for _, p := range paths {
		data, err := javaSources.ReadFile(p)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "\x00%s\x00%d\x00", p, len(data))
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

func layout(dir string) *Build {
	return &Build{
		Dir:     dir,
		Classes: filepath.Join(dir, "classes"),
		HotSwap: filepath.Join(dir, "hotswap2"),
		Source:  filepath.Join(dir, "src"),
	}
}

// okFile marks a complete build directory.
const okFile = "ok"

func compile(ctx context.Context) (*Build, error) {
	sum, err := sourceHash()
	if err != nil {
		return nil, fmt.Errorf("javavm: hashing sources: %w", err)
	}
	root := cacheRoot()
	final := filepath.Join(root, sum)
	if _, err := os.Stat(filepath.Join(final, okFile)); err == nil {
		return layout(final), nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, fmt.Errorf("javavm: cache: %w", err)
	}
	tmp, err := os.MkdirTemp(root, "tmp-"+sum+"-")
	if err != nil {
		return nil, fmt.Errorf("javavm: cache: %w", err)
	}
	defer os.RemoveAll(tmp) // no-op after a successful rename
	b := layout(tmp)
	var top []string
	err = fs.WalkDir(javaSources, "java", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		dst := filepath.Join(b.Source, strings.TrimPrefix(p, "java"))
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		data, err := javaSources.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.Count(p, "/") == 1 && strings.HasSuffix(p, ".java") {
			top = append(top, dst)
		}
		return os.WriteFile(dst, data, 0o644)
	})
	if err != nil {
		return nil, fmt.Errorf("javavm: writing sources: %w", err)
	}
	sort.Strings(top)
	args := append([]string{"--release", "17", "-g", "-encoding", "UTF-8", "-d", b.Classes}, top...)
	if err := javac(ctx, args...); err != nil {
		return nil, err
	}
	if err := javac(ctx, "--release", "17", "-g", "-encoding", "UTF-8", "-cp", b.Classes, "-d", b.HotSwap,
		filepath.Join(b.Source, "hotswap2", "HotTarget.java")); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(tmp, okFile), []byte(sum+"\n"), 0o644); err != nil {
		return nil, fmt.Errorf("javavm: cache: %w", err)
	}
	if err := os.Rename(tmp, final); err != nil {
		// Another process may have won the race; its build is as good.
		if _, serr := os.Stat(filepath.Join(final, okFile)); serr == nil {
			return layout(final), nil
		}
		return nil, fmt.Errorf("javavm: cache: %w", err)
	}
	return layout(final), nil
}

func javac(ctx context.Context, args ...string) error {
	cmd := exec.CommandContext(ctx, "javac", args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("javavm: javac: %w\n%s", err, out)
	}
	return nil
}

// ErrNoBreakpoint is returned by BreakpointLine for an unknown debuggee or
// a source without the marker.
var ErrNoBreakpoint = errors.New("javavm: no breakpoint marker")

// BreakpointLine returns the 1-based line of the "// @breakpoint" marker in
// the debuggee's source file (java/<debuggee>.java); the breakpoint class is
// the debuggee itself.
func BreakpointLine(debuggee string) (int, error) {
	data, err := javaSources.ReadFile("java/" + debuggee + ".java")
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %v", ErrNoBreakpoint, debuggee, err)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		if strings.Contains(sc.Text(), breakpointMarker) && !strings.Contains(sc.Text(), extraMarker) {
			return n, nil
		}
	}
	return 0, fmt.Errorf("%w: %s", ErrNoBreakpoint, debuggee)
}

// ExtraBreakpoints returns the debuggee's other breakpoints, "Class:line"
// in source order, from its "// @breakpoint-extra CLASS" lines.
func ExtraBreakpoints(debuggee string) ([]string, error) {
	data, err := javaSources.ReadFile("java/" + debuggee + ".java")
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNoBreakpoint, debuggee, err)
	}
	var out []string
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		_, after, ok := strings.Cut(sc.Text(), extraMarker)
		if !ok {
			continue
		}
		class := strings.TrimSpace(after)
		if class == "" || strings.ContainsAny(class, " :,") {
			return nil, fmt.Errorf("%w: %s line %d: want %q followed by a class name", ErrNoBreakpoint, debuggee, n, extraMarker)
		}
		out = append(out, fmt.Sprintf("%s:%d", class, n))
	}
	return out, nil
}

// MaxBreakpoints is how many breakpoints DriverOptions.Breakpoints may ask
// for on the debuggee: its own and its extra ones.
func MaxBreakpoints(debuggee string) int {
	extra, err := ExtraBreakpoints(debuggee)
	if err != nil {
		return 1
	}
	return 1 + len(extra)
}
