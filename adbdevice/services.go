package adbdevice

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	"github.com/jdwpaccel/jdwpaccel/internal/adbwire"
	"github.com/jdwpaccel/jdwpaccel/internal/logkey"
	"github.com/rs/zerolog"
)

// service is an opened device service.
type service interface {
	run(ctx context.Context, s *stream, log zerolog.Logger)
	close() // releases what opening took, when run never starts
}

// service opens the service named dest.
func (d *Device) service(ctx context.Context, dest string) (service, error) {
	switch {
	case dest == "track-jdwp":
		return trackJDWP{d}, nil
	case dest == "jdwp":
		return output(d.pidList()), nil
	case strings.HasPrefix(dest, "jdwp:"):
		pid, err := strconv.Atoi(strings.TrimPrefix(dest, "jdwp:"))
		if err != nil {
			return nil, fmt.Errorf("bad pid in %q", dest)
		}
		p, ok := d.process(pid)
		if !ok {
			return nil, fmt.Errorf("no debuggable process %d", pid)
		}
		conn, err := d.cfg.Dial(ctx, p.Addr)
		if err != nil {
			return nil, fmt.Errorf("process %d (%s): %w", pid, p.Name, err)
		}
		return &pipe{conn: conn, p: p}, nil
	case strings.HasPrefix(dest, "shell:"), strings.HasPrefix(dest, "exec:"):
		_, cmd, _ := strings.Cut(dest, ":")
		return output(d.shell(cmd)), nil
	}
	return nil, errors.New("unknown service")
}

func (d *Device) process(pid int) (Process, bool) {
	for _, p := range d.cfg.Processes {
		if p.PID == pid {
			return p, true
		}
	}
	return Process{}, false
}

func (d *Device) pidList() string {
	var b strings.Builder
	for _, p := range d.cfg.Processes {
		fmt.Fprintf(&b, "%d\n", p.PID)
	}
	return b.String()
}

// shell answers the few commands tools ask a device: getprop, pidof,
// echo, cat /proc/PID/cmdline (discovery's process names). Anything else
// gets the shell's "not found".
func (d *Device) shell(cmd string) string {
	f := strings.Fields(cmd)
	if len(f) == 0 {
		return ""
	}
	switch f[0] {
	case "getprop":
		if len(f) > 1 {
			return d.props[f[1]] + "\n"
		}
		var b strings.Builder
		for _, k := range slices.Sorted(maps.Keys(d.props)) {
			fmt.Fprintf(&b, "[%s]: [%s]\n", k, d.props[k])
		}
		return b.String()
	case "pidof":
		var pids []string
		for _, name := range f[1:] {
			if name == "-s" {
				continue
			}
			for _, p := range d.cfg.Processes {
				if p.Name == name {
					pids = append(pids, strconv.Itoa(p.PID))
				}
			}
		}
		if len(pids) == 0 {
			return ""
		}
		if slices.Contains(f, "-s") {
			pids = pids[:1]
		}
		return strings.Join(pids, " ") + "\n"
	case "echo":
		return strings.Join(f[1:], " ") + "\n"
	case "cat":
		var b strings.Builder
		for _, path := range f[1:] {
			b.WriteString(d.cat(path))
		}
		return b.String()
	}
	return "/system/bin/sh: " + f[0] + ": inaccessible or not found\n"
}

// cat is what cat prints of path: a debuggable process's command line
// (its name, NUL-terminated, as the kernel gives it), else cat's error.
func (d *Device) cat(path string) string {
	if rest, ok := strings.CutPrefix(path, "/proc/"); ok {
		if pid, ok := strings.CutSuffix(rest, "/cmdline"); ok {
			if n, err := strconv.Atoi(pid); err == nil {
				if p, ok := d.process(n); ok {
					return p.Name + "\x00"
				}
			}
		}
	}
	return "cat: " + path + ": No such file or directory\n"
}

// output writes a fixed text and closes.
type output string

func (o output) run(_ context.Context, s *stream, log zerolog.Logger) {
	if _, err := io.WriteString(s, string(o)); err != nil {
		log.Debug().Err(err).Msg("output not delivered")
	}
}

func (output) close() {}

// trackJDWP sends the process list once (the list never changes) and
// keeps the stream open until the server closes it.
type trackJDWP struct{ d *Device }

func (tj trackJDWP) run(ctx context.Context, s *stream, log zerolog.Logger) {
	list := tj.d.pidList()
	if _, err := s.Write(adbwire.AppendMessage(nil, list)); err != nil {
		return
	}
	select {
	case <-s.done:
	case <-ctx.Done():
	}
}

func (trackJDWP) close() {}

// pipe relays a jdwp:PID stream to the VM's JDWP listener.
type pipe struct {
	conn net.Conn
	p    Process
}

func (p *pipe) run(_ context.Context, s *stream, log zerolog.Logger) {
	log = log.With().Int(logkey.PID, p.p.PID).Str(logkey.VM, p.p.Addr).Logger()
	log.Info().Msg("JDWP stream opened to the VM")
	done := make(chan struct{})
	go func() {
		defer close(done)
		io.Copy(p.conn, s) //nolint:errcheck // ends when either side closes
		if tc, ok := p.conn.(*net.TCPConn); ok {
			tc.CloseWrite()
		}
	}()
	io.Copy(s, p.conn) //nolint:errcheck // ends when either side closes
	p.conn.Close()
	s.Close()
	<-done
	log.Info().Msg("JDWP stream closed")
}

func (p *pipe) close() { p.conn.Close() }
