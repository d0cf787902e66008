package relay

import (
	"fmt"
	"runtime/debug"
)

// interceptFromDebugger and interceptFromVM run the interceptors on f. A
// panicking interceptor turns the session into plain pass-through, and
// the packet is forwarded (a debugger's packet with the ID wire the relay
// gave it, in case the interceptor had rewritten it).
func (s *Session) interceptFromDebugger(f *Frame, wire uint32) (action Action) {
	defer func() {
		if v := recover(); v != nil {
			s.hookPanicked(hookInterceptor, v, f)
			f.Packet.SetID(wire)
			action = s.afterPanic(f)
		}
	}()
	for _, ic := range s.hooks.Interceptors {
		if action = ic.FromDebugger(s, f); action == Consume {
			return Consume
		}
	}
	return Forward
}

func (s *Session) interceptFromVM(f *Frame) (action Action) {
	defer func() {
		if v := recover(); v != nil {
			s.hookPanicked(hookInterceptor, v, f)
			action = s.afterPanic(f)
		}
	}()
	for _, ic := range s.hooks.Interceptors {
		if action = ic.FromVM(s, f); action == Consume {
			return Consume
		}
	}
	return Forward
}

// Hook kinds, the label values of jdwpaccel_hook_panics_total.
const (
	hookInterceptor = "interceptor"
	hookObserver    = "observer"
	hookLifecycle   = "lifecycle"
	hookDo          = "do"        // work run by Session.Do
	hookGoroutine   = "goroutine" // a hook's own goroutine (Session.Panicked)
)

// hookPanicked handles a panic recovered from a hook: it is counted and
// logged with the packet it was handling, and the session goes on as plain
// pass-through: no interceptor or observer sees another packet. (Commands
// an interceptor had consumed and meant to answer later stay unanswered.)
// With Hooks.EndOnPanic the session ends instead, the packet undelivered.
// Lifecycle calls (Interceptor.Close, SessionObserver.SessionEnd) are
// still made, so hooks can release what they hold.
func (s *Session) hookPanicked(hook string, v any, f *Frame) {
	s.hooksOff.Store(true)
	s.metrics.hookPanic(hook)
	e := s.log.Error().Str(LogHook, hook).Str(LogPanic, fmt.Sprint(v)).Str(LogStack, string(debug.Stack()))
	if f != nil {
		e = e.Stringer(LogDir, f.Dir).Stringer(LogKind, f.Kind).Stringer(LogCmd, f.Cmd).Uint32(LogPacketID, f.ID)
	}
	if s.hooks.EndOnPanic {
		e.Msg("a hook panicked (a bug to report); this session ends")
		s.Fail(ReasonHookPanic, fmt.Errorf("a %s panicked: %v", hook, v))
		return
	}
	e.Msg("a hook panicked (a bug to report); this session goes on as plain pass-through")
}

// afterPanic is what becomes of the packet an interceptor panicked on: it
// is forwarded, unless the session ends (Hooks.EndOnPanic) and it must not
// reach the other peer unhandled.
func (s *Session) afterPanic(f *Frame) Action {
	if s.hooks.EndOnPanic {
		f.Origin = Synthetic
		return Consume
	}
	return Forward
}

// lifecycle calls fn, recovering a panic (counted and logged).
func (s *Session) lifecycle(fn func()) {
	defer func() {
		if v := recover(); v != nil {
			s.hookPanicked(hookLifecycle, v, nil)
		}
	}()
	fn()
}

func (s *Session) hooksOn() bool { return len(s.hooks.Interceptors) > 0 && !s.hooksOff.Load() }
