package ddmtap

import (
	"time"

	"github.com/jdwpaccel/jdwpaccel/ddm"
	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/jdwpaccel/jdwpaccel/retag"
)

// request sends one chunk with a fresh ID of the proxy's block. Only a VM
// that answered HELO, or HELO itself to a VM known or found to be an
// Android runtime, gets one (see begin). An enable (THEN, HPIF, HPSG,
// NHSG) is recorded as the proxy's and sent as the union with what the
// debugger enabled.
func (l *link) request(p ddm.Payload) error {
	if p.ChunkType() != ddm.TypeHELO && l.mon.DDM() != DDMYes {
		return ErrNotConnected
	}
	id := l.newID()
	l.mu.Lock()
	p = l.ownEnable(p)
	l.mu.Unlock()
	t := p.ChunkType()
	l.mon.metrics.chunk(ddm.HostToVM, t)
	return l.sendOwn(id, pendingReq{t: t}, ddm.AppendCommand(nil, id, p), "DDM "+t.String())
}

func (l *link) expect(feat int) {
	l.mu.Lock()
	l.expects = append(l.expects, expectation{feat: feat, deadline: time.Now().Add(l.opts.ReplyTimeout), epoch: l.mon.currentEpoch()})
	l.mu.Unlock()
}

// requestHeap is Monitor.RequestHeap for this connection: heap updates
// are enabled once per connection (and again after every reconnect, see
// helloDone), then a GC makes the VM send them.
func (l *link) requestHeap() error {
	if l.mon.DDM() != DDMYes {
		return ErrNotConnected
	}
	l.mon.wantHeap()
	if err := l.enableHeap(); err != nil {
		return err
	}
	return l.request(ddm.Empty{T: ddm.TypeHPGC})
}

// enableHeap asks for a summary and segments at every GC, once per link.
func (l *link) enableHeap() error {
	l.mu.Lock()
	done := l.heapAsked
	l.heapAsked = true
	l.mu.Unlock()
	if done {
		return nil
	}
	if err := l.request(ddm.U1{T: ddm.TypeHPIF, V: 3}); err != nil {
		return err
	}
	l.request(ddm.SegmentRequest{T: ddm.TypeHPSG, When: 1, What: 0}) //nolint:errcheck // best effort; a failed send means the link is going away
	l.request(ddm.SegmentRequest{T: ddm.TypeNHSG, When: 1, What: 0}) //nolint:errcheck
	l.expect(FeatHeapInfo)
	l.expect(FeatHeapSegments)
	l.expect(FeatNativeHeap)
	return nil
}

// fromVM handles a packet from the VM while no session owns the
// connection. ours: a reply to the proxy's own request (never for the
// debugger); chunk: a VM-originated DDM command. Every reply in the
// proxy's range is then the link's (even one whose request expired): the
// link takes it from the table, as the relay does during a session (where
// the link gets its replies from the relay, see tap.FromVM).
func (l *link) fromVM(p jdwp.Packet) (ours, chunk bool) {
	if p.IsReply() {
		c, owner := l.ids.Reply(p)
		if pr, ok := c.Data[slot].(*pendingReq); ok {
			l.reply(*pr, p)
		}
		return owner == retag.Synthetic, false
	}
	if p.Cmd() == jdwp.CmdDDMChunk {
		l.chunk(p)
		return false, true
	}
	return false, false
}

// chunk handles a VM-originated DDM command.
func (l *link) chunk(p jdwp.Packet) { l.mon.HandlePayload(ddm.VMToHost, p.Body()) }

// reply handles the VM's reply to one of the proxy's requests.
func (l *link) reply(pr pendingReq, p jdwp.Packet) {
	if code := p.ErrorCode(); code != 0 {
		if pr.t == ddm.TypeHELO {
			l.mon.setDDM(DDMNo)
			l.log.Info().Stringer("error", code).Msg("VM answered HELO with a JDWP error: not a DDM VM; no further DDM traffic")
			return
		}
		l.mon.countError(ReasonJDWPError, code, "VM answered a DDM request with a JDWP error")
		return
	}
	if len(p.Body()) == 0 {
		return // null handler result: an empty reply
	}
	first := l.mon.HandlePayload(ddm.VMToHost, p.Body())
	if pr.t == ddm.TypeHELO && first == ddm.TypeHELO {
		l.helloDone()
	}
}

// helloDone starts monitoring after a HELO reply.
func (l *link) helloDone() {
	l.log.Info().Msg("VM speaks DDM; monitoring threads")
	l.request(ddm.Empty{T: ddm.TypeFEAT})    //nolint:errcheck // best effort; a failed send means the link is going away
	l.request(ddm.U1{T: ddm.TypeTHEN, V: 1}) //nolint:errcheck
	l.expect(FeatThreadNotify)
	l.poll()
	if l.mon.heapWanted() {
		l.enableHeap() //nolint:errcheck
	}
}

func (l *link) poll() {
	if l.mon.supportOf(FeatThreadStatus) == Unsupported {
		return
	}
	if l.request(ddm.Empty{T: ddm.TypeTHST}) == nil {
		l.expect(FeatThreadStatus)
	}
	l.mu.Lock()
	l.nextPoll = time.Now().Add(l.opts.PollInterval)
	l.mu.Unlock()
}

// dataReply says whether a request type is answered with data when it
// works, so that silence is worth counting as a timeout.
func dataReply(t ddm.Type) bool {
	switch t {
	case ddm.TypeHELO, ddm.TypeFEAT, ddm.TypeTHST, ddm.TypeSTKL, ddm.TypeREAQ, ddm.TypeREAL:
		return true
	}
	return false
}

// loop expires requests and probes and polls THST. A panic ends it
// (recovered).
func (l *link) loop() {
	defer close(l.done)
	defer func() {
		if v := recover(); v != nil {
			l.recovered("link loop", v)
		}
	}()
	tick := min(l.opts.PollInterval, l.opts.ReplyTimeout) / 4
	tick = max(tick, 10*time.Millisecond)
	t := time.NewTicker(tick)
	defer t.Stop()
	for {
		select {
		case <-l.stop:
			return
		case now := <-t.C:
			l.expire(now)
			l.mu.Lock()
			due := !l.nextPoll.IsZero() && now.After(l.nextPoll)
			l.mu.Unlock()
			if due && l.mon.DDM() == DDMYes {
				l.poll()
			}
		}
	}
}

func (l *link) expire(now time.Time) {
	var timedOut []ddm.Type
	var probes []expectation
	// Dropped from the table: a late reply is still the proxy's (its ID is
	// in the proxy's range), out of the debugger's ID space.
	l.ids.Sweep(int(slot), func(_ uint32, c *retag.Command) bool {
		pr := c.Data[slot].(*pendingReq)
		if now.Sub(pr.sent) <= l.opts.ReplyTimeout {
			return false
		}
		if dataReply(pr.t) {
			timedOut = append(timedOut, pr.t)
		}
		return true
	})
	l.mu.Lock()
	kept := l.expects[:0]
	for _, e := range l.expects {
		if now.After(e.deadline) {
			probes = append(probes, e)
		} else {
			kept = append(kept, e)
		}
	}
	l.expects = kept
	l.mu.Unlock()
	for _, t := range timedOut {
		l.mon.countError(ReasonTimeout, nil, "VM left the proxy's "+t.String()+" request unanswered")
	}
	for _, e := range probes {
		if l.mon.supportOf(e.feat) != Supported {
			l.mon.setSupport(e.feat, Unsupported)
			l.log.Info().Str("feature", FeatureNames[e.feat]).Msg("VM does not answer this DDM feature; marked unsupported")
		} else if e.feat == FeatThreadNotify {
			l.mon.sweepThreads(e.epoch)
		}
	}
}
