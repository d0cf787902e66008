package push

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
	"github.com/klauspost/compress/zstd"
)

// SetPush is the vendor command set reserved for push on the split stream
// (PROTOCOL.md).
const SetPush jdwp.CommandSet = 0xE1

// The commands of SetPush.
var (
	// CmdBundle carries pushed replies from the far end to the near end. It
	// gets no reply.
	CmdBundle = jdwp.Cmd{Set: SetPush, Cmd: 1}
	// CmdUsage tells the far end which commands the near end answered
	// from its cache during a stop. The far end answers it with an empty
	// reply.
	CmdUsage = jdwp.Cmd{Set: SetPush, Cmd: 2}
)

// Version is the bundle format's version (PROTOCOL.md, "Versions").
const Version = 3

// Header flags; flagsMask holds every flag this end knows.
const (
	flagZstd  = 1 << 0
	flagsMask = flagZstd
)

// headerSize is the size of a bundle or usage body's header: version,
// flags, stop serial, fence, round trip, record count, payload length.
const headerSize = 1 + 1 + 8 + 8 + 4 + 4 + 4

// Bounds a parser enforces, whatever the sender says.
const (
	// MaxRecords bounds the records of one body.
	MaxRecords = 1 << 16
	// MaxPayload bounds a body's decoded payload.
	MaxPayload = 16 << 20
)

// ErrBadBundle is wrapped by every parse error.
var ErrBadBundle = errors.New("push: malformed bundle")

func bad(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrBadBundle}, args...)...)
}

// Header is what a bundle or usage body says before its records.
type Header struct {
	Version uint8
	Flags   uint8
	// Stop is the far end's serial of the stop the records belong to.
	Stop uint64
	// Fence names, in a bundle, the last command that may change the
	// VM's state the far end had received from the near end when the
	// bundle's first record was gathered (fenceOf its packet ID; zero for
	// none yet): its records reflect every command up to that one. Zero in
	// a usage body.
	Fence uint64
	// RTT is, in a usage body, the link's round trip in microseconds as
	// the near end measures it (zero while unknown). Zero in a bundle.
	RTT uint32
	// Records is how many records the payload holds.
	Records uint32
	// RawLen is the payload's length once decoded.
	RawLen uint32
}

// Record is one (command, parameters, reply) of a bundle, or one
// (command, parameters) of a usage body (Error and Body zero). Its slices
// point into the parser's buffer.
type Record struct {
	Cmd    jdwp.Cmd
	Params []byte
	Error  jdwp.ErrorCode
	Body   []byte
	// Moment, in a bundle, numbers the moment the far end read the reply
	// in (its VM suspended by the far end around the moment's reads),
	// from 1 within a stop; 0 for none.
	Moment uint16
}

// appendRecord appends one bundle record to dst.
func appendRecord(dst []byte, c jdwp.Cmd, params []byte, code jdwp.ErrorCode, body []byte, moment uint16) []byte {
	dst = append(dst, byte(c.Set), c.Cmd)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(params)))
	dst = append(dst, params...)
	dst = binary.BigEndian.AppendUint16(dst, moment)
	dst = binary.BigEndian.AppendUint16(dst, uint16(code))
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(body)))
	return append(dst, body...)
}

// appendUsage appends one usage record to dst.
func appendUsage(dst []byte, c jdwp.Cmd, params []byte) []byte {
	dst = append(dst, byte(c.Set), c.Cmd)
	dst = binary.BigEndian.AppendUint16(dst, uint16(len(params)))
	return append(dst, params...)
}

// codec is one session's compressor and decompressor, created on first
// use and reused for every body; not safe for concurrent use (its owner
// serialises calls).
type codec struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
}

func (c *codec) encoder() *zstd.Encoder {
	if c.enc == nil {
		// Errors only for invalid options.
		c.enc, _ = zstd.NewWriter(nil, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstd.SpeedFastest),
			zstd.WithWindowSize(1<<20), zstd.WithEncoderCRC(false))
	}
	return c.enc
}

func (c *codec) decoder() *zstd.Decoder {
	if c.dec == nil {
		c.dec, _ = zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxPayload),
			zstd.WithDecoderMaxWindow(1<<23))
	}
	return c.dec
}

// close releases the codec's resources.
func (c *codec) close() {
	if c.enc != nil {
		c.enc.Close()
	}
	if c.dec != nil {
		c.dec.Close()
	}
}

// appendBody appends to dst a body with header h (Records, Stop and Flags
// but for compression) and payload raw, compressed with c when that makes
// it smaller (c nil: never).
func appendBody(dst []byte, h Header, raw []byte, c *codec) []byte {
	start := len(dst)
	dst = append(dst, Version, 0)
	dst = binary.BigEndian.AppendUint64(dst, h.Stop)
	dst = binary.BigEndian.AppendUint64(dst, h.Fence)
	dst = binary.BigEndian.AppendUint32(dst, h.RTT)
	dst = binary.BigEndian.AppendUint32(dst, h.Records)
	dst = binary.BigEndian.AppendUint32(dst, uint32(len(raw)))
	if c != nil && len(raw) > 64 {
		n := len(dst)
		dst = c.encoder().EncodeAll(raw, dst)
		if len(dst)-n < len(raw) {
			dst[start+1] = flagZstd
			return dst
		}
		dst = dst[:n]
	}
	return append(dst, raw...)
}

// parseHeader reads a body's header and returns its payload as sent.
func parseHeader(body []byte) (Header, []byte, error) {
	if len(body) < headerSize {
		return Header{}, nil, bad("body of %d bytes, shorter than its header", len(body))
	}
	h := Header{Version: body[0], Flags: body[1], Stop: binary.BigEndian.Uint64(body[2:]),
		Fence: binary.BigEndian.Uint64(body[10:]), RTT: binary.BigEndian.Uint32(body[18:]),
		Records: binary.BigEndian.Uint32(body[22:]), RawLen: binary.BigEndian.Uint32(body[26:])}
	switch {
	case h.Version != Version:
		return h, nil, bad("version %d (this end speaks %d)", h.Version, Version)
	case h.Flags&^flagsMask != 0:
		return h, nil, bad("unknown flags %#x", h.Flags)
	case h.Records > MaxRecords:
		return h, nil, bad("%d records, above %d", h.Records, MaxRecords)
	case h.RawLen > MaxPayload:
		return h, nil, bad("payload of %d bytes, above %d", h.RawLen, MaxPayload)
	}
	return h, body[headerSize:], nil
}

// decode returns the body's payload decoded: payload itself, or its
// decompression appended to scratch[:0].
func decode(h Header, payload, scratch []byte, c *codec) ([]byte, error) {
	if h.Flags&flagZstd == 0 {
		if uint32(len(payload)) != h.RawLen {
			return nil, bad("payload of %d bytes, header says %d", len(payload), h.RawLen)
		}
		return payload, nil
	}
	if cap(scratch) < int(h.RawLen) {
		scratch = make([]byte, 0, h.RawLen)
	}
	raw, err := c.decoder().DecodeAll(payload, scratch[:0])
	if err != nil {
		return nil, bad("zstd: %v", err)
	}
	if uint32(len(raw)) != h.RawLen {
		return nil, bad("payload decodes to %d bytes, header says %d", len(raw), h.RawLen)
	}
	return raw, nil
}

// parseRecords reads h.Records records from raw into recs[:0]: bundle
// records, or usage records when usage. Every byte of raw must belong to
// a record.
func parseRecords(h Header, raw []byte, usage bool, recs []Record) ([]Record, error) {
	recs = recs[:0]
	for i := uint32(0); i < h.Records; i++ {
		var r Record
		if len(raw) < 4 {
			return recs, bad("record %d cut short", i)
		}
		r.Cmd = jdwp.Cmd{Set: jdwp.CommandSet(raw[0]), Cmd: raw[1]}
		n := int(binary.BigEndian.Uint16(raw[2:]))
		raw = raw[4:]
		if len(raw) < n {
			return recs, bad("record %d: parameters cut short", i)
		}
		r.Params, raw = raw[:n:n], raw[n:]
		if !usage {
			if len(raw) < 8 {
				return recs, bad("record %d: reply cut short", i)
			}
			r.Moment = binary.BigEndian.Uint16(raw)
			r.Error = jdwp.ErrorCode(binary.BigEndian.Uint16(raw[2:]))
			m := binary.BigEndian.Uint32(raw[4:])
			raw = raw[8:]
			if uint64(len(raw)) < uint64(m) {
				return recs, bad("record %d: reply body cut short", i)
			}
			r.Body, raw = raw[:m:m], raw[m:]
		}
		recs = append(recs, r)
	}
	if len(raw) != 0 {
		return recs, bad("%d bytes after the last record", len(raw))
	}
	return recs, nil
}

// parser reads bodies of one session, reusing its buffers: the records it
// returns are valid until its next call. Not safe for concurrent use.
type parser struct {
	c       *codec
	scratch []byte   // decoded payloads
	recs    []Record // parsed records
}

// parse reads a bundle body (usage false) or a usage body.
func (p *parser) parse(body []byte, usage bool) (Header, []Record, error) {
	h, payload, err := parseHeader(body)
	if err != nil {
		return h, nil, err
	}
	raw, err := decode(h, payload, p.scratch, p.c)
	if err != nil {
		return h, nil, err
	}
	if h.Flags&flagZstd != 0 {
		p.scratch = raw[:0]
	}
	p.recs, err = parseRecords(h, raw, usage, p.recs)
	return h, p.recs, err
}

// fixLength sets a packet's length field to its length.
func fixLength(p []byte) { binary.BigEndian.PutUint32(p, uint32(len(p))) }
