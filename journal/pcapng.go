package journal

import (
	"encoding/binary"
	"strconv"

	"github.com/jdwpaccel/jdwpaccel/jdwp"
)

// The pcapng file holds the debugger view only, as the TCP conversation
// the debugger would have had with a VM: Ethernet / IPv4 / TCP frames with
// consistent sequence numbers per direction, the 14-byte handshakes in
// their own segments (Wireshark's JDWP dissector recognises them by
// length), then one segment per JDWP packet (several for packets above
// maxPcapSegment bytes). Each session is its own TCP connection from
// debuggerIP:40000+session to proxyIP:PcapPort.
const (
	// PcapPort is the VM-side TCP port in pcapng journals: the port
	// Wireshark's JDWP dissector registers on.
	PcapPort = 9009

	pcapBaseSeqDbg   = 0x10000000
	pcapBaseSeqProxy = 0x20000000

	tcpFIN = 0x01
	tcpSYN = 0x02
	tcpPSH = 0x08
	tcpACK = 0x10

	ethHeader  = 14
	ipv4Header = 20
	tcpHeader  = 20
)

var (
	pcapDebuggerIP  = [4]byte{10, 0, 0, 1}
	pcapProxyIP     = [4]byte{10, 0, 0, 2}
	pcapDebuggerMAC = [6]byte{0x02, 0, 0, 0, 0, 0x01}
	pcapProxyMAC    = [6]byte{0x02, 0, 0, 0, 0, 0x02}
)

// tcpState is the synthesised TCP flow of one session.
type tcpState struct {
	started    bool // SYN written in the current file
	handshaken bool // JDWP handshakes written (in any file)
	dbgSeq     uint32
	proxySeq   uint32
}

// pcapngEncoder writes a pcapng section with one Ethernet interface and
// nanosecond timestamps.
type pcapngEncoder struct {
	frame   []byte // scratch for one frame, reused
	patched []byte // scratch for a truncated packet, reused
	ipID    uint16
}

func (e *pcapngEncoder) begin(dst []byte, w *writer) []byte {
	for _, s := range w.sessions {
		s.tcp.started = false
	}
	// Section header block.
	start := len(dst)
	dst = le32(dst, 0x0A0D0D0A)
	dst = le32(dst, 0) // total length, patched below
	dst = le32(dst, 0x1A2B3C4D)
	dst = le16(dst, 1)
	dst = le16(dst, 0)
	dst = le64(dst, ^uint64(0))                                     // section length unknown
	dst = pcapOption(dst, 4, []byte("jdwpaccel "+w.j.opts.Version)) // shb_userappl
	dst = pcapOption(dst, 1, []byte("jdwpaccel journal, debugger view; started "+w.j.start.UTC().Format(rfc3339Nano)))
	dst = le32(dst, 0) // opt_endofopt
	dst = closeBlock(dst, start)
	// Interface description block: Ethernet, no snap length, ns stamps.
	start = len(dst)
	dst = le32(dst, 1)
	dst = le32(dst, 0)
	dst = le16(dst, 1) // LINKTYPE_ETHERNET
	dst = le16(dst, 0)
	dst = le32(dst, 0)
	dst = pcapOption(dst, 2, []byte("jdwpaccel-debugger-view")) // if_name
	dst = pcapOption(dst, 9, []byte{9})                         // if_tsresol: 10^-9
	dst = le32(dst, 0)
	return closeBlock(dst, start)
}

func (e *pcapngEncoder) end(dst []byte, _ *writer, _ bool) []byte { return dst }

func (e *pcapngEncoder) record(dst []byte, w *writer, s *sessState, r *Record) []byte {
	switch r.Type {
	case TypeSessionStart:
		dst = e.startFlow(dst, w, s, r.T)
	case TypeSessionEnd:
		if !s.tcp.started {
			return dst
		}
		dst = e.segment(dst, w, s, r.T, true, tcpFIN|tcpACK, nil, "")
		dst = e.segment(dst, w, s, r.T, false, tcpFIN|tcpACK, nil, "")
		dst = e.segment(dst, w, s, r.T, true, tcpACK, nil, "")
	case TypePacket:
		if !r.InDebuggerView() {
			return dst
		}
		if !s.tcp.started {
			dst = e.startFlow(dst, w, s, r.T)
		}
		data := w.raw
		comment := ""
		if r.Served != ServedForwarded {
			comment = "jdwpaccel: served=" + r.Served
		}
		if len(data) < r.Len {
			// Keep the stream decodable: the length field says what is
			// there; the comment says what was.
			e.patched = append(e.patched[:0], data...)
			binary.BigEndian.PutUint32(e.patched, uint32(len(data)))
			data = e.patched
			if comment != "" {
				comment += "; "
			}
			comment += "jdwpaccel: truncated from " + strconv.Itoa(r.Len) + " bytes"
		}
		fromDbg := r.Dir == DirToVM
		for len(data) > maxPcapSegment {
			dst = e.segment(dst, w, s, r.T, fromDbg, tcpACK, data[:maxPcapSegment], comment)
			data = data[maxPcapSegment:]
			comment = ""
		}
		dst = e.segment(dst, w, s, r.T, fromDbg, tcpPSH|tcpACK, data, comment)
	}
	return dst
}

// startFlow writes the TCP three-way handshake and, once per session, the
// two JDWP handshakes.
func (e *pcapngEncoder) startFlow(dst []byte, w *writer, s *sessState, t int64) []byte {
	if !s.tcp.handshaken {
		s.tcp.dbgSeq, s.tcp.proxySeq = pcapBaseSeqDbg, pcapBaseSeqProxy
	}
	s.tcp.started = true
	// SYN and SYN-ACK consume one sequence number each.
	s.tcp.dbgSeq--
	s.tcp.proxySeq--
	dst = e.segment(dst, w, s, t, true, tcpSYN, nil, "jdwpaccel session "+strconv.FormatUint(s.id, 10)+": "+s.debugger+" -> "+s.vm)
	s.tcp.dbgSeq++
	dst = e.segment(dst, w, s, t, false, tcpSYN|tcpACK, nil, "")
	s.tcp.proxySeq++
	dst = e.segment(dst, w, s, t, true, tcpACK, nil, "")
	if !s.tcp.handshaken {
		s.tcp.handshaken = true
		dst = e.segment(dst, w, s, t, true, tcpPSH|tcpACK, []byte(jdwp.Handshake), "")
		dst = e.segment(dst, w, s, t, false, tcpPSH|tcpACK, []byte(jdwp.Handshake), "")
	}
	return dst
}

// segment appends one enhanced packet block holding a TCP segment and
// advances the sender's sequence number.
func (e *pcapngEncoder) segment(dst []byte, w *writer, s *sessState, t int64, fromDbg bool, flags byte, data []byte, comment string) []byte {
	srcIP, dstIP := pcapDebuggerIP, pcapProxyIP
	srcMAC, dstMAC := pcapDebuggerMAC, pcapProxyMAC
	srcPort, dstPort := uint16(40000+s.id%25000), uint16(PcapPort)
	seq, ack := s.tcp.dbgSeq, s.tcp.proxySeq
	if !fromDbg {
		srcIP, dstIP = dstIP, srcIP
		srcMAC, dstMAC = dstMAC, srcMAC
		srcPort, dstPort = dstPort, srcPort
		seq, ack = ack, seq
	}
	if flags&tcpACK == 0 {
		ack = 0
	}
	f := e.frame[:0]
	f = append(f, dstMAC[:]...)
	f = append(f, srcMAC[:]...)
	f = append(f, 0x08, 0x00)
	ip := len(f)
	e.ipID++
	f = append(f, 0x45, 0)
	f = be16(f, uint16(ipv4Header+tcpHeader+len(data)))
	f = be16(f, e.ipID)
	f = append(f, 0x40, 0, 64, 6, 0, 0) // DF, TTL 64, TCP, checksum
	f = append(f, srcIP[:]...)
	f = append(f, dstIP[:]...)
	binary.BigEndian.PutUint16(f[ip+10:], checksum(0, f[ip:ip+ipv4Header]))
	tcp := len(f)
	f = be16(f, srcPort)
	f = be16(f, dstPort)
	f = be32(f, seq)
	f = be32(f, ack)
	f = append(f, 5<<4, flags)
	f = be16(f, 0xffff) // window
	f = append(f, 0, 0, 0, 0)
	f = append(f, data...)
	// TCP checksum over the pseudo-header, header and data.
	var pseudo [12]byte
	copy(pseudo[0:], srcIP[:])
	copy(pseudo[4:], dstIP[:])
	pseudo[9] = 6
	binary.BigEndian.PutUint16(pseudo[10:], uint16(tcpHeader+len(data)))
	sum := checksum(sumWords(sumWords(0, pseudo[:]), f[tcp:]), nil)
	binary.BigEndian.PutUint16(f[tcp+16:], sum)
	e.frame = f

	if fromDbg {
		s.tcp.dbgSeq += uint32(len(data))
	} else {
		s.tcp.proxySeq += uint32(len(data))
	}
	if flags&(tcpSYN|tcpFIN) != 0 && flags&tcpSYN == 0 {
		if fromDbg {
			s.tcp.dbgSeq++
		} else {
			s.tcp.proxySeq++
		}
	}

	// Enhanced packet block.
	ts := uint64(w.j.start.UnixNano() + t)
	start := len(dst)
	dst = le32(dst, 6)
	dst = le32(dst, 0)
	dst = le32(dst, 0) // interface 0
	dst = le32(dst, uint32(ts>>32))
	dst = le32(dst, uint32(ts))
	dst = le32(dst, uint32(len(f)))
	dst = le32(dst, uint32(len(f)))
	dst = append(dst, f...)
	dst = pad4(dst, len(f))
	if comment != "" {
		dst = pcapOption(dst, 1, []byte(comment))
		dst = le32(dst, 0)
	}
	return closeBlock(dst, start)
}

// sumWords adds b as big-endian 16-bit words to a ones' complement sum.
func sumWords(sum uint32, b []byte) uint32 {
	for len(b) >= 2 {
		sum += uint32(b[0])<<8 | uint32(b[1])
		b = b[2:]
	}
	if len(b) == 1 {
		sum += uint32(b[0]) << 8
	}
	return sum
}

// checksum folds sum plus b into the Internet checksum.
func checksum(sum uint32, b []byte) uint16 {
	sum = sumWords(sum, b)
	for sum>>16 != 0 {
		sum = sum&0xffff + sum>>16
	}
	return ^uint16(sum)
}

func pcapOption(dst []byte, code uint16, v []byte) []byte {
	dst = le16(dst, code)
	dst = le16(dst, uint16(len(v)))
	dst = append(dst, v...)
	return pad4(dst, len(v))
}

func pad4(dst []byte, n int) []byte {
	for ; n%4 != 0; n++ {
		dst = append(dst, 0)
	}
	return dst
}

// closeBlock writes the block's total length at its start+4 and at its end.
func closeBlock(dst []byte, start int) []byte {
	n := uint32(len(dst) - start + 4)
	binary.LittleEndian.PutUint32(dst[start+4:], n)
	return le32(dst, n)
}

func le16(b []byte, v uint16) []byte { return binary.LittleEndian.AppendUint16(b, v) }
func le32(b []byte, v uint32) []byte { return binary.LittleEndian.AppendUint32(b, v) }
func le64(b []byte, v uint64) []byte { return binary.LittleEndian.AppendUint64(b, v) }
func be16(b []byte, v uint16) []byte { return binary.BigEndian.AppendUint16(b, v) }
func be32(b []byte, v uint32) []byte { return binary.BigEndian.AppendUint32(b, v) }
