package main

import (
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"reflect"
	"strconv"
	"strings"
)

// printFlags prints fs's flags the way they are typed, --name VALUE: the
// essentials first, in the order given, then the others alphabetically.
func printFlags(fs *flag.FlagSet, essentials ...string) {
	w := fs.Output()
	done := map[string]bool{}
	for _, name := range essentials {
		if f := fs.Lookup(name); f != nil {
			printFlag(w, f)
			done[name] = true
		}
	}
	if len(done) > 0 {
		fmt.Fprintln(w)
	}
	fs.VisitAll(func(f *flag.Flag) {
		if !done[f.Name] {
			printFlag(w, f)
		}
	})
}

func printFlag(w io.Writer, f *flag.Flag) {
	arg, usage := flag.UnquoteUsage(f)
	if arg != "" {
		arg = " " + arg
	}
	fmt.Fprintf(w, "  --%s%s\n        %s", f.Name, arg, strings.ReplaceAll(usage, "\n", "\n        "))
	switch f.DefValue {
	case "", "0", "false", "0s":
	default:
		def := f.DefValue
		if reflect.Indirect(reflect.ValueOf(f.Value)).Kind() == reflect.String {
			def = strconv.Quote(def)
		}
		fmt.Fprintf(w, " (default %s)", def)
	}
	fmt.Fprintln(w)
}

// dashDash rewrites the flag package's errors, which name flags with one
// dash ("flag provided but not defined: -x"), in the --flag style that
// the help and the README use.
func dashDash(err error) error {
	s := err.Error()
	for _, p := range []string{"not defined: -", "for flag -", "needs an argument: -", "bad flag syntax: -"} {
		if i := strings.Index(s, p); i >= 0 && !strings.HasPrefix(s[i+len(p):], "-") {
			s = s[:i+len(p)] + "-" + s[i+len(p):]
		}
	}
	return fmt.Errorf("%s", s)
}

// optionalValue is a flag that may stand alone, like a boolean, or take a
// word of its own: "--ddm" and "--ddm force" both mean what they say.
type optionalValue interface {
	flag.Value
	IsBoolFlag() bool
	// takes reports whether word is one of the flag's values.
	takes(word string) bool
}

// joinOptionalValues turns "--name word" into "--name=word" for the
// optionalValue flags of fs, where word is one of its values, so that the
// flag package does not take the word for a positional argument.
func joinOptionalValues(fs *flag.FlagSet, args []string) []string {
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return append(out, args[i:]...)
		}
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			name, ok = strings.CutPrefix(a, "-")
		}
		if f := fs.Lookup(name); ok && f != nil && i+1 < len(args) {
			if ov, isOpt := f.Value.(optionalValue); isOpt && ov.takes(args[i+1]) {
				out = append(out, a+"="+args[i+1])
				i++
				continue
			}
		}
		out = append(out, a)
	}
	return out
}

// byteSize is a flag of a size in bytes, with an optional unit: 65536,
// 64KiB, 64MiB, 1GiB (powers of 1024; K, M and G too), or 64kB, 64MB, 1GB
// (powers of 1000).
type byteSize[T ~int | ~int64] struct{ v *T }

// bytesVar defines a byteSize flag.
func bytesVar[T ~int | ~int64](fs *flag.FlagSet, p *T, name string, def T, usage string) {
	*p = def
	fs.Var(byteSize[T]{p}, name, usage)
}

func (b byteSize[T]) String() string {
	if b.v == nil {
		return "0"
	}
	return formatBytes(int64(*b.v))
}

func (b byteSize[T]) Set(s string) error {
	n, err := parseBytes(s)
	if err != nil {
		return err
	}
	if int64(T(n)) != n {
		return fmt.Errorf("%s is too large", s)
	}
	*b.v = T(n)
	return nil
}

// byteUnits are the units parseBytes accepts, lower case.
var byteUnits = map[string]int64{
	"": 1, "b": 1,
	"k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30,
	"kb": 1e3, "mb": 1e6, "gb": 1e9,
}

// parseBytes parses a byteSize.
func parseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := len(t)
	for i > 0 && (t[i-1] < '0' || t[i-1] > '9') {
		i--
	}
	unit, ok := byteUnits[strings.ToLower(strings.TrimSpace(t[i:]))]
	n, err := strconv.ParseInt(t[:i], 10, 64)
	if !ok || err != nil {
		return 0, fmt.Errorf("want a number of bytes, optionally with a unit (KiB, MiB, GiB; kB, MB, GB), not %q", s)
	}
	if n > math.MaxInt64/unit || n < math.MinInt64/unit {
		return 0, fmt.Errorf("%s is too large", s)
	}
	return n * unit, nil
}

// formatBytes prints n in the largest power-of-1024 unit that divides it.
func formatBytes(n int64) string {
	for _, u := range []struct {
		name string
		size int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}} {
		if n != 0 && n%u.size == 0 {
			return strconv.FormatInt(n/u.size, 10) + u.name
		}
	}
	return strconv.FormatInt(n, 10)
}

// checkAddr checks the syntax of an address flag, HOST:PORT, at parse
// time: a port in 1-65535 (0 too where listening may pick one).
func checkAddr(name, addr string, portZeroOK bool) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bad %s %q: want HOST:PORT, e.g. 127.0.0.1:5005", name, addr)
	}
	n, err := strconv.ParseUint(port, 10, 16)
	switch {
	case port == "":
		return fmt.Errorf("bad %s %q: no port; want HOST:PORT, e.g. 127.0.0.1:5005", name, addr)
	case err != nil && strings.Trim(port, "0123456789") == "":
		return fmt.Errorf("bad %s %q: port %s is out of range (1-65535)", name, addr, port)
	case err != nil:
		return fmt.Errorf("bad %s %q: the port must be a number, not %q", name, addr, port)
	case n == 0 && !portZeroOK:
		return fmt.Errorf("bad %s %q: port 0 names no port to connect to", name, addr)
	case strings.ContainsAny(host, " /"):
		return fmt.Errorf("bad %s %q: %q is not a host name or address", name, addr, host)
	}
	return nil
}
