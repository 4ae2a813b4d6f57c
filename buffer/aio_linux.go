package buffer

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"unsafe"
)

// dataSyncer makes a file's written data durable, like fdatasync(2), but
// without holding a Go scheduler P while the disk works. A goroutine in a
// blocking system call keeps its P until the runtime's monitor takes it
// back, which can take milliseconds; with GOMAXPROCS=1 every fdatasync of
// the group commit then idled the CPU (about a tenth of it when the spool
// took every event). Linux AIO (IOCB_CMD_FDSYNC, kernel 4.18 and later)
// queues the sync to a kernel worker and signals an eventfd on completion;
// the writer waits for the eventfd in the runtime's poller, parked.
//
// Where AIO is not available (ENOSYS, a seccomp filter, aio-max-nr used up)
// or a file system refuses it, the syncer falls back to fdatasync for good.
// One goroutine uses a syncer at a time: the spool's writer.
type dataSyncer struct {
	ctx   uintptr  // aio_context_t; 0 after a fallback
	event *os.File // eventfd, non-blocking, read through the poller
	efd   uintptr  // event's descriptor (event.Fd would make it blocking)
	buf   [8]byte
	// What the kernel reads and writes lives here, on the heap, where it
	// does not move.
	cb  iocb
	cbs [1]*iocb
	ev  ioEvent
}

// iocb is struct iocb of linux/aio_abi.h (64 bytes, the same on every
// 64-bit little-endian architecture Go supports).
type iocb struct {
	data      uint64
	key       uint32
	rwFlags   int32
	opcode    uint16
	reqprio   int16
	fildes    uint32
	buf       uint64
	nbytes    uint64
	offset    int64
	reserved2 uint64
	flags     uint32
	resfd     uint32
}

// ioEvent is struct io_event.
type ioEvent struct {
	data, obj uint64
	res, res2 int64
}

const (
	iocbCmdFdsync = 3
	iocbFlagResfd = 1 << 0
)

var _ [64 - unsafe.Sizeof(iocb{})]byte // iocb must be 64 bytes
var _ [32 - unsafe.Sizeof(ioEvent{})]byte

// newDataSyncer sets up AIO if it can; it never fails, since fdatasync
// remains.
func newDataSyncer() *dataSyncer {
	d := &dataSyncer{}
	var ctx uintptr
	if _, _, errno := syscall.Syscall(syscall.SYS_IO_SETUP, 1, uintptr(unsafe.Pointer(&ctx)), 0); errno != 0 {
		return d
	}
	fd, _, errno := syscall.Syscall(syscall.SYS_EVENTFD2, 0, syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if errno != 0 {
		syscall.Syscall(syscall.SYS_IO_DESTROY, ctx, 0, 0)
		return d
	}
	d.ctx, d.efd, d.event = ctx, fd, os.NewFile(fd, "spool-fdsync-eventfd")
	return d
}

// sync makes f's data durable.
func (d *dataSyncer) sync(f *os.File) error {
	if d.ctx == 0 {
		return fdatasync(f)
	}
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var (
		submitted uintptr
		submitErr syscall.Errno
	)
	if err := rc.Control(func(fd uintptr) {
		d.cb = iocb{opcode: iocbCmdFdsync, fildes: uint32(fd), flags: iocbFlagResfd, resfd: uint32(d.efd)}
		d.cbs[0] = &d.cb
		for {
			// The kernel copies the iocb here; fd stays open until the
			// completion below, since the caller owns f until sync returns.
			submitted, _, submitErr = syscall.Syscall(syscall.SYS_IO_SUBMIT, d.ctx, 1, uintptr(unsafe.Pointer(&d.cbs[0])))
			if submitErr != syscall.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if submitErr != 0 || submitted != 1 {
		// Nothing is in flight, so nothing will signal the eventfd.
		// Not for this file system or not here at all: fdatasync from now on.
		d.close()
		return fdatasync(f)
	}
	// One sync is in flight; its completion adds 1 to the eventfd.
	if _, err := d.event.Read(d.buf[:]); err != nil {
		return fmt.Errorf("buffer: waiting for fdatasync of %s: %w", f.Name(), err)
	}
	d.ev = ioEvent{}
	for {
		n, _, errno := syscall.Syscall6(syscall.SYS_IO_GETEVENTS, d.ctx, 1, 1, uintptr(unsafe.Pointer(&d.ev)), 0, 0)
		if errno == syscall.EINTR {
			continue
		}
		if errno != 0 {
			return &os.PathError{Op: "io_getevents", Path: f.Name(), Err: errno}
		}
		if n != 1 {
			return &os.PathError{Op: "io_getevents", Path: f.Name(), Err: errors.New("no completion after its signal")}
		}
		break
	}
	if d.ev.res < 0 {
		return &os.PathError{Op: "fdatasync", Path: f.Name(), Err: syscall.Errno(-d.ev.res)}
	}
	return nil
}

// close releases the AIO context; later syncs use fdatasync.
func (d *dataSyncer) close() {
	if d.ctx == 0 {
		return
	}
	syscall.Syscall(syscall.SYS_IO_DESTROY, d.ctx, 0, 0)
	d.event.Close()
	d.ctx, d.event = 0, nil
}
