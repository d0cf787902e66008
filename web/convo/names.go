package convo

import (
	"github.com/jdwpaccel/jdwpaccel/feed"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// Resolve implements feed.Names: the name of thread, and the class
// signature, method name and source line of loc (nil: none), as far as
// session s's conversation has shown them so far. It allocates nothing
// and sends nothing.
func (w *Watcher) Resolve(s *relay.Session, thread uint64, loc *jdwp.Location) feed.Resolved {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.sessions[s]
	if st == nil || st.final != nil {
		return feed.Resolved{}
	}
	var r feed.Resolved
	if t := st.threads[thread]; t != nil {
		r.Thread = t.Name
	}
	if loc == nil {
		return r
	}
	r.Class = st.classes[loc.Class].sig
	if mi, ok := st.methods[methodKey{loc.Class, loc.Method}]; ok {
		r.Method = mi.name
		r.Line, _ = mi.lineAt(loc.Index)
	}
	return r
}
