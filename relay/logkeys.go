package relay

import "github.com/jdwpaccel/jdwpaccel/internal/logkey"

// Log field names, for the packages that log about sessions; each is
// logkey's (the one definition).
const (
	LogSession      = logkey.Session
	LogDebugger     = logkey.Debugger
	LogVM           = logkey.VM
	LogPacketID     = logkey.PacketID
	LogCmd          = logkey.Cmd
	LogKind         = logkey.Kind
	LogLength       = logkey.Length
	LogReason       = logkey.Reason
	LogListen       = logkey.Listen
	LogDir          = logkey.Dir
	LogHook         = logkey.Hook
	LogPanic        = logkey.Panic
	LogStack        = logkey.Stack
	LogMax          = logkey.Max
	LogErrorCode    = logkey.ErrorCode
	LogAttempts     = logkey.Attempts
	LogWriteTimeout = logkey.WriteTimeout
	LogClosedBy     = logkey.ClosedBy
	LogComponent    = logkey.Component
	LogSuppressed   = logkey.Suppressed
	LogUser         = logkey.User
)
