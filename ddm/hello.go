package ddm

// Hello is the VM's HELO reply (§2.1). Every field after AppName is
// optional; Optional counts how many of them are present, in order:
// UserID, ABI, JVMFlags, NativeDebuggable, PackageName, Stage.
type Hello struct {
	ClientVersion    uint32
	PID              uint32
	VMIdent          string
	AppName          string
	Optional         int
	UserID           uint32
	ABI              string
	JVMFlags         string
	NativeDebuggable bool
	PackageName      string
	Stage            Type
}

// ChunkType implements Payload.
func (Hello) ChunkType() Type { return TypeHELO }

// AppendData implements Payload.
func (h Hello) AppendData(dst []byte) []byte {
	dst = appendU32(dst, h.ClientVersion)
	dst = appendU32(dst, h.PID)
	dst = appendU32(dst, uint32(str16Units(h.VMIdent)))
	dst = appendU32(dst, uint32(str16Units(h.AppName)))
	dst = appendStr16(dst, h.VMIdent)
	dst = appendStr16(dst, h.AppName)
	if h.Optional > 0 {
		dst = appendU32(dst, h.UserID)
	}
	if h.Optional > 1 {
		dst = appendLstr(dst, h.ABI)
	}
	if h.Optional > 2 {
		dst = appendLstr(dst, h.JVMFlags)
	}
	if h.Optional > 3 {
		dst = appendBool(dst, h.NativeDebuggable)
	}
	if h.Optional > 4 {
		dst = appendLstr(dst, h.PackageName)
	}
	if h.Optional > 5 {
		dst = appendU32(dst, uint32(h.Stage))
	}
	return dst
}

// DecodeHello decodes a HELO reply, reading optional fields while bytes
// remain.
func DecodeHello(data []byte) (Hello, error) {
	r := reader(data)
	var h Hello
	h.ClientVersion = u32(r)
	h.PID = u32(r)
	vl, al := u32(r), u32(r)
	h.VMIdent = readStr16(r, vl)
	h.AppName = readStr16(r, al)
	if r.Err() == nil && r.Remaining() >= 4 {
		h.UserID, h.Optional = u32(r), 1
	}
	if r.Err() == nil && r.Remaining() >= 4 {
		h.ABI, h.Optional = readLstr(r), 2
	}
	if r.Err() == nil && r.Remaining() >= 4 {
		h.JVMFlags, h.Optional = readLstr(r), 3
	}
	if r.Err() == nil && r.Remaining() >= 1 {
		h.NativeDebuggable, h.Optional = r.Bool(), 4
	}
	if r.Err() == nil && r.Remaining() >= 4 {
		h.PackageName, h.Optional = readLstr(r), 5
	}
	if r.Err() == nil && r.Remaining() >= 4 {
		h.Stage, h.Optional = Type(u32(r)), 6
	}
	return h, check(TypeHELO, r)
}

// StringList is a u4 count then count lstrs: the FEAT reply and the VULW
// reply.
type StringList struct {
	T     Type
	Items []string
}

// ChunkType implements Payload.
func (s StringList) ChunkType() Type { return s.T }

// AppendData implements Payload.
func (s StringList) AppendData(dst []byte) []byte {
	dst = appendU32(dst, uint32(len(s.Items)))
	for _, it := range s.Items {
		dst = appendLstr(dst, it)
	}
	return dst
}

// DecodeStringList decodes a FEAT or VULW reply.
func DecodeStringList(t Type, data []byte) (StringList, error) {
	r := reader(data)
	n := r.Count(4)
	s := StringList{T: t, Items: make([]string, 0, n)}
	for i := 0; i < n && r.Err() == nil; i++ {
		s.Items = append(s.Items, readLstr(r))
	}
	return s, check(t, r)
}

// AppName is the unsolicited APNM (§2.1): lstr name, then optional u4 user
// id (2012+) and lstr package name (2019+); Optional counts them.
type AppName struct {
	Name        string
	Optional    int
	UserID      uint32
	PackageName string
}

// ChunkType implements Payload.
func (AppName) ChunkType() Type { return TypeAPNM }

// AppendData implements Payload.
func (a AppName) AppendData(dst []byte) []byte {
	dst = appendLstr(dst, a.Name)
	if a.Optional > 0 {
		dst = appendU32(dst, a.UserID)
	}
	if a.Optional > 1 {
		dst = appendLstr(dst, a.PackageName)
	}
	return dst
}

// DecodeAppName decodes an APNM chunk.
func DecodeAppName(data []byte) (AppName, error) {
	r := reader(data)
	a := AppName{Name: readLstr(r)}
	if r.Err() == nil && r.Remaining() >= 4 {
		a.UserID, a.Optional = u32(r), 1
	}
	if r.Err() == nil && r.Remaining() >= 4 {
		a.PackageName, a.Optional = readLstr(r), 2
	}
	return a, check(TypeAPNM, r)
}
