package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/bench/javavm"
	"github.com/jdwpaccel/jdwpaccel/ddmtap/fakevm"
	"github.com/jdwpaccel/jdwpaccel/feed"
	"github.com/jdwpaccel/jdwpaccel/internal/jdbtest"
	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
)

// feedItem is an event of a VM's event stream, or a reset (Reset set).
type feedItem struct {
	feed.Event
	Reset *feed.Reset
}

// followFeed reads the event stream at u (with Last-Event-ID lastID when
// not 0) into a channel, until ctx ends or the stream does.
func followFeed(t *testing.T, ctx context.Context, u string, lastID uint64) <-chan feedItem {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", u, nil)
	if lastID != 0 {
		req.Header.Set("Last-Event-ID", strconv.FormatUint(lastID, 10))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		resp.Body.Close()
		t.Fatalf("GET %s: %s", u, resp.Status)
	}
	out := make(chan feedItem, 1024)
	go func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(nil, 1<<20)
		var name, id string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "event: "):
				name = line[7:]
			case strings.HasPrefix(line, "id: "):
				id = line[4:]
			case strings.HasPrefix(line, "data: "):
				var it feedItem
				if name == "reset" {
					it.Reset = new(feed.Reset)
					if err := json.Unmarshal([]byte(line[6:]), it.Reset); err != nil {
						t.Errorf("reset %s: %v", line, err)
						return
					}
				} else if err := json.Unmarshal([]byte(line[6:]), &it.Event); err != nil || strconv.FormatUint(it.ID, 10) != id {
					t.Errorf("event %s (id line %q): %v", line, id, err)
					return
				}
				name, id = "", ""
				select {
				case out <- it:
				case <-ctx.Done():
					return
				}
			}
		}
	}()
	return out
}

// jdbStop matches the stops jdb prints: Breakpoint hit: "thread=main",
// Transcript.loop(), line=25 bci=4.
var jdbStop = regexp.MustCompile(`(Breakpoint hit|Step completed): "thread=([^"]+)", ([\w.$]+)\.([\w<>$]+)\(\), line=(\d+) bci=(\d+)`)

// readFeedUntil appends the events read from items to got until the last
// one is of kind want. It fails the test at the stream's end, at any reset
// (onReset says why none was due) and when deadline fires (missing says
// what did not come).
func readFeedUntil(t *testing.T, items <-chan feedItem, deadline <-chan time.Time, got []feed.Event, want feed.Kind, onReset, missing string) []feed.Event {
	t.Helper()
	for len(got) == 0 || got[len(got)-1].Kind != want {
		select {
		case it, ok := <-items:
			if !ok {
				t.Fatalf("the stream ended; events so far: %+v", got)
			}
			if it.Reset != nil {
				t.Fatalf("%s: %+v", onReset, it.Reset)
			}
			got = append(got, it.Event)
		case <-deadline:
			t.Fatalf("%s within a minute; events so far: %+v", missing, got)
		}
	}
	return got
}

// TestEventFeedRealJDB follows a jdb stepping session on OpenJDK through
// the proxy over its event stream, as a tracer would: it sees the session
// start, the VM start, the class prepare of the breakpoint's class, each
// stop jdb reports with jdb's thread and code index (bci) and, where jdb
// had read them, the class, method and line; and the session's end. The
// stream is cut after the first stop and resumed with Last-Event-ID: the
// two parts are the whole history, without loss or repeat.
func TestEventFeedRealJDB(t *testing.T) {
	b := jdwptest.JavaBuild(t)
	vm := jdwptest.StartJava(t, b, javavm.Transcript)
	addr, logs := startProxy(t, vm.Addr())
	events := monitorURL(t, logs) + "/api/v1/vms/" + url.PathEscape(vm.Addr()) + "/events"
	line, err := javavm.BreakpointLine(javavm.Transcript)
	if err != nil {
		t.Fatal(err)
	}
	script := []string{fmt.Sprintf("stop at Transcript:%d", line), "run", "next", "next", "step", "cont", "exit"}

	// The first part: up to the first stop.
	ctx1, cut := context.WithCancel(testCtx(t))
	first := followFeed(t, ctx1, events, 0)
	transcript := make(chan string, 1)
	go func() {
		tr, err := jdbtest.Run(testCtx(t), b, addr, script)
		if err != nil {
			t.Errorf("jdb: %v\nproxy log:\n%s", err, logs)
		}
		transcript <- tr
	}()
	deadline := time.After(time.Minute)
	got := readFeedUntil(t, first, deadline, nil, feed.KindStop, "a reset from a fresh stream", "no stop")
	cut()
	for range first { // drain what was read ahead: it is not the reader's
	}
	cursor := got[len(got)-1].ID

	// The second part, resumed after the cursor: to the session's end.
	rest := followFeed(t, testCtx(t), events, cursor)
	got = readFeedUntil(t, rest, deadline, got, feed.KindSessionEnd, "resumed within the history, got a reset", "no session end")
	tr := <-transcript
	for i := 1; i < len(got); i++ {
		if got[i].ID != got[i-1].ID+1 {
			t.Fatalf("event %d has ID %d after %d: lost or repeated", i, got[i].ID, got[i-1].ID)
		}
	}
	// The whole history, read afresh, is what the two parts read.
	whole := followFeed(t, testCtx(t), events, 0)
	for i, e := range got {
		it := <-whole
		if it.Reset != nil || it.ID != e.ID || it.Kind != e.Kind || it.Thread != e.Thread {
			t.Fatalf("event %d: the whole history has %+v, the resumed parts %+v", i, it, e)
		}
	}

	var (
		vmThread    feed.HexID
		transcriptC feed.HexID
		stops       []feed.Event
		starts      int
	)
	for _, e := range got {
		switch e.Kind {
		case feed.KindVMStart:
			vmThread = e.Thread
		case feed.KindClassPrepare:
			if e.Signature == "LTranscript;" {
				transcriptC = e.TypeID
			}
		case feed.KindThreadStart:
			if e.Thread == 0 {
				t.Errorf("a thread start without its thread: %+v", e)
			}
			starts++
		case feed.KindStop:
			stops = append(stops, e)
		}
	}
	if got[0].Kind != feed.KindSessionStart || vmThread == 0 || transcriptC == 0 || starts == 0 {
		t.Errorf("want the session start first, the VM start, thread starts and Transcript's prepare: %+v", got)
	}
	jdb := jdbStop.FindAllStringSubmatch(tr, -1)
	if len(jdb) != len(stops) || len(stops) != 5 {
		t.Fatalf("jdb stopped %d times, the feed has %d stops, want 5:\n%s\nfeed: %+v", len(jdb), len(stops), tr, stops)
	}
	named := 0
	for i, s := range stops {
		j := jdb[i]
		kind := map[string]string{"Breakpoint hit": "BREAKPOINT", "Step completed": "SINGLE_STEP"}[j[1]]
		bci, _ := strconv.ParseInt(j[6], 10, 64)
		if s.Event != kind || s.Location == nil || s.Location.Index != bci || s.Thread != vmThread || s.Session != got[0].Session {
			t.Errorf("stop %d: %+v at %+v; jdb: %s (thread %#x)", i, s, s.Location, j[0], vmThread)
			continue
		}
		if (j[3] == "Transcript") != (s.Location.Class == transcriptC) {
			t.Errorf("stop %d in class %#x; jdb: %s; Transcript is %#x", i, s.Location.Class, j[0], transcriptC)
		}
		if s.ThreadName != "" && s.ThreadName != j[2] {
			t.Errorf("stop %d: thread %q; jdb: %s", i, s.ThreadName, j[0])
		}
		if s.Location.MethodName != "" {
			named++
			l, _ := strconv.Atoi(j[5])
			want := "L" + strings.ReplaceAll(j[3], ".", "/") + ";"
			if s.Location.MethodName != j[4] || s.Location.ClassSignature != want || int(s.Location.Line) != l {
				t.Errorf("stop %d at %s.%s line %d; jdb: %s", i, s.Location.ClassSignature, s.Location.MethodName, s.Location.Line, j[0])
			}
		}
	}
	if named == 0 || stops[len(stops)-1].ThreadName != "main" {
		t.Errorf("no stop was named, though jdb had read the names before the last: %+v", stops)
	}
	t.Logf("%d events, %d thread starts, %d stops (%d named)", len(got), starts, len(stops), named)
	if testing.Verbose() {
		for _, e := range got {
			b, _ := json.Marshal(e)
			t.Logf("%s", b)
		}
	}
}

// TestEventFeedDDMThreads: with no debugger attached, the proxy's DDM
// monitor of an Android VM (fake Dalvik, churning threads) feeds the VM's
// thread changes to its event stream: the threads it announces, with
// their names, then births and deaths, each death of a thread the stream
// saw start.
func TestEventFeedDDMThreads(t *testing.T) {
	addr := startPageFakeVM(t, fakevm.Dalvik)
	_, logs := startProxy(t, addr, "--ddm=force", "--ddm-poll", "200ms")
	events := followFeed(t, testCtx(t), monitorURL(t, logs)+"/api/v1/vms/"+url.PathEscape(addr)+"/events", 0)
	alive := map[uint32]string{}
	starts, deaths := 0, 0
	deadline := time.After(time.Minute)
	for starts < 10 || deaths < 2 {
		select {
		case it, ok := <-events:
			if !ok {
				t.Fatalf("the stream ended after %d starts and %d deaths", starts, deaths)
			}
			e := it.Event
			if it.Reset != nil || e.Session != 0 || e.DDMThread == 0 {
				t.Fatalf("want DDM thread changes alone, got %+v (reset %+v)", e, it.Reset)
			}
			switch e.Kind {
			case feed.KindDDMThreadStart:
				if _, dup := alive[e.DDMThread]; dup || e.Name == "" {
					t.Fatalf("start of thread %d (%q), alive: %v", e.DDMThread, e.Name, alive)
				}
				alive[e.DDMThread] = e.Name
				starts++
			case feed.KindDDMThreadDeath:
				if name, ok := alive[e.DDMThread]; !ok || name != e.Name {
					t.Fatalf("death of thread %d (%q), alive: %v", e.DDMThread, e.Name, alive)
				}
				delete(alive, e.DDMThread)
				deaths++
			case feed.KindDDMThreadRename:
				if _, ok := alive[e.DDMThread]; !ok {
					t.Fatalf("rename of thread %d, alive: %v", e.DDMThread, alive)
				}
				alive[e.DDMThread] = e.Name
			default:
				t.Fatalf("unexpected %+v", e)
			}
		case <-deadline:
			t.Fatalf("after a minute: %d starts, %d deaths", starts, deaths)
		}
	}
}
