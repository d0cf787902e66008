package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/demo"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/web"
)

func getSnapshot(t *testing.T, url string) web.Snapshot {
	t.Helper()
	resp, err := http.Get(url + "api/v1/snapshot")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var s web.Snapshot
	if err := json.NewDecoder(resp.Body).Decode(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestDemoKeepTwoDebuggers runs "demo --keep" and attaches two debuggers
// in a row through the kept VM, link and proxy (the VM listens on a fixed
// port). The page lists the real JVM first and the fake DDM VM as
// simulated, shows the kept run's figures apart from the comparison's, and
// numbers sessions across runs.
func TestDemoKeepTwoDebuggers(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	var errOut jdwptest.Buffer
	go func() {
		done <- run(ctx, []string{"demo", "--keep", "--learn=false", "--rtt", "2ms", "--steps", "2", "--profile", "jdb-min",
			"--listen", "127.0.0.1:0", "--http-addr", "127.0.0.1:0"}, &env{stdout: pw, stderr: &errOut})
		pw.Close()
	}()
	defer func() {
		cancel()
		if code := <-done; code != exitOK {
			t.Errorf("demo exited %d; stderr:\n%s", code, errOut.String())
		}
	}()
	var out strings.Builder
	var url, addr string
	urlRE := regexp.MustCompile(`live monitor .*: (http://\S+/)`)
	addrRE := regexp.MustCompile(`jdwpaccel listens on (\S+)\. Attach`)
	sc := bufio.NewScanner(pr)
	for addr == "" && sc.Scan() {
		out.WriteString(sc.Text() + "\n")
		if m := urlRE.FindStringSubmatch(sc.Text()); m != nil {
			url = m[1]
		}
		if m := addrRE.FindStringSubmatch(sc.Text()); m != nil {
			addr = m[1]
		}
	}
	go io.Copy(io.Discard, pr) //nolint:errcheck // drain the rest
	if addr == "" || url == "" {
		t.Fatalf("demo printed no listen address or page URL:\n%s\nstderr:\n%s", out.String(), errOut.String())
	}

	s := getSnapshot(t, url)
	if len(s.VMs) != 2 || s.VMs[0].ID != demo.JVMID || !strings.Contains(s.VMs[1].App, "simulated (fake DDM VM)") {
		t.Errorf("page VMs %+v: want the demo's JVM first, then the simulated VM", s.VMs)
	}
	if !strings.Contains(s.VMs[0].App, "kept") {
		t.Errorf("the JVM's name %q does not say which run it is", s.VMs[0].App)
	}
	if len(s.VMs) == 2 && (s.VMs[0].Simulated || !s.VMs[1].Simulated) {
		t.Errorf("simulated flags %v, %v: want only the fake VM simulated", s.VMs[0].Simulated, s.VMs[1].Simulated)
	}
	if s.Accel.Run != "kept for your IDE" || len(s.Sessions) > 0 && s.Sessions[0].Run != "comparison run" {
		t.Errorf("run %q, sessions %+v: want the kept run's figures and the comparison's session labelled", s.Accel.Run, s.Sessions)
	}
	if s.Accel.Hits != 0 || s.Accel.Misses != 0 {
		t.Errorf("before any debugger attached to the kept VM, the page shows %+v: the comparison's figures", s.Accel)
	}
	if len(s.Sessions) != 1 || s.Sessions[0].ID != 1 {
		t.Errorf("sessions %+v, want the comparison's #1", s.Sessions)
	}

	for i := range 2 {
		res, err := javavm.RunDriver(ctx, b, javavm.DriverOptions{Addr: addr, Profile: javavm.ProfileIdeaLike, Debuggee: javavm.Deep, Steps: 2})
		if err != nil {
			t.Fatalf("debugger %d through the kept setup: %v\ndemo output:\n%s\nstderr:\n%s", i+1, err, out.String(), errOut.String())
		}
		if len(res.Stops) != 3 {
			t.Errorf("debugger %d: %d stops, want 3", i+1, len(res.Stops))
		}
	}
	s = getSnapshot(t, url)
	var ids []uint64
	for _, ss := range s.Sessions {
		ids = append(ids, ss.ID)
	}
	if len(ids) != 3 || ids[0] == ids[1] || ids[1] == ids[2] || ids[0] == ids[2] {
		t.Errorf("session numbers %v: want 3 distinct ones (1 comparison, 2 kept)", ids)
	}
	if s.Accel.Hits == 0 {
		t.Errorf("the kept run's figures show no hits after two debuggers: %+v", s.Accel)
	}
	// The JVM's threads come from the latest debugger's conversation.
	if s.VMs[0].Threads != web.ThreadsJDWP || len(s.Threads[demo.JVMID]) < 20 {
		t.Errorf("the demo JVM's threads: %q, %d rows", s.VMs[0].Threads, len(s.Threads[demo.JVMID]))
	}
}

// TestDemoMeasuresAsTheTable runs the demo as the README's Results table
// is measured (a session that learns the debugger first, the breakpoint
// stop and one step not measured) and with --learn=false, and checks that
// each says how it measured and that the learning sessions are not among
// the measured cells.
func TestDemoMeasuresAsTheTable(t *testing.T) {
	jdwptest.JavaBuild(t)
	for _, c := range []struct {
		learn string
		want  []string
	}{
		{"--learn=true", []string{"not measured: jdwpaccel learns this debugger", "measured as the README's Results table"}},
		{"--learn=false", []string{"measured on a first session (--learn=false)"}},
	} {
		t.Run(c.learn, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			var out, errOut jdwptest.Buffer
			code := run(ctx, []string{"demo", c.learn, "--rtt", "2ms", "--steps", "2", "--profile", "jdb-min", "--http-addr", ""},
				&env{stdout: &out, stderr: &errOut})
			if code != exitOK {
				t.Fatalf("demo exited %d\n%s\nstderr:\n%s", code, out.String(), errOut.String())
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) {
					t.Errorf("demo output lacks %q:\n%s", w, out.String())
				}
			}
			if runs := regexp.MustCompile(`run \d+ of (\d+):`).FindAllStringSubmatch(out.String(), -1); len(runs) != 3 || runs[0][1] != "3" {
				t.Errorf("measured runs %q: want direct, jdwpaccel and split, 3 in all", runs)
			}
			if !strings.Contains(out.String(), "digest check: OK") {
				t.Errorf("no digest check:\n%s", out.String())
			}
		})
	}
}
