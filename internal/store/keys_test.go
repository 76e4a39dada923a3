package store_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/criticizer/criticizer/internal/store"
)

// The deployment grants fetch and llm the jobs table's JOB# and SRC#
// items only, and fetch also the ROSTER#, DIR# and UNKNOWN# items it
// decides reviewers with (infra/names.go, its own module): the prefixes it
// names are the store's.
func TestKeyPrefixes_MatchTheDeploymentsGrants(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "infra", "names.go"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"JobItemPrefix": store.PrefixJob, "SourceRefPrefix": store.PrefixSourceRef,
		"RosterPrefix": store.PrefixRoster, "DirectoryPrefix": store.PrefixDirectory, "UnknownPrefix": store.PrefixUnknown,
		"BudgetPrefix": store.PrefixBudget} {
		m := regexp.MustCompile(name + `\s*=\s*"([^"]*)"`).FindSubmatch(b)
		if m == nil || string(m[1]) != want {
			t.Errorf("infra %s = %q, the store's prefix is %q", name, m, want)
		}
	}
}

// The deployment declares the sparse indexes the store queries (infra,
// its own module, names them in names.go).
func TestIndexNames_MatchTheDeployment(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "infra", "names.go"))
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{"IndexLiveJobs": store.IndexLiveJobs, "IndexLiveDeliveries": store.IndexLiveDeliveries,
		"IndexDirectory": store.IndexDirectory} {
		m := regexp.MustCompile(name + `\s*=\s*"([^"]*)"`).FindSubmatch(b)
		if m == nil || string(m[1]) != want {
			t.Errorf("infra %s = %q, the store's index is %q", name, m, want)
		}
	}
}
