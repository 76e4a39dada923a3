package intake

import (
	"context"
	"testing"

	"github.com/criticizer/criticizer/internal/delivery"
)

// A rerun's dry run reports skipped_domain for an address outside the
// allowed domains, as notify would settle it, before reading anyone's
// standing (no store here: a read would panic).
// Rules: R-RECIPIENT-1.
func TestAudience_DryRunReportsSkippedDomain(t *testing.T) {
	d, err := delivery.ParseDomains("example.com")
	if err != nil {
		t.Fatal(err)
	}
	got, err := audience{domains: d}.Decide(context.Background(), "generic", "cl-1", "eve@attacker.example")
	if err != nil || got != string(delivery.StatusSkippedDomain) {
		t.Fatalf("Decide = %q %v, want skipped_domain", got, err)
	}
}
