package javadebug

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
)

// MaxMessage bounds one Debug Adapter Protocol message from the adapter.
const MaxMessage = 64 << 20

// ErrMessage is wrapped by errors about malformed DAP messages.
var ErrMessage = errors.New("javadebug: malformed DAP message")

// message is a DAP request, response or event, as far as the client reads
// one.
type message struct {
	Seq        int             `json:"seq"`
	Type       string          `json:"type"`
	Command    string          `json:"command,omitempty"`
	Arguments  any             `json:"arguments,omitempty"`
	RequestSeq int             `json:"request_seq,omitempty"`
	Success    bool            `json:"success,omitempty"`
	Message    string          `json:"message,omitempty"`
	Event      string          `json:"event,omitempty"`
	Body       json.RawMessage `json:"body,omitempty"`
}

// readMessage reads one "Content-Length: N\r\n\r\n" framed message.
func readMessage(r *bufio.Reader) (*message, error) {
	n := -1
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if n < 0 {
				continue // tolerate blank lines between messages
			}
			break
		}
		name, value, ok := strings.Cut(line, ":")
		if !ok {
			return nil, fmt.Errorf("%w: header %q", ErrMessage, line)
		}
		if strings.EqualFold(strings.TrimSpace(name), "Content-Length") {
			v, err := strconv.Atoi(strings.TrimSpace(value))
			if err != nil || v < 0 || v > MaxMessage {
				return nil, fmt.Errorf("%w: Content-Length %q", ErrMessage, value)
			}
			n = v
		}
	}
	// Grown as the bytes arrive: a header's length alone allocates nothing.
	var buf bytes.Buffer
	if got, err := buf.ReadFrom(io.LimitReader(r, int64(n))); err != nil {
		return nil, err
	} else if got < int64(n) {
		return nil, io.ErrUnexpectedEOF
	}
	body := buf.Bytes()
	var m message
	if err := json.Unmarshal(body, &m); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMessage, err)
	}
	return &m, nil
}

// client is the DAP client side of one adapter connection: requests go out
// on w (one writer at a time), and a reader goroutine (run) hands each
// response to its waiting request and each event to events.
type client struct {
	wmu sync.Mutex // guards w and seq
	w   io.Writer
	seq int

	mu      sync.Mutex // guards pending and err
	pending map[int]chan *message
	err     error

	events chan *message
}

func newClient(w io.Writer) *client {
	return &client{w: w, pending: map[int]chan *message{}, events: make(chan *message, 1024)}
}

// run reads messages until r ends or fails, then fails every request
// still waiting and closes events.
func (c *client) run(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	var err error
	for {
		var m *message
		if m, err = readMessage(br); err != nil {
			break
		}
		switch m.Type {
		case "response":
			c.mu.Lock()
			ch := c.pending[m.RequestSeq]
			delete(c.pending, m.RequestSeq)
			c.mu.Unlock()
			if ch != nil {
				ch <- m
			}
		case "event":
			c.events <- m
		case "request":
			// Reverse requests (runInTerminal) are not used by an attach.
		}
	}
	if errors.Is(err, io.EOF) {
		err = errors.New("javadebug: the adapter closed its output")
	}
	c.mu.Lock()
	c.err = err
	for seq, ch := range c.pending {
		close(ch)
		delete(c.pending, seq)
	}
	c.mu.Unlock()
	close(c.events)
}

// send writes a request and returns the channel its response arrives on
// (closed if the connection ends first).
func (c *client) send(command string, args any) (<-chan *message, error) {
	ch := make(chan *message, 1)
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.seq++
	c.mu.Lock()
	if c.err != nil {
		c.mu.Unlock()
		return nil, c.err
	}
	c.pending[c.seq] = ch
	c.mu.Unlock()
	body, err := json.Marshal(message{Seq: c.seq, Type: "request", Command: command, Arguments: args})
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "Content-Length: %d\r\n\r\n", len(body))
	buf.Write(body)
	if _, err := c.w.Write(buf.Bytes()); err != nil {
		return nil, fmt.Errorf("javadebug: %s: %w", command, err)
	}
	return ch, nil
}

// wait returns the response on ch, decoded into body when body is not nil.
func (c *client) wait(command string, ch <-chan *message, body any) error {
	m, ok := <-ch
	if !ok {
		c.mu.Lock()
		err := c.err
		c.mu.Unlock()
		return fmt.Errorf("javadebug: %s: no response: %w", command, err)
	}
	if !m.Success {
		return fmt.Errorf("javadebug: %s failed: %s", command, m.Message)
	}
	if body != nil && len(m.Body) > 0 {
		if err := json.Unmarshal(m.Body, body); err != nil {
			return fmt.Errorf("%w: %s response: %v", ErrMessage, command, err)
		}
	}
	return nil
}

// call sends a request and waits for its response.
func (c *client) call(command string, args any, body any) error {
	ch, err := c.send(command, args)
	if err != nil {
		return err
	}
	return c.wait(command, ch, body)
}
