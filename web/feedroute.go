package web

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	"github.com/jdwpaccel/jdwpaccel/feed"
)

// KeepAlive is how often a VM's event stream writes a comment line when
// nothing else was written, so that proxies and clients see it alive.
const KeepAlive = 15 * time.Second

// feedBatch is how many events a stream reads from the feed at once.
const feedBatch = 256

// WithFeed serves f's events at GET /api/v1/vms/{vm}/events.
func WithFeed(f *feed.Feed) Option { return func(o *options) { o.feed = f } }

// vmEvents streams a VM's events (package feed) as server-sent events:
// each event's id line is its feed ID, its data the feed.Event's JSON; a
// cursor that does not lead to the next event kept gets an "event: reset"
// (a feed.Reset) first. It resumes after the Last-Event-ID header or the
// after query parameter, flushes each event, writes a keepalive comment
// every KeepAlive, and ends when the client leaves or Close is called.
func (h *Handler) vmEvents(w http.ResponseWriter, r *http.Request) {
	if h.feed == nil {
		writeError(w, http.StatusNotFound, "no event feed here")
		return
	}
	id := r.PathValue("vm")
	if !h.knownVM(w, id) {
		return
	}
	cursor, now, err := feed.ParseCursor(r.Header.Get("Last-Event-ID"), r.URL.Query().Get("after"))
	if err != nil {
		writeError(w, http.StatusBadRequest, err.Error())
		return
	}
	sub := h.feed.Subscribe(id)
	defer h.feed.Unsubscribe(sub)
	if now {
		cursor = h.feed.Newest(id)
	}
	rc := http.NewResponseController(w)
	if startEventStream(w) != nil || rc.Flush() != nil {
		return
	}
	h.log.Debug().Str("remote", r.RemoteAddr).Str("vm", id).Uint64("after", cursor).Msg("web: VM event stream opened")
	defer h.log.Debug().Str("remote", r.RemoteAddr).Str("vm", id).Msg("web: VM event stream closed")
	keep := time.NewTicker(h.keepAlive)
	defer keep.Stop()
	buf := make([]feed.Event, 0, feedBatch)
	var line []byte // reused for each event's text
	for {
		evs, reset := h.feed.Read(id, cursor, buf[:0], feedBatch)
		if reset != nil {
			b, err := json.Marshal(reset)
			if err != nil || writeEvent(w, "reset", b) != nil || rc.Flush() != nil {
				return
			}
			cursor = reset.Oldest - 1
		}
		for i := range evs {
			b, err := json.Marshal(&evs[i])
			if err != nil {
				h.log.Error().Err(err).Msg("web: encode feed event")
				return
			}
			line = append(line[:0], "id: "...)
			line = strconv.AppendUint(line, evs[i].ID, 10)
			line = append(line, "\ndata: "...)
			line = append(line, b...)
			line = append(line, "\n\n"...)
			if _, err := w.Write(line); err != nil || rc.Flush() != nil {
				return
			}
			cursor = evs[i].ID
		}
		if len(evs) == feedBatch {
			continue
		}
		select {
		case <-r.Context().Done():
			return
		case <-h.closed:
			return
		case <-sub.Wake():
		case <-keep.C:
			if _, err := w.Write([]byte(": keepalive\n\n")); err != nil || rc.Flush() != nil {
				return
			}
		}
	}
}
