package tunnel

import (
	"errors"
	"fmt"
	"strings"
)

// Split splits a tunnel command line into its words, as a POSIX shell
// would split a simple command, but without running a shell and without
// expanding anything: words are separated by blanks; '...' quotes
// everything up to the next '; "..." quotes everything up to the next
// unescaped ", with \ escaping ", \, $ and ` inside it; outside quotes \
// escapes any character. Nothing is interpolated: no variables, globs,
// ~ or command substitution. The shell's operators (| & ; < > ( ) $ `
// unquoted) are refused, so that a command meant for a shell fails at
// once instead of running with them as arguments; write sh -c '...' to
// have a shell.
func Split(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord := false
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n':
			if inWord {
				words = append(words, w.String())
				w.Reset()
				inWord = false
			}
		case c == '\'':
			j := strings.IndexByte(line[i+1:], '\'')
			if j < 0 {
				return nil, errors.New("unterminated ' quote")
			}
			w.WriteString(line[i+1 : i+1+j])
			i += j + 1
			inWord = true
		case c == '"':
			i++
			for ; i < len(line) && line[i] != '"'; i++ {
				if line[i] == '\\' && i+1 < len(line) && strings.IndexByte("\"\\$`", line[i+1]) >= 0 {
					i++
				}
				w.WriteByte(line[i])
			}
			if i >= len(line) {
				return nil, errors.New(`unterminated " quote`)
			}
			inWord = true
		case c == '\\':
			if i+1 >= len(line) {
				return nil, errors.New(`a \ at the end`)
			}
			i++
			w.WriteByte(line[i])
			inWord = true
		case strings.IndexByte("|&;<>()$`", c) >= 0:
			return nil, fmt.Errorf("%q is a shell operator, and the tunnel command runs without a shell: quote it, or write sh -c '...' to have one", c)
		default:
			w.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words = append(words, w.String())
	}
	if len(words) == 0 {
		return nil, errors.New("no command")
	}
	return words, nil
}
