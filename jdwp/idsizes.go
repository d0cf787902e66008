package jdwp

import "fmt"

// IDSizes are the byte widths of the variable-size IDs, as the VM states
// them in its reply to VirtualMachine.IDSizes. They are never assumed.
type IDSizes struct {
	FieldID         int
	MethodID        int
	ObjectID        int
	ReferenceTypeID int
	FrameID         int
}

// Known reports whether the sizes have been learned (all non-zero).
func (s IDSizes) Known() bool {
	return s.FieldID > 0 && s.MethodID > 0 && s.ObjectID > 0 && s.ReferenceTypeID > 0 && s.FrameID > 0
}

// ParseIDSizes decodes the body of a VirtualMachine.IDSizes reply.
// Each size must be 1..8 bytes.
func ParseIDSizes(body []byte) (IDSizes, error) {
	r := NewBodyReader(body, IDSizes{})
	s := IDSizes{
		FieldID:         int(r.Int32()),
		MethodID:        int(r.Int32()),
		ObjectID:        int(r.Int32()),
		ReferenceTypeID: int(r.Int32()),
		FrameID:         int(r.Int32()),
	}
	if err := r.Err(); err != nil {
		return IDSizes{}, err
	}
	for _, n := range []int{s.FieldID, s.MethodID, s.ObjectID, s.ReferenceTypeID, s.FrameID} {
		if n < 1 || n > 8 {
			return IDSizes{}, fmt.Errorf("%w: %d", ErrBadIDSize, n)
		}
	}
	return s, nil
}

// AppendIDSizes encodes s as the body of a VirtualMachine.IDSizes reply.
func AppendIDSizes(dst []byte, s IDSizes) []byte {
	w := BodyWriter{Buf: dst}
	w.Int32(int32(s.FieldID))
	w.Int32(int32(s.MethodID))
	w.Int32(int32(s.ObjectID))
	w.Int32(int32(s.ReferenceTypeID))
	w.Int32(int32(s.FrameID))
	return w.Buf
}
