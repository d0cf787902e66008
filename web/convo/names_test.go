package convo

import (
	"testing"

	"github.com/jdwpaccel/jdwpaccel/feed"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// TestResolve: the watcher names a thread, a location's class, method and
// line as far as the session's conversation showed them, allocating
// nothing; nothing once the session ended.
func TestResolve(t *testing.T) {
	w := NewWatcher(func(*relay.Session) string { return "vm" })
	s := &relay.Session{ID: 1}
	w.SessionStart(s)
	st := w.sessions[s]
	loc := jdwp.Location{TypeTag: 1, Class: 0x500, Method: 0x600, Index: 7}
	if r := w.Resolve(s, 0x101, &loc); r != (feed.Resolved{}) {
		t.Fatalf("before anything was asked: %+v", r)
	}
	exchange(st, 1, jdwp.CmdThreadReferenceName, func(w *jdwp.BodyWriter) { w.ObjectID(0x101) }, func(w *jdwp.BodyWriter) { w.String("main") })
	exchange(st, 2, jdwp.CmdReferenceTypeSignature, func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0x500) }, func(w *jdwp.BodyWriter) { w.String("Lcom/example/Deep;") })
	if r := w.Resolve(s, 0x101, &loc); r != (feed.Resolved{Thread: "main", Class: "Lcom/example/Deep;"}) {
		t.Fatalf("thread and class: %+v", r)
	}
	exchange(st, 3, jdwp.CmdReferenceTypeMethods, func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0x500) }, func(w *jdwp.BodyWriter) {
		w.Int32(1)
		w.MethodID(0x600)
		w.String("level")
		w.String("(I)V")
		w.Int32(1)
	})
	exchange(st, 4, jdwp.CmdMethodLineTable, func(w *jdwp.BodyWriter) { w.ReferenceTypeID(0x500); w.MethodID(0x600) }, deepLines)
	want := feed.Resolved{Thread: "main", Class: "Lcom/example/Deep;", Method: "level", Line: 11}
	if r := w.Resolve(s, 0x101, &loc); r != want {
		t.Fatalf("%+v, want %+v", r, want)
	}
	if r := w.Resolve(s, 0x102, nil); r != (feed.Resolved{}) {
		t.Fatalf("an unknown thread, no location: %+v", r)
	}
	if n := testing.AllocsPerRun(100, func() { w.Resolve(s, 0x101, &loc) }); n != 0 {
		t.Errorf("%v allocations", n)
	}
	w.SessionEnd(s, nil)
	if r := w.Resolve(s, 0x101, &loc); r != (feed.Resolved{}) {
		t.Fatalf("after the end: %+v", r)
	}
}
