// Package testenv gives adapter and end-to-end tests the local stack that
// `make test` starts (devstack exec): the emulators' endpoints, a unique
// resource prefix per test, and provisioned tables and queues.
//
// Outside `make test` these tests skip, saying how to run them; with
// CRITICIZER_REQUIRE_STACK=1 (set by `make test`) a missing stack fails
// them instead, so CI can never pass by skipping.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/devstack"
)

// Env is the running local stack.
type Env struct {
	Endpoints config.Endpoints
	SESURL    string
	Clients   *devstack.Clients
	SES       *devstack.SESEmulator
}

// Stack returns the local stack or skips (fails under make test).
func Stack(t testing.TB) Env {
	t.Helper()
	if os.Getenv("CRITICIZER_TEST_STACK") == "" {
		msg := "needs the local stack: run `make test` (or `go run ./cmd/devstack exec -- go test ./...`)"
		if os.Getenv("CRITICIZER_REQUIRE_STACK") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	ep := config.EndpointsFromEnv(os.Getenv)
	c, err := devstack.NewClients(context.Background(), ep)
	if err != nil {
		t.Fatal(err)
	}
	ses := os.Getenv("CRITICIZER_TEST_SES_URL")
	return Env{Endpoints: ep, SESURL: ses, Clients: c, SES: &devstack.SESEmulator{BaseURL: ses}}
}

// Prefix is a resource-name prefix unique to this test.
func Prefix(t testing.TB) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	name := strings.ToLower(t.Name())
	name = strings.Map(func(r rune) rune {
		if (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9') {
			return r
		}
		return '-'
	}, name)
	if len(name) > 30 {
		name = name[:30]
	}
	return "t" + hex.EncodeToString(b) + "-" + strings.Trim(name, "-")
}

// Provision creates a fresh set of tables, queues and bucket for the test.
func Provision(t testing.TB, e Env) devstack.Resources {
	t.Helper()
	r, err := devstack.Provision(context.Background(), e.Clients, Prefix(t))
	if err != nil {
		t.Fatal(err)
	}
	return r
}
