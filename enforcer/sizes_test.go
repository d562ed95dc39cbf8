package enforcer

import (
	"testing"
	"unsafe"
)

func TestNotifStructSizes(t *testing.T) {
	if s := unsafe.Sizeof(seccompNotif{}); s != 80 {
		t.Errorf("seccomp_notif is %d bytes, the kernel's is 80", s)
	}
	if s := unsafe.Sizeof(seccompNotifResp{}); s != 24 {
		t.Errorf("seccomp_notif_resp is %d bytes, the kernel's is 24", s)
	}
	if s := unsafe.Sizeof(seccompData{}); s != 64 {
		t.Errorf("seccomp_data is %d bytes, the kernel's is 64", s)
	}
}
