package discover

import (
	"encoding/binary"
	"net"
	"net/netip"
	"path/filepath"
	"strconv"
	"strings"
)

// TCP socket states as /proc/net/tcp prints them.
const (
	tcpEstablished = 0x01
	tcpListen      = 0x0A
)

// socketInode returns the inode of a /proc/PID/fd link target
// "socket:[INODE]".
func socketInode(target string) (uint64, bool) {
	if s, ok := strings.CutPrefix(target, "socket:["); ok {
		if s, ok := strings.CutSuffix(s, "]"); ok {
			ino, err := strconv.ParseUint(s, 10, 64)
			return ino, err == nil
		}
	}
	return 0, false
}

// procAddrPort returns the address of a procfs.NetTCP line. The kernel
// prints the address as 32-bit words in host byte order, and procfs reads
// them as little-endian; put them back in memory order (a no-op on
// little-endian machines). v4-mapped IPv6 addresses become IPv4.
func procAddrPort(ip net.IP, port uint64) netip.AddrPort {
	for i := 0; i+4 <= len(ip); i += 4 {
		binary.NativeEndian.PutUint32(ip[i:], binary.LittleEndian.Uint32(ip[i:]))
	}
	a, _ := netip.AddrFromSlice(ip)
	return netip.AddrPortFrom(a.Unmap(), uint16(port))
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
