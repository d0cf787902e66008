package ddm

// Filename is the HPDU request: lstr file name on the device.
type Filename struct {
	T    Type
	Name string
}

// ChunkType implements Payload.
func (f Filename) ChunkType() Type { return f.T }

// AppendData implements Payload.
func (f Filename) AppendData(dst []byte) []byte { return appendLstr(dst, f.Name) }

// DecodeFilename decodes an HPDU request.
func DecodeFilename(t Type, data []byte) (Filename, error) {
	r := reader(data)
	f := Filename{T: t, Name: readLstr(r)}
	return f, check(t, r)
}

// Profiling is the MPRS / MPSS / SPSS request (§2.5): u4 buffer size, u4
// flags, then for MPRS an lstr device file, for SPSS a u4 interval in µs.
type Profiling struct {
	T              Type
	BufferSize     uint32
	Flags          uint32
	File           string // MPRS only
	IntervalMicros uint32 // SPSS only
}

// ChunkType implements Payload.
func (p Profiling) ChunkType() Type { return p.T }

// AppendData implements Payload.
func (p Profiling) AppendData(dst []byte) []byte {
	dst = appendU32(appendU32(dst, p.BufferSize), p.Flags)
	switch p.T {
	case TypeMPRS:
		dst = appendLstr(dst, p.File)
	case TypeSPSS:
		dst = appendU32(dst, p.IntervalMicros)
	}
	return dst
}

// DecodeProfiling decodes an MPRS, MPSS or SPSS request.
func DecodeProfiling(t Type, data []byte) (Profiling, error) {
	r := reader(data)
	p := Profiling{T: t, BufferSize: u32(r), Flags: u32(r)}
	switch t {
	case TypeMPRS:
		p.File = readLstr(r)
	case TypeSPSS:
		p.IntervalMicros = u32(r)
	}
	return p, check(t, r)
}
