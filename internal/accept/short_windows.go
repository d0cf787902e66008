package accept

import "syscall"

// shortages are the errors of a shortage (short): Winsock's own codes
// (WSAEMFILE, WSAENOBUFS, WSAECONNABORTED), which syscall's Unix names do
// not match on Windows.
var shortages = [...]syscall.Errno{10024, 10055, 10053}
