package journal

import (
	"bytes"
	"encoding/json"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/internal/jdwptest"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func readAll(t *testing.T, b []byte) []Record {
	t.Helper()
	recs, err := Read(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("reading the journal back: %v\n%s", err, b)
	}
	return recs
}

func count(recs []Record, pred func(r *Record) bool) int {
	n := 0
	for i := range recs {
		if pred(&recs[i]) {
			n++
		}
	}
	return n
}

func TestSessionJournalIsCoherent(t *testing.T) {
	out := session(t, Options{}, true, script)
	recs := readAll(t, out)
	if recs[0].Type != TypeHeader || recs[0].Schema != SchemaVersion || recs[0].Start == "" {
		t.Fatalf("first record %v, want a header", recs[0])
	}
	rep := Check(recs)
	if err := rep.Err(); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	// The script sends 8 commands; 1 hit, 1 belay; 2 synthetic commands.
	if rep.Commands != 8 || rep.Replies != 8 || rep.Synthetic != 2 || rep.Sessions != 1 {
		t.Errorf("report %+v, want 8 commands, 8 replies, 2 synthetic, 1 session", rep)
	}
	served := func(s string) func(r *Record) bool {
		return func(r *Record) bool { return r.IsCommandFromDebugger() && r.Served == s }
	}
	if n := count(recs, served(ServedCacheHit)); n != 1 {
		t.Errorf("%d cache-hit commands, want 1", n)
	}
	if n := count(recs, served(ServedBelay)); n != 1 {
		t.Errorf("%d belayed commands, want 1", n)
	}
	// No synthetic ID in the debugger view.
	for _, r := range DebuggerView(recs) {
		if r.ID >= synthBase {
			t.Errorf("synthetic ID in the debugger view: %v", r)
		}
	}
	// Replies carry names, latency, and the thread of their command.
	var sawName, sawEvent, sawSizes, sawHello bool
	for _, r := range recs {
		switch {
		case r.IsReplyToDebugger() && r.Name == "ThreadReference.Name":
			sawName = true
			if r.Served != ServedBelay || r.LatencyNs <= 0 || r.Thread == nil || *r.Thread != testThread {
				t.Errorf("belayed Name reply %v: want served belay, a latency and thread %#x", r, testThread)
			}
		case r.Kind == KindEvent:
			sawEvent = true
			if len(r.Events) != 1 || r.Events[0] != "BREAKPOINT" || r.Thread == nil || *r.Thread != testThread || r.View != ViewBoth {
				t.Errorf("event %v: want one BREAKPOINT on thread %#x in both views", r, testThread)
			}
		case r.Type == TypeIDSizes:
			sawSizes = r.IDSizes != nil && r.IDSizes.ObjectID == 8
		case r.Chunk == "HELO" && r.Kind == KindReply:
			sawHello = true
		}
		if r.Type == TypePacket && (len(r.Bytes) != r.Len || r.Truncated) {
			t.Errorf("packet %v: kept %d of %d bytes", r, len(r.Bytes), r.Len)
		}
		if r.Type == TypePacket && r.Len > 0 && jdwp.Packet(r.Bytes).ID() != r.ID {
			t.Errorf("packet %v: bytes carry ID %d", r, jdwp.Packet(r.Bytes).ID())
		}
	}
	if !sawName || !sawEvent || !sawSizes || !sawHello {
		t.Errorf("missing records: name reply %v, event %v, id sizes %v, DDM HELO reply %v", sawName, sawEvent, sawSizes, sawHello)
	}
	last := recs[len(recs)-1]
	if last.Type != TypeSessionEnd || last.PacketsLogged == 0 {
		t.Errorf("last record %v, want the session end", last)
	}
}

func TestProxiedConversationEqualsDirect(t *testing.T) {
	direct := readAll(t, session(t, Options{}, false, script))
	proxied := readAll(t, session(t, Options{}, true, script))
	for _, recs := range [][]Record{direct, proxied} {
		if err := Check(recs).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if err := SameConversation(direct, proxied); err != nil {
		t.Fatal(err)
	}
	// And the comparison can fail: drop one debugger packet.
	dv := DebuggerView(proxied)
	if err := SameConversation(direct, dv[1:]); err == nil {
		t.Fatal("SameConversation accepted a conversation with a packet missing")
	}
	// The wire views differ: the direct session has no synthetic traffic.
	if n := count(direct, func(r *Record) bool { return r.View == ViewWire }); n != 0 {
		t.Errorf("direct session has %d wire-only packets", n)
	}
	if n := count(proxied, func(r *Record) bool { return r.View == ViewWire }); n != 4 {
		t.Errorf("proxied session has %d wire-only packets, want 4 (2 synthetic commands, 2 replies)", n)
	}
}

func TestCheckFindsViolations(t *testing.T) {
	base := func() []Record {
		return []Record{
			{Type: TypeSessionStart, Session: 1},
			{Type: TypePacket, Session: 1, View: ViewBoth, Dir: DirToVM, Kind: KindCommand, ID: 1, Set: 1, Cmd: 1, Served: ServedForwarded},
			{Type: TypePacket, Session: 1, View: ViewBoth, Dir: DirToDebugger, Kind: KindReply, ID: 1, Set: 1, Cmd: 1, Served: ServedForwarded},
			{Type: TypeSessionEnd, Session: 1},
		}
	}
	if err := Check(base()).Err(); err != nil {
		t.Fatalf("a coherent journal: %v", err)
	}
	cases := map[string]func(r []Record) []Record{
		"reply without command": func(r []Record) []Record { r[2].ID = 2; return r },
		"two replies": func(r []Record) []Record {
			return append(r[:3], append([]Record{r[2]}, r[3:]...)...)
		},
		"no reply":              func(r []Record) []Record { return append(r[:2], r[3]) },
		"synthetic in debugger": func(r []Record) []Record { r[2].Served = ServedSynthetic; return r },
		"served mismatch": func(r []Record) []Record {
			r[2].Served, r[2].View = ServedCacheHit, ViewDebugger
			return r
		},
		"dropped": func(r []Record) []Record { return append(r, Record{Type: TypeDropped, DroppedCount: 3}) },
	}
	for name, mutate := range cases {
		if err := Check(mutate(base())).Err(); err == nil {
			t.Errorf("%s: Check found nothing", name)
		}
	}
}

func TestPerfettoTraceIsValid(t *testing.T) {
	out := session(t, Options{Format: FormatPerfetto}, true, script)
	var events []map[string]any
	if err := json.Unmarshal(out, &events); err != nil {
		t.Fatalf("not a JSON array: %v\n%s", err, out)
	}
	var spans, hits, belays, spec, instants, named int
	for _, e := range events {
		name, _ := e["name"].(string)
		switch e["ph"] {
		case "X":
			spans++
			if _, ok := e["dur"].(float64); !ok {
				t.Errorf("span without dur: %v", e)
			}
			switch {
			case strings.HasSuffix(name, "[cache hit]"):
				hits++
			case strings.HasSuffix(name, "[belay]"):
				belays++
			case strings.HasSuffix(name, "[speculation]"):
				spec++
			}
		case "i":
			instants++
		case "M":
			if name == "thread_name" || name == "process_name" {
				named++
			}
		}
	}
	// 8 debugger round trips and 2 speculative ones.
	if spans != 10 || hits != 1 || belays != 1 || spec != 2 {
		t.Errorf("%d spans (%d hits, %d belays, %d speculation), want 10 (1, 1, 2)\n%s", spans, hits, belays, spec, out)
	}
	if instants < 3 || named < 3 {
		t.Errorf("%d instants and %d names, want the event, session start and end, and named tracks", instants, named)
	}
}

func TestRotation(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/j.jsonl"
	vm := startFakeVM(t)
	j, err := Open(Options{Path: path, MaxBytes: 2000, MaxFiles: 50})
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	addr, stop := startProxy(t, vm.Addr(), func(*relay.Session) relay.Hooks {
		return relay.Hooks{Observers: []relay.Observer{j, endSignal(ended)}, Interceptors: []relay.Interceptor{newToySpeculator()}}
	})
	d := dialDebugger(t, addr)
	script(d)
	for range 20 {
		d.call(jdwp.CmdVirtualMachineAllThreads, nil)
	}
	d.Close()
	<-ended
	stop()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	var paths []string
	for k := 50; k >= 1; k-- {
		p := path + "." + strconv.Itoa(k)
		if fileExists(p) {
			paths = append(paths, p)
		}
	}
	if len(paths) < 2 {
		t.Fatalf("%d rotated files, want several", len(paths))
	}
	for _, p := range append(paths, path) {
		recs, err := ReadFiles(p)
		if err != nil || len(recs) == 0 || recs[0].Type != TypeHeader {
			t.Fatalf("%s: does not start with a header (%v)", p, err)
		}
	}
	recs, err := ReadFiles(append(paths, path)...)
	if err != nil {
		t.Fatal(err)
	}
	rep := Check(recs)
	if err := rep.Err(); err != nil {
		t.Fatal(err)
	}
	if rep.Commands != 28 || rep.Sessions != 1 {
		t.Errorf("report %+v, want 28 commands in 1 session across the files", rep)
	}
}

func TestDropsAreCountedNotBlocking(t *testing.T) {
	bw := &blockingWriter{release: make(chan struct{}), entered: make(chan struct{})}
	reg := prometheus.NewRegistry()
	// A tiny queue and a sink that blocks: the writer takes the header
	// write and stalls; the ring fills; Observe must drop, not block.
	j, err := New(bw, Options{QueueSize: 4, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	s := &relay.Session{ID: 1}
	f := &relay.Frame{Dir: relay.ToVM, Kind: relay.KindCommand, Packet: jdwp.AppendCommand(nil, 1, jdwp.CmdVirtualMachineVersion, nil), ID: 1, Cmd: jdwp.CmdVirtualMachineVersion, Time: time.Now()}
	// Fill the ring until the writer is certainly stuck in Write (at the
	// latest, its periodic flush writes).
	deadline := time.Now().Add(10 * time.Second)
	for {
		j.Observe(s, f)
		select {
		case <-bw.entered:
		default:
			if time.Now().After(deadline) {
				t.Fatal("the writer never wrote")
			}
			continue
		}
		break
	}
	done := make(chan struct{})
	go func() {
		for range 1000 {
			j.Observe(s, f)
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Observe blocked behind a stuck writer")
	}
	if j.Dropped() < 1000-4 {
		t.Errorf("dropped %d, want at least %d", j.Dropped(), 1000-4)
	}
	if got := testutil.ToFloat64(j.metrics.dropped); uint64(got) != j.Dropped() {
		t.Errorf("metric says %v dropped, journal %d", got, j.Dropped())
	}
	close(bw.release)
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestDroppedRecordInJournal(t *testing.T) {
	var buf jdwptest.Buffer
	j, err := New(&buf, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j.dropped.Add(7) // as Observe does when the ring is full
	s := &relay.Session{ID: 1}
	j.Observe(s, &relay.Frame{Dir: relay.ToVM, Kind: relay.KindCommand, Packet: jdwp.AppendCommand(nil, 1, jdwp.CmdVirtualMachineVersion, nil), ID: 1, Cmd: jdwp.CmdVirtualMachineVersion, Time: time.Now()})
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, buf.Bytes())
	rep := Check(recs)
	if rep.Dropped != 7 || rep.Err() == nil {
		t.Fatalf("report %+v: want 7 dropped, flagged", rep)
	}
}

func TestWriteErrorIsReported(t *testing.T) {
	j, err := New(failingWriter{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	j.Observe(&relay.Session{ID: 1}, &relay.Frame{Packet: jdwp.AppendCommand(nil, 1, jdwp.CmdVirtualMachineVersion, nil), Time: time.Now()})
	if err := j.Close(); err == nil {
		t.Fatal("Close returned nil after every write failed")
	}
}

// TestObserveDoesNotAllocate: a command and its answer, as the relay
// shows them (the answer's frame carries the command's slot data), cost
// Observe no allocation once the journal has warmed up (every ring slot's
// buffer grown): the record each command hangs on its slot comes from the
// free list and comes back with the answer.
func TestObserveDoesNotAllocate(t *testing.T) {
	j, err := New(&jdwptest.Buffer{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	s := &relay.Session{ID: 1}
	p := jdwp.AppendCommand(nil, 1, jdwp.CmdThreadReferenceFrames, make([]byte, 300))
	r := jdwp.AppendReply(nil, 1, 0, make([]byte, 300))
	cmd := &relay.Frame{Dir: relay.ToVM, Kind: relay.KindCommand, Packet: p, ID: 1, Cmd: jdwp.CmdThreadReferenceFrames, Time: time.Now()}
	ans := &relay.Frame{Dir: relay.ToDebugger, Kind: relay.KindReply, Packet: r, ID: 1, Cmd: jdwp.CmdThreadReferenceFrames, Time: time.Now()}
	exchange := func() {
		j.Observe(s, cmd)
		ans.SetData(dataSlot, cmd.Data(dataSlot)) // as the relay pairs them
		j.Observe(s, ans)
	}
	for range defaultQueue { // two records each: every slot's buffer grown
		exchange()
	}
	if n := testing.AllocsPerRun(1000, exchange); n != 0 {
		t.Errorf("Observe allocates %v times per command and answer", n)
	}
}

func TestFormatFromPath(t *testing.T) {
	for path, want := range map[string]Format{
		"a.jsonl": FormatJSONLines, "a.ndjson": FormatJSONLines, "x/a.pcapng": FormatPcapng, "a.pcap": FormatPcapng,
		"a.perfetto.json": FormatPerfetto, "a.trace.json": FormatPerfetto, "a.json": FormatJSONLines,
	} {
		if got, err := FormatFromPath(path); err != nil || got != want {
			t.Errorf("FormatFromPath(%q) = %q, %v; want %q", path, got, err, want)
		}
	}
	if _, err := FormatFromPath("a.txt"); err == nil {
		t.Error("FormatFromPath(a.txt) succeeded")
	}
	if _, err := ParseFormat("xml"); err == nil {
		t.Error("ParseFormat(xml) succeeded")
	}
}

func TestRawLimit(t *testing.T) {
	out := session(t, Options{RawLimit: 16}, true, script)
	recs := readAll(t, out)
	if err := Check(recs).Err(); err != nil {
		t.Fatal(err)
	}
	truncated := 0
	for _, r := range recs {
		if r.Type != TypePacket {
			continue
		}
		if len(r.Bytes) > 16 || (r.Len > 16) != r.Truncated {
			t.Errorf("record %v: raw limit 16 not applied", r)
		}
		if r.Truncated {
			truncated++
		}
	}
	if truncated == 0 {
		t.Error("no packet was truncated")
	}
	out = session(t, Options{RawLimit: -1}, true, script)
	for _, r := range readAll(t, out) {
		if r.Bytes != nil {
			t.Fatalf("raw bytes kept with RawLimit -1: %v", r)
		}
	}
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestStrayReply: a reply whose command the journal never saw (its record
// was dropped, say) is written where it comes, and Check reports it. The
// relay guarantees that a command is observed before its answer
// (relay.TestBelayObservedAfterCommand), so the writer need not reorder.
func TestStrayReply(t *testing.T) {
	var buf bytes.Buffer
	j := &Journal{opts: Options{RawLimit: defaultRawLimit, Version: "t"}, start: time.Now(), keep: defaultRawLimit, metrics: newMetrics(nil)}
	w := newWriter(j, newWriterSink(&buf), FormatJSONLines)
	j.ws = []*writer{w}
	t0 := time.Now()
	cmd := jdwp.AppendCommand(nil, 5, jdwp.CmdThreadReferenceName, threadBody(1))
	reply := jdwp.AppendReply(nil, 5, 0, []byte{0, 0, 0, 0})
	j.slot(&slot{typ: slotSessionStart, session: 1, time: t0})
	rec := new(cmdRec) // as Observe links a command and its answer
	j.slot(&slot{rec: rec, typ: slotPacket, session: 1, dir: relay.ToVM, kind: relay.KindCommand, origin: relay.Belay, id: 5, wireID: 5, cmd: jdwp.CmdThreadReferenceName, length: len(cmd), time: t0.Add(time.Millisecond), buf: cmd})
	j.slot(&slot{rec: rec, typ: slotPacket, session: 1, dir: relay.ToDebugger, kind: relay.KindReply, origin: relay.Belay, id: 5, wireID: 5, cmd: jdwp.CmdThreadReferenceName, length: len(reply), time: t0.Add(2 * time.Millisecond), buf: reply})
	j.slot(&slot{typ: slotPacket, session: 1, dir: relay.ToDebugger, kind: relay.KindReply, origin: relay.CacheHit, id: 9, wireID: 9, length: len(reply), time: t0.Add(3 * time.Millisecond), buf: reply})
	j.slot(&slot{typ: slotSessionEnd, session: 1, time: t0.Add(4 * time.Millisecond)})
	if err := w.close(); err != nil {
		t.Fatal(err)
	}
	recs := readAll(t, buf.Bytes())
	dv := DebuggerView(recs)
	if len(dv) != 3 || dv[0].Kind != KindCommand || dv[1].Kind != KindReply || dv[1].LatencyNs != int64(time.Millisecond) || dv[2].ID != 9 {
		t.Fatalf("debugger view %v: want the command, its reply 1ms later, then the stray reply", dv)
	}
	rep := Check(recs)
	if len(rep.Violations) != 1 || !strings.Contains(rep.Violations[0], "no command of its own") {
		t.Errorf("violations %q: want only the stray reply", rep.Violations)
	}
}

func TestStatsAndShow(t *testing.T) {
	recs := readAll(t, session(t, Options{}, true, script))
	st := ComputeStats(recs)
	if st.Commands != 8 || st.CacheHits != 1 || st.Belays != 1 || st.Forwarded != 6 || st.RoundTripsSaved != 2 || st.Synthetic != 2 || st.Events != 1 || st.Sessions != 1 {
		t.Errorf("stats %+v", st)
	}
	var version *CommandStats
	for i := range st.PerCommand {
		if st.PerCommand[i].Name == "VirtualMachine.Version" {
			version = &st.PerCommand[i]
		}
	}
	if version == nil || version.Count != 2 || version.CacheHits != 1 || version.Synthetic != 1 || version.Latency.N != 2 || version.Latency.Max < version.Latency.P50 {
		t.Errorf("Version stats %+v", version)
	}
	var text bytes.Buffer
	if err := st.WriteText(&text); err != nil || !strings.Contains(text.String(), "round trips saved 2") {
		t.Errorf("stats text:\n%s", text.String())
	}

	sets, err := ParseSets("ThreadReference, 64")
	if err != nil || len(sets) != 2 || sets[0] != 11 || sets[1] != 64 {
		t.Fatalf("ParseSets = %v, %v", sets, err)
	}
	if _, err := ParseSets("Nope"); err == nil {
		t.Error("ParseSets(Nope) succeeded")
	}
	threads, err := ParseThreads("0x1234")
	if err != nil {
		t.Fatal(err)
	}
	byThread := (&Filter{Threads: threads}).Apply(recs)
	// Name (belay) and Frames: command and reply each; and the event.
	if len(byThread) != 5 {
		t.Errorf("thread filter kept %d records, want 5: %v", len(byThread), byThread)
	}
	wire := (&Filter{View: ViewWire, Served: []string{ServedSynthetic}}).Apply(recs)
	if len(wire) != 4 {
		t.Errorf("wire synthetic filter kept %d records, want 4", len(wire))
	}
	if n := len((&Filter{Sets: sets, Since: time.Hour}).Apply(recs)); n != 0 {
		t.Errorf("--since 1h kept %d records", n)
	}
	for _, r := range byThread {
		line := FormatRecord(&r, FormatOptions{Hex: true})
		if !strings.Contains(line, "thread=0x1234") || !strings.Contains(line, r.Served) || !strings.Contains(line, "00000000") {
			t.Errorf("FormatRecord: %q", line)
		}
	}
}

// TestAnswerReturnsRecord: the record a command hangs on its relay slot
// goes back to the free list once its answer is written, so the journal
// allocates no records as long as commands are answered; a command left
// unanswered keeps its record.
func TestAnswerReturnsRecord(t *testing.T) {
	j, err := New(&jdwptest.Buffer{}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	s := &relay.Session{ID: 1}
	for id := uint32(1); id <= 3; id++ {
		cmd := &relay.Frame{Dir: relay.ToVM, Kind: relay.KindCommand, Packet: jdwp.AppendCommand(nil, id, jdwp.CmdVirtualMachineVersion, nil),
			ID: id, Cmd: jdwp.CmdVirtualMachineVersion, Time: time.Now()}
		j.Observe(s, cmd)
		if id == 3 {
			break // unanswered
		}
		ans := &relay.Frame{Dir: relay.ToDebugger, Kind: relay.KindReply, Packet: jdwp.AppendReply(nil, id, 0, nil),
			ID: id, Cmd: jdwp.CmdVirtualMachineVersion, Time: time.Now()}
		ans.SetData(dataSlot, cmd.Data(dataSlot))
		j.Observe(s, ans)
	}
	if err := j.Close(); err != nil { // the writer has handled every record
		t.Fatal(err)
	}
	if n := len(j.free); n != maxFreeRecs-1 {
		t.Errorf("%d records free after two answered commands and one unanswered, want %d", n, maxFreeRecs-1)
	}
}
