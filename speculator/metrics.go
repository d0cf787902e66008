package speculator

import "github.com/prometheus/client_golang/prometheus"

type requestResult uint8

const (
	resultHit requestResult = iota
	resultMiss
	resultBelay
	numResults
)

var resultNames = [numResults]string{"hit", "miss", "belay"}

type specOutcome uint8

const (
	outcomeSent specOutcome = iota
	outcomeUsed
	outcomeWasted
	// outcomeWithheld: predicted but not sent, because the IDs in it could
	// not be shown valid for the command (see safeToSend).
	outcomeWithheld
	numOutcomes
)

var outcomeNames = [numOutcomes]string{"sent", "used", "wasted", "withheld"}

// reason is why cached facts were invalidated (a closed label set).
type reason uint8

const (
	reasonResume          reason = iota // VirtualMachine/ThreadReference.Resume
	reasonInvoke                        // method invocation or new instance (resumes threads)
	reasonMutation                      // SetValues, PopFrames, ForceEarlyReturn, Stop, Interrupt, other writes
	reasonUnknownCommand                // a command not known to be read-only
	reasonRedefine                      // RedefineClasses
	reasonClassUnload                   // CLASS_UNLOAD event
	reasonDispose                       // DisposeObjects
	reasonStop                          // a suspending event (new stop state)
	reasonSuspend                       // VirtualMachine/ThreadReference.Suspend
	reasonThreadLifecycle               // THREAD_START / THREAD_DEATH
	reasonRunning                       // an event showed a thread believed suspended running
	reasonVMDeath                       // VM_DEATH
	numReasons
)

var reasonNames = [numReasons]string{"resume", "invoke", "mutation", "unknown_command", "redefine",
	"class_unload", "dispose", "stop", "suspend", "thread_lifecycle", "running", "vm_death"}

func (r reason) String() string {
	if r < numReasons {
		return reasonNames[r]
	}
	return "unknown"
}

// Metrics are the speculator's Prometheus metrics, shared by all sessions.
// Label children are resolved once so counting is an index and an add.
type Metrics struct {
	requests     [numResults]prometheus.Counter
	specs        [numOutcomes]prometheus.Counter
	inval        [numReasons]prometheus.Counter
	bytes        prometheus.Gauge
	entries      prometheus.Gauge
	wb, wbFailed prometheus.Counter
	frames       [2]prometheus.Counter // predicted frame IDs: confirmed, refuted
}

// NewMetrics creates the speculator metrics and registers them with reg.
func NewMetrics(reg prometheus.Registerer) *Metrics {
	req := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "jdwpaccel", Name: "cache_requests_total",
		Help: "Cacheable debugger commands, by result: answered from the cache (hit), held for a speculation in flight (belay), or sent to the VM (miss).",
	}, []string{"result"})
	spec := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "jdwpaccel", Name: "speculative_commands_total",
		Help: "Speculative commands: sent to the VM, used (served a debugger command), wasted (dropped unused).",
	}, []string{"outcome"})
	inval := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "jdwpaccel", Name: "cache_invalidations_total",
		Help: "Invalidations of cached facts, by reason.",
	}, []string{"reason"})
	bytes := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "jdwpaccel", Name: "cache_bytes",
		Help: "Bytes of replies held in the speculative caches of all sessions.",
	})
	entries := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "jdwpaccel", Name: "cache_entries",
		Help: "Replies held in the speculative caches of all sessions.",
	})
	wb := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "jdwpaccel", Name: "writebehind_total",
		Help: "State-setting debugger commands (EventRequest.Set and Clear, VirtualMachine.Resume, ThreadReference.Resume) answered at once with the reply the VM was proven to give, and sent on to it pipelined (write-behind).",
	})
	wbFailed := prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "jdwpaccel", Name: "writebehind_failures_total",
		Help: "Written-behind commands the VM answered otherwise than the debugger had been answered; each ended its debugger session.",
	})
	frames := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: "jdwpaccel", Name: "frame_predictions_total",
		Help: "Speculative StackFrame commands sent on a predicted frame ID, by how the stop's Frames reply settled them: confirmed (servable) or refuted (dropped).",
	}, []string{"outcome"})
	reg.MustRegister(req, spec, inval, bytes, entries, wb, wbFailed, frames)
	m := &Metrics{bytes: bytes, entries: entries, wb: wb, wbFailed: wbFailed}
	m.frames[0], m.frames[1] = frames.WithLabelValues("confirmed"), frames.WithLabelValues("refuted")
	for i := range m.requests {
		m.requests[i] = req.WithLabelValues(resultNames[i])
	}
	for i := range m.specs {
		m.specs[i] = spec.WithLabelValues(outcomeNames[i])
	}
	for i := range m.inval {
		m.inval[i] = inval.WithLabelValues(reasonNames[i])
	}
	return m
}

func (m *Metrics) request(r requestResult) {
	if m != nil {
		m.requests[r].Inc()
	}
}

func (m *Metrics) spec(o specOutcome, n int) {
	if m != nil {
		m.specs[o].Add(float64(n))
	}
}

func (m *Metrics) framePredictions(confirmed, refuted int) {
	if m != nil && confirmed+refuted > 0 {
		m.frames[0].Add(float64(confirmed))
		m.frames[1].Add(float64(refuted))
	}
}

func (m *Metrics) invalidation(r reason) {
	if m != nil {
		m.inval[r].Inc()
	}
}

func (m *Metrics) cache(bytes, entries int64) {
	if m != nil {
		m.bytes.Add(float64(bytes))
		m.entries.Add(float64(entries))
	}
}

func (m *Metrics) writeBehind(failed bool) {
	switch {
	case m == nil:
	case failed:
		m.wbFailed.Inc()
	default:
		m.wb.Inc()
	}
}
