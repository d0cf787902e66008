package ddmtap

import "github.com/rs/zerolog"

var nopLog = zerolog.Nop()
