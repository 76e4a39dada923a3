// Package devstack runs Criticizer on one machine with no AWS account: it
// starts the emulators (DynamoDB Local, fauxqs for SQS, SNS and S3 behind
// an SQS proxy that adds what fauxqs lacks, aws-ses-v2-local for SES v2),
// creates the tables, queues and bucket, and runs the functions' own
// handlers behind a local HTTP endpoint and SQS pollers, with the event
// types Lambda would pass and its timeout. docs/local-stack.md says where
// it behaves like AWS and which test shows it.
package devstack

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/criticizer/criticizer/internal/devstack/ports"
)

// process is a child process in its own process group, so stopping it
// stops whatever it spawned (npm, the JVM).
type process struct {
	name string
	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error
}

// startProcess starts argv with this process's environment plus env.
func startProcess(name, dir, logDir string, env []string, argv ...string) (*process, error) {
	return startProcessEnv(name, dir, logDir, append(os.Environ(), env...), argv...)
}

// startProcessEnv starts argv with exactly the environment environ.
func startProcessEnv(name, dir, logDir string, environ []string, argv ...string) (*process, error) {
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		return nil, err
	}
	logPath := filepath.Join(logDir, name+".log")
	lf, err := os.Create(logPath)
	if err != nil {
		return nil, fmt.Errorf("%s log: %w", name, err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Env = environ
	cmd.Stdout, cmd.Stderr = lf, lf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
	if err := cmd.Start(); err != nil {
		lf.Close()
		return nil, fmt.Errorf("start %s (%s): %w", name, argv[0], err)
	}
	p := &process{name: name, cmd: cmd, log: lf, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// stop sends SIGTERM to the group, then SIGKILL after a grace period.
func (p *process) stop() {
	if p == nil || p.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
	p.log.Close()
}

// waitPort waits until addr accepts TCP connections or the process exits.
func (p *process) waitPort(ctx context.Context, addr string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			// Another stack's emulator may hold the port (FreePorts can race
			// with a concurrent run): ours must still be alive once the port
			// answers, else it failed to bind and we would use theirs.
			select {
			case <-p.done:
				return fmt.Errorf("%s exited (see %s): %v; is another stack on %s?", p.name, p.log.Name(), p.err, addr)
			case <-time.After(300 * time.Millisecond):
			}
			return nil
		}
		select {
		case <-p.done:
			return fmt.Errorf("%s exited before listening on %s (see %s): %v", p.name, addr, p.log.Name(), p.err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not listen on %s within %s (see %s)", p.name, addr, timeout, p.log.Name())
		}
	}
}

// portFree reports whether nothing listens on addr.
func portFree(addr string) bool { return ports.Unused(addr) }

var errPortBusy = errors.New("port already in use")
