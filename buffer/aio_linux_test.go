package buffer

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"unsafe"
)

// aioAvailable tells whether this kernel and sandbox allow an AIO context.
func aioAvailable(t *testing.T) bool {
	var ctx uintptr
	if _, _, errno := syscall.Syscall(syscall.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&ctx)), 0); errno != 0 {
		t.Logf("io_setup: %v", errno)
		return false
	}
	syscall.Syscall(syscall.SYS_IO_DESTROY, ctx, 0, 0)
	return true
}

// TestDataSyncer: where AIO is allowed the syncer uses it, sync after sync,
// waits on a non-blocking eventfd and reports the kernel's answer; a file that cannot be synced (a pipe)
// fails as fdatasync would and turns the syncer to fdatasync for good,
// which goes on working.
func TestDataSyncer(t *testing.T) {
	d := newDataSyncer()
	defer d.close()
	if allowed := aioAvailable(t); allowed != (d.ctx != 0) {
		t.Fatalf("AIO allowed here: %v; the syncer uses it: %v", allowed, d.ctx != 0)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "data"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	viaAIO := d.ctx != 0
	for i := range 3 {
		if _, err := f.Write([]byte("record\n")); err != nil {
			t.Fatal(err)
		}
		if err := d.sync(f); err != nil {
			t.Fatalf("sync %d: %v", i, err)
		}
		if (d.ctx != 0) != viaAIO {
			t.Fatalf("sync %d of a regular file changed the syncer's path", i)
		}
	}
	if viaAIO {
		// The wait for a sync parks in the poller only while the eventfd
		// is non-blocking; os.File.Fd, for one, would make it blocking.
		flags, _, errno := syscall.Syscall(syscall.SYS_FCNTL, d.efd, syscall.F_GETFL, 0)
		if errno != 0 || flags&syscall.O_NONBLOCK == 0 {
			t.Fatalf("the eventfd is blocking after syncs (flags %#x, %v)", flags, errno)
		}
	}

	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if err := d.sync(w); !errors.Is(err, syscall.EINVAL) {
		t.Fatalf("sync of a pipe: %v, want EINVAL", err)
	}
	if d.ctx != 0 {
		t.Fatal("still on AIO after the kernel refused it")
	}
	if err := d.sync(f); err != nil {
		t.Fatalf("sync after the fallback: %v", err)
	}

	f.Close()
	d2 := newDataSyncer()
	defer d2.close()
	if err := d2.sync(f); err == nil {
		t.Fatal("sync of a closed file succeeded")
	}
}
