package journal

import (
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/relay"
)

// cmdRec is what the journal knows about one command from the moment it
// is observed to its answer. It rides in the relay's entry for the command
// (dataSlot) and comes back on the answer's frame (relay.Frame.Data): the
// relay pairs every command with its answer, cache hits and belays
// included, and the journal keeps no table of commands of its own.
//
// Observe takes a cmdRec from the free list and hangs it on the command's
// ring slot and, through the relay, on the answer's; the writer goroutine
// fills it in when it meets the command (Journal.pair), reads it at the
// answer, and puts it back once every file encoded the answer.
type cmdRec struct {
	t         int64 // ns since the journal's start
	cmd       jdwp.Cmd
	id        uint32 // the command's ID in the debugger view
	thread    uint64 // the thread it is about, if hasThread
	hasThread bool
	lane      int  // its Perfetto lane
	wire      bool // a synthetic command: its lane is one of the wire lanes
	// A debugger-view command awaiting its answer is in its session's
	// open list.
	open       bool
	prev, next *cmdRec
}

// dataSlot is where the journal keeps a command's cmdRec in the relay's
// entry for the command.
var dataSlot = relay.NewSlot()

// maxFreeRecs bounds the recycled cmdRecs (a burst of commands in flight
// must not be kept for the journal's life). The free list starts full
// (fillFree), so that up to this many commands awaiting their answers, or
// records the writer has yet to recycle, cost Observe no allocation.
const maxFreeRecs = 1024

// fillFree fills the free list from one block of records.
func (j *Journal) fillFree() {
	block := make([]cmdRec, maxFreeRecs)
	j.free = make([]*cmdRec, maxFreeRecs)
	for i := range block {
		j.free[i] = &block[i]
	}
}

// sess is what the journal knows about one session, for every file alike.
// Only the writer goroutine touches it.
type sess struct {
	id           uint64
	debugger, vm string
	user         string // the session's user, on split mode's far end
	startT       int64
	sizes        jdwp.IDSizes
	packets      uint64
	dbgLanes     []bool // Perfetto lanes in use, debugger view
	wireLanes    []bool // Perfetto lanes in use, synthetic traffic
	// open heads the list of debugger-view commands awaiting their
	// answer, oldest first (a sentinel: open.next is the oldest).
	open  cmdRec
	nOpen int
	// matched is the command the reply being encoded answers, or nil.
	matched *cmdRec
}

func newSess(id uint64) *sess {
	s := &sess{id: id}
	s.open.next, s.open.prev = &s.open, &s.open
	return s
}

// push adds c at the end of the open list.
func (s *sess) push(c *cmdRec) {
	c.open = true
	c.prev, c.next = s.open.prev, &s.open
	s.open.prev.next = c
	s.open.prev = c
	s.nOpen++
}

// settle takes c off the open list, if it is there.
func (s *sess) settle(c *cmdRec) {
	if !c.open {
		return
	}
	c.prev.next, c.next.prev = c.next, c.prev
	c.open, c.prev, c.next = false, nil, nil
	s.nOpen--
}

// session returns the session id's state, created on first use.
func (j *Journal) session(id uint64) *sess {
	if j.sessions == nil {
		j.sessions = make(map[uint64]*sess)
	}
	s, ok := j.sessions[id]
	if !ok {
		s = newSess(id)
		j.sessions[id] = s
	}
	return s
}

// slot has every file encode one queued record: first the journal pairs
// it (pair), then each writer encodes it, then what it ended is released.
func (j *Journal) slot(sl *slot) {
	t := sl.time.Sub(j.start).Nanoseconds()
	switch sl.typ {
	case slotSessionStart:
		s := j.session(sl.session)
		s.debugger, s.vm, s.user, s.startT = sl.debugger, sl.vm, sl.user, t
		if sl.sizes.Known() {
			s.sizes = sl.sizes
		}
	case slotPacket:
		j.pair(j.session(sl.session), sl, t)
	}
	for _, w := range j.ws {
		w.slot(sl, t)
	}
	switch {
	case sl.typ == slotSessionEnd:
		delete(j.sessions, sl.session)
	case answer(sl.kind) && sl.rec != nil:
		j.freed = append(j.freed, sl.rec) // back to the free list after the batch
	}
}

// pair keeps the pairing state of a packet record: a command's cmdRec is
// filled in, an answer's is taken off the open list; sl gets the thread
// the packet is about, and learned when it taught the session its ID
// sizes.
func (j *Journal) pair(s *sess, sl *slot, t int64) {
	s.packets++
	s.matched = nil
	sl.thread, sl.hasThread, sl.learned = 0, false, false
	var body []byte
	if len(sl.buf) >= jdwp.HeaderSize {
		body = sl.buf[jdwp.HeaderSize:]
	}
	c := sl.rec
	switch sl.kind {
	case relay.KindCommand:
		sl.thread, sl.hasThread = threadOf(sl.cmd, body, s.sizes)
		if c == nil {
			return
		}
		*c = cmdRec{t: t, cmd: sl.cmd, id: sl.id, thread: sl.thread, hasThread: sl.hasThread}
		if sl.origin == relay.Synthetic {
			c.wire, c.lane = true, takeLane(&s.wireLanes)
		} else {
			c.lane = takeLane(&s.dbgLanes)
			s.push(c)
		}
	case relay.KindVMCommand:
		if c != nil {
			*c = cmdRec{t: t, cmd: sl.cmd, id: sl.id}
		}
	case relay.KindReply, relay.KindDebuggerReply:
		if c != nil && sl.kind == relay.KindReply {
			if c.wire {
				freeLane(s.wireLanes, c.lane)
			} else {
				freeLane(s.dbgLanes, c.lane)
			}
			s.settle(c)
			s.matched = c
			sl.thread, sl.hasThread = c.thread, c.hasThread
		}
		cmd := sl.cmd
		if cmd == (jdwp.Cmd{}) && c != nil {
			cmd = c.cmd
		}
		if cmd == jdwp.CmdIDSizes && len(body) >= 20 && !s.sizes.Known() && jdwp.Packet(sl.buf).ErrorCode() == 0 {
			if z, err := jdwp.ParseIDSizes(body[:20]); err == nil {
				s.sizes, sl.learned = z, true
			}
		}
	}
}

// answer says whether a packet of kind k answers a command.
func answer(k relay.Kind) bool { return k == relay.KindReply || k == relay.KindDebuggerReply }

// newRec returns a cmdRec from the free list; j.mu is held.
func (j *Journal) newRec() *cmdRec {
	if n := len(j.free); n > 0 {
		c := j.free[n-1]
		j.free = j.free[:n-1]
		return c
	}
	return new(cmdRec)
}

// recycle puts the cmdRecs released by the last batch back on the free
// list; j.mu is held.
func (j *Journal) recycle() {
	for _, c := range j.freed {
		if len(j.free) >= maxFreeRecs {
			break
		}
		*c = cmdRec{}
		j.free = append(j.free, c)
	}
	clear(j.freed)
	j.freed = j.freed[:0]
}

func takeLane(lanes *[]bool) int {
	for i, busy := range *lanes {
		if !busy {
			(*lanes)[i] = true
			return i
		}
	}
	if len(*lanes) >= perfettoMaxLanes {
		return perfettoMaxLanes - 1
	}
	*lanes = append(*lanes, true)
	return len(*lanes) - 1
}

func freeLane(lanes []bool, i int) {
	if i < len(lanes) {
		lanes[i] = false
	}
}
