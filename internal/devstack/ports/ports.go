// Package ports names where the local stack's emulators listen. It is a
// package of its own so that the operator's CLI (`criticizer -local`)
// can find the stack of `make run` without linking internal/devstack,
// which links every function's wiring and the HTTP handler.
package ports

import (
	"errors"
	"fmt"
	"net"
	"strconv"
	"syscall"
	"time"

	"github.com/criticizer/criticizer/internal/config"
)

// Ports are where the emulators listen, all on 127.0.0.1.
type Ports struct {
	DynamoDB int
	SQS      int // fauxqs serves SQS, SNS and S3 on one port
	SES      int
}

// Run are the ports of `make run`; Test those of `make test`, so a test
// run never disturbs a running local stack.
var (
	Run  = Ports{DynamoDB: 8000, SQS: 4566, SES: 8005}
	Test = Ports{DynamoDB: 18000, SQS: 14566, SES: 18005}
)

// Free reports whether no port of p is in use.
func (p Ports) Free() bool {
	return Unused(Addr(p.DynamoDB)) && Unused(Addr(p.SQS)) && Unused(Addr(p.SES))
}

// Pick asks the kernel for three unused ports, for a test run while
// another stack (or another test run) holds the usual ones.
func Pick() (Ports, error) {
	var got [3]int
	for i := range got {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return Ports{}, err
		}
		got[i] = l.Addr().(*net.TCPAddr).Port
		defer l.Close()
	}
	return Ports{DynamoDB: got[0], SQS: got[1], SES: got[2]}, nil
}

// Endpoints returns the SDK endpoints for these ports.
func (p Ports) Endpoints() config.Endpoints {
	return config.Endpoints{
		DynamoDB: fmt.Sprintf("http://127.0.0.1:%d", p.DynamoDB),
		SQS:      fmt.Sprintf("http://127.0.0.1:%d", p.SQS),
		S3:       fmt.Sprintf("http://127.0.0.1:%d", p.SQS),
		SES:      fmt.Sprintf("http://127.0.0.1:%d", p.SES),
	}
}

// SESURL is the SES emulator's base URL (its web page and /store).
func (p Ports) SESURL() string { return fmt.Sprintf("http://127.0.0.1:%d", p.SES) }

// Addr is port on 127.0.0.1.
func Addr(port int) string { return "127.0.0.1:" + strconv.Itoa(port) }

// Unused reports whether nothing listens on addr.
func Unused(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		// Only a refused connection says nothing listens; a timeout is a
		// listener too busy to accept (a full backlog), not a free port.
		return errors.Is(err, syscall.ECONNREFUSED)
	}
	c.Close()
	return false
}
