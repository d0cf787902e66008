package journal

import (
	"encoding/base64"
	"strconv"
	"unicode/utf8"
)

// jsonlEncoder writes JSON Lines (SCHEMA.md) without reflection: one
// record per line, fields in a fixed order.
type jsonlEncoder struct{}

func (jsonlEncoder) begin(dst []byte, w *writer) []byte {
	dst = append(dst, `{"type":"header","schema":`...)
	dst = strconv.AppendInt(dst, SchemaVersion, 10)
	dst = appendStrField(dst, "version", w.j.opts.Version)
	dst = appendStrField(dst, "start", w.j.start.UTC().Format(rfc3339Nano))
	dst = appendStrField(dst, "format", string(FormatJSONLines))
	dst = appendIntField(dst, "raw_limit", int64(max(w.j.opts.RawLimit, 0)))
	if w.fileIdx > 0 {
		dst = appendIntField(dst, "file_index", int64(w.fileIdx))
	}
	return append(dst, "}\n"...)
}

func (jsonlEncoder) end(dst []byte, _ *writer, _ bool) []byte { return dst }

func (jsonlEncoder) record(dst []byte, _ *writer, _ *sessState, r *Record) []byte {
	return appendRecordJSON(dst, r)
}

// rfc3339Nano is time.RFC3339Nano with a fixed number of digits.
const rfc3339Nano = "2006-01-02T15:04:05.000000000Z07:00"

// appendRecordJSON appends r as one JSON line. It writes the fields a
// record of its type carries; encoding/json decodes it back into a Record.
func appendRecordJSON(dst []byte, r *Record) []byte {
	dst = append(dst, `{"type":`...)
	dst = appendJSONString(dst, r.Type)
	if r.Session != 0 {
		dst = appendUintField(dst, "session", r.Session)
	}
	dst = appendIntField(dst, "t", r.T)
	switch r.Type {
	case TypePacket:
		dst = appendStrField(dst, "view", r.View)
		dst = appendStrField(dst, "dir", r.Dir)
		dst = appendStrField(dst, "kind", r.Kind)
		dst = appendUintField(dst, "id", uint64(r.ID))
		if r.WireID != nil {
			dst = appendUintField(dst, "wire_id", uint64(*r.WireID))
		}
		if r.Name != "" {
			dst = appendStrField(dst, "name", r.Name)
		}
		dst = appendUintField(dst, "set", uint64(r.Set))
		dst = appendUintField(dst, "cmd", uint64(r.Cmd))
		if r.Error != 0 {
			dst = appendUintField(dst, "error", uint64(r.Error))
			dst = appendStrField(dst, "error_name", r.ErrorName)
		}
		dst = appendIntField(dst, "len", int64(r.Len))
		dst = appendStrField(dst, "served", r.Served)
		if r.LatencyNs != 0 {
			dst = appendIntField(dst, "latency_ns", r.LatencyNs)
		}
		if r.VMLatencyNs != 0 {
			dst = appendIntField(dst, "vm_latency_ns", r.VMLatencyNs)
		}
		if r.Thread != nil {
			dst = append(dst, `,"thread":`...)
			dst = appendUint64JSON(dst, uint64(*r.Thread))
		}
		if len(r.Events) > 0 {
			dst = append(dst, `,"events":[`...)
			for i, e := range r.Events {
				if i > 0 {
					dst = append(dst, ',')
				}
				dst = appendJSONString(dst, e)
			}
			dst = append(dst, ']')
		}
		if r.Chunk != "" {
			dst = appendStrField(dst, "chunk", r.Chunk)
		}
		if len(r.Bytes) > 0 {
			dst = append(dst, `,"bytes":"`...)
			dst = base64.StdEncoding.AppendEncode(dst, r.Bytes)
			dst = append(dst, '"')
			if r.Truncated {
				dst = append(dst, `,"truncated":true`...)
			}
		}
	case TypeSessionStart:
		if r.Debugger != "" {
			dst = appendStrField(dst, "debugger", r.Debugger)
		}
		if r.VM != "" {
			dst = appendStrField(dst, "vm", r.VM)
		}
		if r.User != "" {
			dst = appendStrField(dst, "user", r.User)
		}
		if r.IDSizes != nil {
			dst = appendIDSizes(dst, r.IDSizes)
		}
		if r.Continued {
			dst = append(dst, `,"continued":true`...)
		}
	case TypeSessionEnd:
		if r.Err != "" {
			dst = appendStrField(dst, "err", r.Err)
		}
		dst = appendUintField(dst, "packets", r.PacketsLogged)
		if r.Unanswered != 0 {
			dst = appendIntField(dst, "unanswered", int64(r.Unanswered))
		}
	case TypeIDSizes:
		if r.IDSizes != nil {
			dst = appendIDSizes(dst, r.IDSizes)
		}
	case TypeDropped:
		dst = appendUintField(dst, "count", r.DroppedCount)
		dst = appendUintField(dst, "total", r.DroppedTotal)
	case TypeClient:
		dst = appendStrField(dst, "vm", r.VM)
		dst = appendUintField(dst, "client", r.Client)
		dst = appendStrField(dst, "debugger", r.Debugger)
		dst = appendStrField(dst, "role", r.Role)
		if r.Left != "" {
			dst = appendStrField(dst, "left", r.Left)
		}
	}
	return append(dst, "}\n"...)
}

func appendIDSizes(dst []byte, z *IDSizesRecord) []byte {
	dst = append(dst, `,"id_sizes":{"field_id":`...)
	dst = strconv.AppendInt(dst, int64(z.FieldID), 10)
	dst = appendIntField(dst, "method_id", int64(z.MethodID))
	dst = appendIntField(dst, "object_id", int64(z.ObjectID))
	dst = appendIntField(dst, "reference_type_id", int64(z.ReferenceTypeID))
	dst = appendIntField(dst, "frame_id", int64(z.FrameID))
	return append(dst, '}')
}

func appendStrField(dst []byte, k, v string) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, k...)
	dst = append(dst, '"', ':')
	return appendJSONString(dst, v)
}

func appendIntField(dst []byte, k string, v int64) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, k...)
	dst = append(dst, '"', ':')
	return strconv.AppendInt(dst, v, 10)
}

func appendUintField(dst []byte, k string, v uint64) []byte {
	dst = append(dst, ',', '"')
	dst = append(dst, k...)
	dst = append(dst, '"', ':')
	return appendUint64JSON(dst, v)
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string: quotes, backslashes and
// control characters escaped, invalid UTF-8 replaced.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				dst = append(dst, '\\', c)
			case c < 0x20:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				dst = append(dst, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, `\ufffd`...)
		} else {
			dst = append(dst, s[i:i+size]...)
		}
		i += size
	}
	return append(dst, '"')
}
