package adbdevice

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"

	"github.com/rs/zerolog"
)

// transport is one adb server connection.
type transport struct {
	d    *Device
	conn net.Conn
	log  zerolog.Logger
	wg   sync.WaitGroup // counts service goroutines

	wmu  sync.Mutex // guards conn writes and wbuf
	wbuf []byte

	mu       sync.Mutex // guards the fields below
	online   bool       // a CNXN arrived
	maxSend  uint32     // the server's maxdata
	checksum bool       // verify payload checksums (protocol before VersionSkipChecksum)
	streams  map[uint32]*stream
	nextID   uint32
}

func (t *transport) send(m Message) error {
	t.wmu.Lock()
	defer t.wmu.Unlock()
	t.wbuf = AppendMessage(t.wbuf[:0], m)
	_, err := t.conn.Write(t.wbuf)
	return err
}

// run reads and handles messages until the connection fails; it always
// returns the error that ended it.
func (t *transport) run(ctx context.Context) error {
	r := bufio.NewReaderSize(t.conn, 64<<10)
	for {
		t.mu.Lock()
		check := t.checksum
		t.mu.Unlock()
		m, err := ReadMessage(r, MaxData, check)
		if err != nil {
			return err
		}
		if err := t.handle(ctx, m); err != nil {
			return err
		}
	}
}

func (t *transport) handle(ctx context.Context, m Message) error {
	t.mu.Lock()
	online := t.online
	t.mu.Unlock()
	if m.Command != CmdCNXN && !online {
		t.log.Debug().Stringer("msg", m).Msg("message before CNXN; ignored")
		return nil
	}
	switch m.Command {
	case CmdCNXN:
		return t.connect(m)
	case CmdOPEN:
		t.open(ctx, m)
	case CmdOKAY:
		if s := t.stream(m.Arg1); s != nil && s.remote == m.Arg0 {
			select {
			case s.ready <- struct{}{}:
			default:
			}
		}
	case CmdWRTE:
		s := t.stream(m.Arg1)
		if s == nil || s.remote != m.Arg0 {
			return nil // closed while in flight
		}
		select {
		case s.in <- m.Data:
		default:
			t.log.Error().Uint32(LogStream, s.local).Msg("adb server wrote again before the device's OKAY; closing the stream")
			s.Close()
		}
	case CmdCLSE:
		if s := t.stream(m.Arg1); s != nil && (m.Arg0 == 0 || s.remote == m.Arg0) {
			s.closeBy(false)
		}
	case CmdAUTH, CmdSTLS:
		return fmt.Errorf("adb server sent %s: this fake device supports neither authentication nor TLS", m.Command)
	case CmdSYNC:
	}
	return nil
}

// connect answers the server's CNXN with the device's.
func (t *transport) connect(m Message) error {
	version := min(m.Arg0, uint32(VersionSkipChecksum))
	if version < VersionMin {
		return fmt.Errorf("adb server protocol version 0x%08x is too old", m.Arg0)
	}
	maxSend := min(max(m.Arg1, 1), MaxData)
	t.mu.Lock()
	t.online = true
	t.maxSend = maxSend
	t.checksum = version < VersionSkipChecksum
	t.mu.Unlock()
	t.log.Info().Str("host_banner", string(m.Data)).Uint32("version", m.Arg0).Uint32("max_data", m.Arg1).Msg("adb server connected")
	return t.send(Message{Command: CmdCNXN, Arg0: VersionSkipChecksum, Arg1: maxData, Data: []byte(t.d.banner())})
}

func (t *transport) stream(local uint32) *stream {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.streams[local]
}

func (t *transport) closeAll() {
	t.mu.Lock()
	ss := slices.Collect(maps.Values(t.streams))
	t.mu.Unlock()
	for _, s := range ss {
		s.closeBy(false)
	}
}

// open starts the service an OPEN names, or refuses it with CLSE.
func (t *transport) open(ctx context.Context, m Message) {
	dest := string(m.Data)
	if i := strings.IndexByte(dest, 0); i >= 0 {
		dest = dest[:i] // names travel NUL-terminated
	}
	if m.Arg0 == 0 {
		t.log.Error().Str(LogService, dest).Msg("OPEN with stream ID 0; ignored")
		return
	}
	log := t.log.With().Str(LogService, dest).Logger()
	svc, err := t.d.service(ctx, dest)
	if err != nil {
		log.Info().Err(err).Msg("service refused")
		t.send(Message{Command: CmdCLSE, Arg0: 0, Arg1: m.Arg0}) //nolint:errcheck // the reader sees a dead connection
		return
	}
	t.mu.Lock()
	t.nextID++
	s := &stream{
		t: t, local: t.nextID, remote: m.Arg0, maxSend: t.maxSend,
		in: make(chan []byte, 1), ready: make(chan struct{}, 1), done: make(chan struct{}),
	}
	t.streams[s.local] = s
	t.mu.Unlock()
	log = log.With().Uint32(LogStream, s.local).Logger()
	if err := t.send(Message{Command: CmdOKAY, Arg0: s.local, Arg1: s.remote}); err != nil {
		svc.close()
		s.closeBy(false)
		return
	}
	log.Debug().Msg("service opened")
	t.wg.Go(func() {
		defer s.Close()
		svc.run(ctx, s, log)
	})
}

// stream is one open service stream. It is an io.ReadWriteCloser for the
// service: Read returns what the server wrote (acknowledging each WRTE once
// consumed), Write sends WRTEs one at a time, each after the server's OKAY.
type stream struct {
	t             *transport
	local, remote uint32
	maxSend       uint32
	in            chan []byte   // WRTE payloads; one at a time by protocol
	ready         chan struct{} // the server's OKAY after our WRTE
	done          chan struct{} // closed when the stream is closed
	once          sync.Once
	rbuf          []byte // unread rest of the current WRTE (Read's goroutine only)
	wmu           sync.Mutex
}

func (s *stream) Read(p []byte) (int, error) {
	if len(s.rbuf) == 0 {
		select {
		case b := <-s.in:
			s.rbuf = b
			if len(b) == 0 {
				s.ack()
				return 0, nil
			}
		case <-s.done:
			return 0, io.EOF
		}
	}
	n := copy(p, s.rbuf)
	s.rbuf = s.rbuf[n:]
	if len(s.rbuf) == 0 {
		s.ack()
	}
	return n, nil
}

func (s *stream) ack() {
	s.t.send(Message{Command: CmdOKAY, Arg0: s.local, Arg1: s.remote}) //nolint:errcheck // the reader sees a dead connection
}

func (s *stream) Write(p []byte) (int, error) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	n := 0
	for len(p) > 0 {
		c := p[:min(len(p), int(s.maxSend))]
		select {
		case <-s.done:
			return n, net.ErrClosed
		default:
		}
		if err := s.t.send(Message{Command: CmdWRTE, Arg0: s.local, Arg1: s.remote, Data: c}); err != nil {
			return n, err
		}
		select {
		case <-s.ready:
		case <-s.done:
			return n, net.ErrClosed
		}
		n += len(c)
		p = p[len(c):]
	}
	return n, nil
}

// Close closes the stream from the device's side (CLSE to the server).
func (s *stream) Close() error {
	s.closeBy(true)
	return nil
}

// closeBy closes the stream once; tell says whether to send CLSE (not
// when the server closed it or the connection is gone).
func (s *stream) closeBy(tell bool) {
	s.once.Do(func() {
		close(s.done)
		s.t.mu.Lock()
		delete(s.t.streams, s.local)
		s.t.mu.Unlock()
		if tell {
			s.t.send(Message{Command: CmdCLSE, Arg0: s.local, Arg1: s.remote}) //nolint:errcheck // the reader sees a dead connection
		}
	})
}
