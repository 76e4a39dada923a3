package devstack

import (
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// PortLock holds the right to start emulators on a set of ports, across
// every process on the machine: an exclusive flock on a file named for
// the ports in the temporary directory, released when the process ends or
// calls Unlock.
//
// Why a lock and not only "are the ports free": two runs started at the
// same moment both find the ports free and both start DynamoDB Local; one
// JVM binds, the other takes seconds to fail, and meanwhile its run sees
// the port answer and uses the other run's emulator, which disappears when
// that run ends (seen as "connection refused" half-way through a test run).
type PortLock struct{ f *os.File }

// LockPorts takes the lock of p without waiting. ok is false when another
// process holds it: that run owns the ports.
func LockPorts(p Ports) (l *PortLock, ok bool, err error) {
	path := filepath.Join(os.TempDir(), fmt.Sprintf("criticizer-devstack-%d-%d-%d.lock", p.DynamoDB, p.SQS, p.SES))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, false, fmt.Errorf("port lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if err == syscall.EWOULDBLOCK {
			return nil, false, nil
		}
		return nil, false, fmt.Errorf("port lock: %w", err)
	}
	return &PortLock{f: f}, true, nil
}

// Unlock releases the lock.
func (l *PortLock) Unlock() {
	if l == nil || l.f == nil {
		return
	}
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	l.f.Close()
	l.f = nil
}
