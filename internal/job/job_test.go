package job

import "testing"

// A version's repository is the one a generic caller named, or the part
// of a code host's changelist id before its number; a generic changelist
// without one names none (its id is the caller's, whatever it holds).
// Rules: R-INTAKE-7.
func TestRepositoryName_GenericFieldOrTheCodeHostsID(t *testing.T) {
	for _, c := range []struct {
		j    Job
		want string
	}{
		{Job{Source: "generic", ChangelistID: "billing-1042", Repository: "acme/billing"}, "acme/billing"},
		{Job{Source: "generic", ChangelistID: "acme/x#7"}, ""},
		{Job{Source: "github", ChangelistID: "acme/billing#7"}, "acme/billing"},
		{Job{Source: "gitlab", ChangelistID: "group/sub/proj!3"}, "group/sub/proj"},
		{Job{Source: "gerrit", ChangelistID: "platform~42"}, "platform"},
	} {
		if got := c.j.RepositoryName(); got != c.want {
			t.Errorf("%+v: %q, want %q", c.j, got, c.want)
		}
	}
}
