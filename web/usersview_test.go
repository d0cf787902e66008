package web

import (
	"encoding/json"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
	"github.com/jdwpaccel/jdwpaccel/web/convo"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"
)

// TestStepThinkTimeApart: a step of a debugger driven by a person (jdb)
// has long gaps with nothing outstanding while the user reads and types;
// they are counted as idle, not as the step's latency, while the
// debugger's own short gaps stay in it.
func TestStepThinkTimeApart(t *testing.T) {
	t0 := time.Unix(1000, 0)
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	ts := &trackedSession{
		resumeAt: t0, stopAt: t0.Add(ms(10)), lastReply: t0.Add(ms(1000)), stopped: true, stopKind: jdwp.EventBreakpoint,
		cmds: []StepCommand{
			{Start: ms(15), End: ms(20), Served: relay.Forwarded},  // 5 ms gap before: the debugger's work
			{Start: ms(620), End: ms(625), Served: relay.CacheHit}, // 600 ms gap before: the user typing
			{Start: ms(630), End: ms(640), Served: relay.Forwarded},
		},
	}
	d := breakdown(ts)
	if d.Idle != ms(600+360) || d.Debugger != ms(5+5) || d.Total != ms(1000-960) {
		t.Errorf("idle %v, debugger %v, total %v; want 960ms, 10ms, 40ms", d.Idle, d.Debugger, d.Total)
	}
	if sum := d.Run + d.VM + d.Belay + d.Cache + d.Debugger; sum != d.Total {
		t.Errorf("parts add up to %v, total %v", sum, d.Total)
	}
	if j := stepJSON(d.StepBreakdown); j.Idle != 0.96 {
		t.Errorf("idle_seconds %v, want 0.96", j.Idle)
	}
}

// TestNativeFramesAndDetachedThreads: a frame in a native method (code
// index -1) shows as native, never as 18446744073709551615, in the table,
// the stack and the API; after the debugger detached its threads are
// neither running nor suspended as last read.
func TestNativeFramesAndDetachedThreads(t *testing.T) {
	native := convo.Frame{ClassID: 0x10, MethodID: 0x20, Index: math.MaxUint64, Class: "java.lang.Thread", Method: "sleep0", Line: -1}
	java := convo.Frame{ClassID: 0x10, MethodID: 0x21, Index: 7, Class: "Main", Method: "run", Source: "Main.java", Line: 12}
	v := convo.View{Session: 3, Open: true, Stop: 2, StopThread: 1, Threads: []convo.Thread{
		{ID: 1, Name: "main", Status: 1, Suspended: true, StatusStop: 2, FrameCount: 2, Frames: []convo.Frame{native, java}, FramesStop: 2},
	}}
	rows := ThreadsFromConversation(v)
	if len(rows) != 1 || rows[0].Top != "java.lang.Thread.sleep0 (native)" || rows[0].Status != "running" || !rows[0].Suspended || !rows[0].Current {
		t.Errorf("open session row %+v", rows)
	}
	st := stackFromConversation(v, v.Threads[0])
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	if st.Frames[0].Line != -2 || st.Frames[0].Index != 0 || st.Frames[1].Line != 12 || st.Frames[1].Index != 7 || strings.Contains(string(b), "18446744073709551615") {
		t.Errorf("stack %s: want the native frame at line -2 without an index", b)
	}

	v.Open = false
	rows = ThreadsFromConversation(v)
	if rows[0].Status != "detached" || rows[0].Suspended || rows[0].Current {
		t.Errorf("after detach: %+v, want status detached, not suspended, not current", rows[0])
	}
}

// farSource is a FakeSource whose speculation reports a state.
type farSource struct{ *FakeSource }

func (s farSource) Accel() AccelStats {
	a := s.FakeSource.Accel()
	a.State, a.StateNote = "quiet", "the link is fast"
	return a
}

// TestPageRoleAndState: a far end's page says it is the far end (API and
// embedded snapshot) and shows its state; the proxy's says speculating or
// pass-through; the page explains what the hit ratio depends on and that
// idle time is not in a step's p50.
func TestPageRoleAndState(t *testing.T) {
	get := func(h http.Handler, path string) string {
		srv := httptest.NewServer(h)
		defer srv.Close()
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	far := NewHandler(farSource{NewManualFakeSource(1)}, prometheus.NewRegistry(), zerolog.Nop(), WithRole("far end"))
	var s Snapshot
	if err := json.Unmarshal([]byte(get(far, "/api/v1/snapshot")), &s); err != nil {
		t.Fatal(err)
	}
	if s.Role != "far end" || s.Accel.State != "quiet" || s.Accel.StateNote == "" {
		t.Errorf("far end snapshot: role %q, state %q (%q)", s.Role, s.Accel.State, s.Accel.StateNote)
	}
	if page := get(far, "/"); !strings.Contains(page, `"role":"far end"`) {
		t.Error("the far end's page does not embed its role")
	}

	proxy := NewHandler(NewManualFakeSource(1), prometheus.NewRegistry(), zerolog.Nop())
	s = Snapshot{}
	if err := json.Unmarshal([]byte(get(proxy, "/api/v1/snapshot")), &s); err != nil {
		t.Fatal(err)
	}
	if s.Role != "" || s.Accel.State != map[bool]string{true: "speculating", false: "pass-through"}[s.Accel.Enabled] {
		t.Errorf("proxy snapshot: role %q, state %q, enabled %v", s.Role, s.Accel.State, s.Accel.Enabled)
	}
	page := get(proxy, "/")
	for _, want := range []string{"The hit ratio depends on how much the debugger reads", "think time", `id="role"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
	if js := get(proxy, "/assets/app.js"); !strings.Contains(js, "a.state") || !strings.Contains(js, "renderRole(s.role") {
		t.Error("the page's script does not show the state and role")
	}
}
