package relay

// Log field names, fixed so that every package spells them the same way.
const (
	LogSession      = "session"
	LogDebugger     = "debugger"
	LogVM           = "vm"
	LogPacketID     = "packet_id"
	LogCmd          = "cmd"
	LogKind         = "kind"
	LogLength       = "length"
	LogReason       = "reason"
	LogListen       = "listen"
	LogDir          = "dir"
	LogHook         = "hook"
	LogPanic        = "panic"
	LogStack        = "stack"
	LogMax          = "max"
	LogErrorCode    = "error_code"
	LogAttempts     = "attempts"
	LogWriteTimeout = "write_timeout"
	LogClosedBy     = "closed_by"  // debugger, vm or proxy: whose connection ended a session
	LogComponent    = "component"  // the package or part that logged: ddm, speculator, journal, discover, web
	LogSuppressed   = "suppressed" // like lines held back since the last one (rate-limited logs)
)
