package notify_test

import (
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/delivery"
	"github.com/criticizer/criticizer/internal/notify"
	"github.com/criticizer/criticizer/internal/store/memstore"
)

// A gate is built with what it needs or not at all, and a deployment's
// gates are listed once each, in the order they are asked: the domain
// before the standing, the mute, the quiet rules and the digest (a row a
// gate settles is not asked about again, so the order says whose answer
// wins).
// Rules: R-OUTBOX-11.
func TestGates_BuiltWhole_ListedOnceInOrder(t *testing.T) {
	allowed, err := delivery.ParseDomains("example.com")
	if err != nil {
		t.Fatal(err)
	}
	clock := func() time.Time { return time.Now() }
	jobs, rows, prefs := memstore.NewJobs(clock), memstore.NewDeliveries(clock), memstore.NewPreferences()
	for name, err := range map[string]error{
		"domain without domains":   second(notify.NewDomainGate(delivery.Domains{})),
		"mute without mutes":       second(notify.NewMuteGate(nil)),
		"quiet without versions":   second(notify.NewQuietGate(notify.QuietConfig{})),
		"digest without a clock":   second(notify.NewDigestGate(notify.DigestConfig{Digests: rows, Standings: prefs})),
		"digest without standings": second(notify.NewDigestGate(notify.DigestConfig{Digests: rows, Clock: clock})),
		"digest without its store": second(notify.NewDigestGate(notify.DigestConfig{Standings: prefs, Clock: clock})),
		"reply without standings":  second(notify.NewReplyGate(nil)),
	} {
		if err == nil {
			t.Errorf("%s: built", name)
		}
	}
	domain, _ := notify.NewDomainGate(allowed)
	mute, _ := notify.NewMuteGate(memstore.NewReplies())
	quiet, _ := notify.NewQuietGate(notify.QuietConfig{Versions: jobs})
	digest, _ := notify.NewDigestGate(notify.DigestConfig{Digests: rows, Standings: prefs, Clock: clock})
	reply, _ := notify.NewReplyGate(prefs)
	standing := notify.NewStandingGate()
	if _, err := notify.NewGates(reply, domain, standing, mute, quiet, digest); err != nil {
		t.Errorf("every gate in order: %v", err)
	}
	if g, err := notify.NewGates(); err != nil {
		t.Errorf("no gates: %v", err)
	} else if _, ok := g.Quiet(); ok {
		t.Error("no gates, yet a quiet gate")
	}
	for name, list := range map[string][]notify.Gate{
		"mute after digest":    {quiet, digest, mute},
		"standing twice":       {standing, standing},
		"mute before standing": {mute, standing},
		"reply twice":          {reply, reply},
		"a nil gate":           {nil},
		"a nil domain gate":    {(*notify.DomainGate)(nil)},
	} {
		if _, err := notify.NewGates(list...); err == nil || !strings.Contains(err.Error(), "notify gates") {
			t.Errorf("%s: %v, want refused", name, err)
		}
	}
}

func second[T any](_ T, err error) error { return err }
