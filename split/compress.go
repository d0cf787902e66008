package split

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"

	"github.com/klauspost/compress/zstd"
	"github.com/prometheus/client_golang/prometheus"
)

// In a session whose ends agreed on compression (FlagCompress,
// ReplyCompress), each link connection ("leg") carries, in each direction,
// one zstd stream of the bytes it would carry otherwise (PROTOCOL.md, "The
// compressed stream"). The compressor is flushed at every write, so a JDWP
// packet never waits in it for more bytes: what a write sends is readable
// on the other end as soon as it arrives. Compression sits below the
// resumable stream's frames: a leg that resumes a session starts a fresh
// compressor and decompressor, and the frames it resends are compressed
// again.

// Compression tuning.
const (
	// zstdWindow is each direction's window: how far back a match may
	// reach. A quarter of a megabyte compresses the attach's biggest
	// reply (AllClassesWithGeneric at 15,000 classes, about 1 MB) as well
	// as a megabyte does (BenchmarkCompressAllClasses), and holds the
	// stops' repeated commands and replies, for about 3.5 MiB per
	// connection end (compressor and decompressor) where a megabyte costs 6.
	zstdWindow = 256 << 10
	// zstdMaxWindow is the biggest window a decompressor accepts: a
	// stream that asks for more is malformed. With it, a decompressor
	// holds at most this much history plus one block (128 KiB), whatever
	// the stream decodes to.
	zstdMaxWindow = 1 << 20
	// zstdLevel trades the CPU of both ends for the link's bytes.
	zstdLevel = zstd.SpeedDefault
)

// ErrBadCompression is wrapped by the read errors of a compressed stream
// that is not valid zstd within this end's bounds.
var ErrBadCompression = errors.New("split: malformed compressed stream")

// newCompressor returns a compressor writing to w; each of its writes is
// flushed (flushWriter).
func newCompressor(w io.Writer) *flushWriter {
	enc, err := zstd.NewWriter(w, zstd.WithEncoderConcurrency(1), zstd.WithEncoderLevel(zstdLevel),
		zstd.WithWindowSize(zstdWindow), zstd.WithEncoderCRC(false))
	if err != nil {
		panic(err) // the options are constants
	}
	return &flushWriter{enc: enc}
}

// flushWriter compresses each Write and flushes it to the writer below
// before returning. It is owned by its connection's one writer goroutine.
type flushWriter struct {
	enc    *zstd.Encoder
	stream prometheus.Counter // bytes written to it; nil counts nothing
}

func (w *flushWriter) Write(p []byte) (int, error) {
	if _, err := w.enc.Write(p); err != nil {
		return 0, err
	}
	if err := w.enc.Flush(); err != nil {
		return 0, err
	}
	add(w.stream, len(p))
	return len(p), nil
}

// newDecompressor returns a reader of the stream compressed in r, with
// bounded memory (zstdMaxWindow). It is owned by its connection's one
// reader goroutine.
func newDecompressor(r io.Reader) *unzstd {
	src := &eofReader{r: r}
	dec, err := zstd.NewReader(src, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow),
		zstd.WithDecoderMaxMemory(zstdMaxWindow), zstd.WithDecoderLowmem(true))
	if err != nil {
		panic(err) // the options are constants
	}
	return &unzstd{dec: dec, src: src}
}

// unzstd decompresses a stream. An end of the stream below, where the
// decompressor is between blocks, is io.EOF (the other end closed the
// connection); an error below is returned as it is; anything else the
// decompressor rejects wraps ErrBadCompression.
type unzstd struct {
	dec    *zstd.Decoder
	src    *eofReader
	stream prometheus.Counter // bytes read from it; nil counts nothing
}

func (u *unzstd) Read(p []byte) (int, error) {
	n, err := u.dec.Read(p)
	add(u.stream, n)
	switch {
	case err == nil:
		return n, nil
	case u.src.err != nil:
		if u.src.err == io.EOF && errors.Is(err, io.ErrUnexpectedEOF) {
			// The peer's last flush ended a block: a close, not a cut.
			return n, io.EOF
		}
		return n, u.src.err
	case err == io.EOF:
		return n, io.EOF
	}
	return n, fmt.Errorf("%w: %v", ErrBadCompression, err)
}

// eofReader remembers the error of the reader below.
type eofReader struct {
	r   io.Reader
	err error
}

func (e *eofReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.err = err
	}
	return n, err
}

// countingWriter counts what it writes to w (a compressor's output).
type countingWriter struct {
	w io.Writer
	c prometheus.Counter
}

func (cw countingWriter) Write(p []byte) (int, error) {
	n, err := cw.w.Write(p)
	add(cw.c, n)
	return n, err
}

// countingReader counts what it reads from r (a decompressor's input).
type countingReader struct {
	r io.Reader
	c prometheus.Counter
}

func (cr countingReader) Read(p []byte) (int, error) {
	n, err := cr.r.Read(p)
	add(cr.c, n)
	return n, err
}

// zconn is a compressed link connection: Read decompresses what the other
// end sent (after raw bytes it sent before compression started), Write
// compresses and flushes. As for any net.Conn, one goroutine reads and one
// writes.
type zconn struct {
	net.Conn
	br    *bufio.Reader // reads Conn; owned by the reader
	rawIn int           // bytes still to read uncompressed, before the compressed stream
	r     *unzstd       // created once rawIn bytes were read; owned by the reader
	w     *flushWriter  // owned by the writer
	count compressedCounters
}

// newZconn returns c compressed; br reads c (it may hold c's next bytes),
// and the first rawIn bytes to read are not compressed (the near end's
// JDWP handshake, on the far end). It counts its bytes in count.
func newZconn(c net.Conn, br *bufio.Reader, rawIn int, count compressedCounters) *zconn {
	if br == nil {
		br = bufio.NewReaderSize(c, 64<<10)
	}
	w := newCompressor(countingWriter{w: c, c: count.wireSent})
	w.stream = count.streamSent
	return &zconn{Conn: c, br: br, rawIn: rawIn, w: w, count: count}
}

func (z *zconn) Read(p []byte) (int, error) {
	if z.rawIn > 0 {
		n, err := z.br.Read(p[:min(len(p), z.rawIn)])
		z.rawIn -= n
		return n, err
	}
	if z.r == nil {
		z.r = newDecompressor(countingReader{r: z.br, c: z.count.wireReceived})
		z.r.stream = z.count.streamReceived
	}
	return z.r.Read(p)
}

func (z *zconn) Write(p []byte) (int, error) { return z.w.Write(p) }

// CloseWrite half-closes the connection if the one underneath can.
func (z *zconn) CloseWrite() error {
	if cw, ok := z.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.ErrUnsupported
}
