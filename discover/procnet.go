package discover

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// TCP socket states as /proc/net/tcp prints them.
const (
	tcpEstablished = 0x01
	tcpListen      = 0x0A
)

// sockEntry is one line of /proc/net/tcp or /proc/net/tcp6.
type sockEntry struct {
	local  netip.AddrPort
	remote netip.AddrPort
	state  uint8
	inode  uint64
}

// errProcNetFormat is returned for a malformed /proc/net/tcp line.
var errProcNetFormat = errors.New("discover: malformed /proc/net/tcp line")

// parseProcNetTCP calls fn for each socket line of a /proc/net/tcp or
// /proc/net/tcp6 file (the header line is skipped). Malformed lines are
// skipped and counted; the count is returned.
func parseProcNetTCP(data []byte, fn func(e sockEntry)) (bad int) {
	first := true
	for len(data) > 0 {
		var line []byte
		line, data, _ = bytes.Cut(data, []byte{'\n'})
		if first {
			first = false
			continue
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		e, err := parseSockLine(line)
		if err != nil {
			bad++
			continue
		}
		fn(e)
	}
	return bad
}

// parseSockLine parses "sl local rem st tx:rx tr:when retr uid timeout inode ...".
func parseSockLine(line []byte) (sockEntry, error) {
	var e sockEntry
	f := bytes.Fields(line)
	if len(f) < 10 {
		return e, errProcNetFormat
	}
	var err error
	if e.local, err = parseHexAddrPort(f[1]); err != nil {
		return e, err
	}
	if e.remote, err = parseHexAddrPort(f[2]); err != nil {
		return e, err
	}
	st, err := strconv.ParseUint(string(f[3]), 16, 8)
	if err != nil {
		return e, errProcNetFormat
	}
	e.state = uint8(st)
	if e.inode, err = strconv.ParseUint(string(f[9]), 10, 64); err != nil {
		return e, errProcNetFormat
	}
	return e, nil
}

// parseHexAddrPort parses "0100007F:1F90" (IPv4) or 32 hex digits and a
// port (IPv6). The address is printed as 32-bit words in host byte order.
func parseHexAddrPort(b []byte) (netip.AddrPort, error) {
	a, p, ok := bytes.Cut(b, []byte{':'})
	if !ok || len(p) != 4 || (len(a) != 8 && len(a) != 32) {
		return netip.AddrPort{}, errProcNetFormat
	}
	port, err := strconv.ParseUint(string(p), 16, 16)
	if err != nil {
		return netip.AddrPort{}, errProcNetFormat
	}
	var raw [16]byte
	if _, err := hex.Decode(raw[:len(a)/2], a); err != nil {
		return netip.AddrPort{}, errProcNetFormat
	}
	// Each 4-byte word was printed as a host-order integer: hex.Decode
	// produced its big-endian bytes; turn them back into memory order.
	for i := 0; i < len(a)/2; i += 4 {
		binary.NativeEndian.PutUint32(raw[i:], binary.BigEndian.Uint32(raw[i:]))
	}
	var addr netip.Addr
	if len(a) == 8 {
		addr = netip.AddrFrom4([4]byte(raw[:4]))
	} else {
		addr = netip.AddrFrom16(raw).Unmap()
	}
	return netip.AddrPortFrom(addr, uint16(port)), nil
}

// socketInodes calls fn with the inode of every socket pid has open. It
// returns an error if the process's fds cannot be listed (gone, or owned
// by another user).
func socketInodes(procRoot string, pid int, fn func(inode uint64)) error {
	dir := filepath.Join(procRoot, strconv.Itoa(pid), "fd")
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, n := range names {
		link, err := os.Readlink(filepath.Join(dir, n))
		if err != nil {
			continue
		}
		if rest, ok := strings.CutPrefix(link, "socket:["); ok {
			if s, ok := strings.CutSuffix(rest, "]"); ok {
				if ino, err := strconv.ParseUint(s, 10, 64); err == nil {
					fn(ino)
				}
			}
		}
	}
	return nil
}

// listPIDs returns the numeric entries of procRoot.
func listPIDs(procRoot string) ([]int, error) {
	d, err := os.Open(procRoot)
	if err != nil {
		return nil, err
	}
	defer d.Close()
	names, err := d.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	pids := make([]int, 0, len(names))
	for _, n := range names {
		if pid, err := strconv.Atoi(n); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}

// errZombie is returned for a process that has exited but was not reaped.
var errZombie = errors.New("discover: process has exited")

// procStartTime returns field 22 (starttime) of /proc/PID/stat, which
// together with the PID names a process across PID reuse. A zombie (state
// Z or X: exited, not yet reaped) is reported as gone.
func procStartTime(procRoot string, pid int) (uint64, error) {
	b, err := os.ReadFile(filepath.Join(procRoot, strconv.Itoa(pid), "stat"))
	if err != nil {
		return 0, err
	}
	return parseStatStartTime(b)
}

func parseStatStartTime(b []byte) (uint64, error) {
	// comm (field 2) is in parentheses and may contain spaces and ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("discover: malformed stat")
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); starttime is field 22.
	if len(f) < 20 {
		return 0, fmt.Errorf("discover: malformed stat")
	}
	if st := string(f[0]); st == "Z" || st == "X" || st == "x" {
		return 0, errZombie
	}
	return strconv.ParseUint(string(f[19]), 10, 64)
}

// jdwpAgent is what a JVM's command line says about its JDWP agent.
type jdwpAgent struct {
	suspend bool   // suspend=y (the default)
	port    int    // the port in address=, 0 if none or 0
	name    string // main class, module/class or jar
}

// agentOptionsFromArg returns the option string of a JDWP agent argument.
func agentOptionsFromArg(arg string) (string, bool) {
	if rest, ok := strings.CutPrefix(arg, "-agentlib:jdwp"); ok {
		if rest == "" {
			return "", true
		}
		if o, ok := strings.CutPrefix(rest, "="); ok {
			return o, true
		}
		return "", false
	}
	if rest, ok := strings.CutPrefix(arg, "-Xrunjdwp"); ok {
		if rest == "" {
			return "", true
		}
		if o, ok := strings.CutPrefix(rest, ":"); ok {
			return o, true
		}
		return "", false
	}
	if rest, ok := strings.CutPrefix(arg, "-agentpath:"); ok {
		path, opts, _ := strings.Cut(rest, "=")
		base := filepath.Base(path)
		if base == "libjdwp.so" || base == "libjdwp.dylib" || strings.EqualFold(base, "jdwp.dll") {
			return opts, true
		}
	}
	return "", false
}

// parseAgentOptions parses "transport=dt_socket,server=y,suspend=n,address=5005".
// It reports whether the agent listens on a socket (server=y, dt_socket).
func parseAgentOptions(opts string) (a jdwpAgent, listens bool) {
	a.suspend = true
	server, socket := false, false
	for _, kv := range strings.Split(opts, ",") {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "transport":
			socket = v == "dt_socket"
		case "server":
			server = v == "y"
		case "suspend":
			a.suspend = v != "n"
		case "address":
			p := v
			if i := strings.LastIndexByte(v, ':'); i >= 0 {
				p = v[i+1:]
			}
			if n, err := strconv.Atoi(p); err == nil && n > 0 && n < 65536 {
				a.port = n
			}
		}
	}
	return a, server && socket
}

// launcherOptsWithValue are java launcher options whose value is the next
// argument.
var launcherOptsWithValue = map[string]bool{
	"-cp": true, "-classpath": true, "--class-path": true, "-p": true, "--module-path": true,
	"--upgrade-module-path": true, "--add-modules": true, "--limit-modules": true,
	"--add-exports": true, "--add-opens": true, "--add-reads": true, "--patch-module": true,
	"--enable-native-access": true, "--source": true,
}

// parseJavaCommand finds the JDWP agent in a JVM's arguments (argv[0]
// first) and environment (the *JAVA*_OPTIONS variables), and the main
// class or jar. ok is false when the process has no listening JDWP agent.
func parseJavaCommand(args, environ []string) (a jdwpAgent, ok bool) {
	found := false
	var opts string
	for _, arg := range args {
		if o, is := agentOptionsFromArg(arg); is {
			opts, found = o, true
			break
		}
	}
	if !found {
		for _, kv := range environ {
			k, v, _ := strings.Cut(kv, "=")
			if k != "JAVA_TOOL_OPTIONS" && k != "JDK_JAVA_OPTIONS" && k != "_JAVA_OPTIONS" {
				continue
			}
			for _, arg := range strings.Fields(v) {
				if o, is := agentOptionsFromArg(arg); is {
					opts, found = o, true
					break
				}
			}
			if found {
				break
			}
		}
	}
	if !found {
		return a, false
	}
	a, ok = parseAgentOptions(opts)
	if !ok {
		return a, false
	}
	a.name = mainName(args)
	return a, true
}

// mainName returns the main class, module/class or jar name of a java
// launcher command line, or "".
func mainName(args []string) string {
	for i := 1; i < len(args); i++ {
		arg := args[i]
		switch {
		case arg == "-jar":
			if i+1 < len(args) {
				return filepath.Base(args[i+1])
			}
			return ""
		case arg == "-m" || arg == "--module":
			if i+1 < len(args) {
				return args[i+1]
			}
			return ""
		case strings.HasPrefix(arg, "--module="):
			return strings.TrimPrefix(arg, "--module=")
		case launcherOptsWithValue[arg]:
			i++
		case strings.HasPrefix(arg, "-"), strings.HasPrefix(arg, "@"):
		default:
			return arg
		}
	}
	return ""
}

// readNulList reads a NUL-separated file such as /proc/PID/cmdline.
func readNulList(path string) ([]string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, "\x00")
	if len(b) == 0 {
		return nil, nil
	}
	return strings.Split(string(b), "\x00"), nil
}
