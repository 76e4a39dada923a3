package reviewers

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// The static directory: per source, case-insensitive usernames,
// normalized addresses.
// Rules: R-REVIEWERS-4.
func TestStatic_LookupPerSourceCaseInsensitive(t *testing.T) {
	d, err := ParseStatic([]byte(`{
		"github": {"octocat": "Octo@Example.com", "Hubot": "hubot@example.com"},
		"gitlab": {"user1": "user1@example.com"}
	}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		source, user, want string
		ok                 bool
	}{
		{"github", "octocat", "octo@example.com", true},
		{"github", "OctoCat", "octo@example.com", true}, // logins are case-insensitive
		{"github", "hubot", "hubot@example.com", true},
		{"gitlab", "user1", "user1@example.com", true},
		{"github", "user1", "", false}, // per source
		{"github", "nobody", "", false},
		{"gerrit", "octocat", "", false},
	}
	for _, tt := range tests {
		got, err := d.Lookup(context.Background(), tt.source, []string{tt.user})
		addr, ok := got[Key(tt.user)]
		if err != nil || ok != tt.ok || addr != tt.want {
			t.Errorf("Lookup(%s, %s) = %q, %v, %v; want %q, %v", tt.source, tt.user, addr, ok, err, tt.want, tt.ok)
		}
	}
	var nilDir *Static
	if got, err := nilDir.Lookup(context.Background(), "github", []string{"octocat"}); len(got) != 0 || err != nil {
		t.Fatal("nil directory answered")
	}
}

func TestStatic_RejectsBadConfigWithoutQuotingAddresses(t *testing.T) {
	for _, cfg := range []string{
		`{"github": {"octocat": "not an address"}}`,
		`{"github": {"octocat": "Octo Cat <octo@example.com>"}}`,
		`{"github": {"octocat": "octo@localhost"}}`,
		`{"github": {"octocat": "octo@example.com", "OCTOCAT": "other@example.com"}}`,
		`{"github": {"": "octo@example.com"}}`,
		`{"": {"octocat": "octo@example.com"}}`,
		`{"github": ["octocat"]}`,
		`{"github": {}} {}`,
		`[]`,
	} {
		_, err := ParseStatic([]byte(cfg))
		if err == nil {
			t.Errorf("%s: accepted", cfg)
			continue
		}
		if strings.Contains(err.Error(), "octo@") || strings.Contains(err.Error(), "Octo Cat") {
			t.Errorf("%s: error leaks an address: %v", cfg, err)
		}
	}
}

type failingDirectory struct{}

func (failingDirectory) Lookup(context.Context, string, []string) (map[string]string, error) {
	return nil, errors.New("directory unavailable")
}

// Resolve: one lookup for everyone without an address, unknown users left
// without one (never guessed), disclosed addresses kept, the same address
// merged.
// Rules: R-REVIEWERS-4.
func TestResolve_UnknownStayWithoutAddress(t *testing.T) {
	d, err := NewStatic(map[string]map[string]string{"github": {"octocat": "octo@example.com", "octo2": "OCTO@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	in := []Person{
		{Username: "octocat"},
		{Username: "stranger"},                              // unknown: stays without an address, no guess
		{Username: "jdoe", Email: " John.Doe@Example.com "}, // disclosed by the source: kept, normalized
		{Username: "octo2"},                                 // same address as octocat: merged
		{Username: "", Email: ""},                           // nothing to go on
	}
	got, err := Resolve(context.Background(), d, "github", in)
	if err != nil {
		t.Fatal(err)
	}
	want := []Person{
		{Username: "octocat", Email: "octo@example.com"},
		{Username: "stranger"},
		{Username: "jdoe", Email: "john.doe@example.com"},
		{},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %+v\nwant %+v", got, want)
	}
	if _, err := Resolve(context.Background(), failingDirectory{}, "github", in); err == nil {
		t.Fatal("directory failure swallowed")
	}
	if got, err := Resolve(context.Background(), nil, "github", in[:2]); err != nil || len(got) != 2 || got[0].Email != "" {
		t.Fatalf("nil directory: %+v, %v", got, err)
	}
	recipients, unknown := Split("github", got)
	if !reflect.DeepEqual(recipients, []string{"octo@example.com", "john.doe@example.com"}) || !reflect.DeepEqual(unknown, []string{"github:stranger"}) {
		t.Fatalf("split: %v %v", recipients, unknown)
	}
}

type tableEntries map[string]Entry

func (t tableEntries) Entries(_ context.Context, _ string, usernames []string) (map[string]Entry, error) {
	out := map[string]Entry{}
	for _, u := range usernames {
		if e, ok := t[Key(u)]; ok {
			out[Key(u)] = e
		}
	}
	return out, nil
}

// The table people keep wins over the seed; a removal in the table hides
// the seed's entry; a name the table does not hold falls through.
// Rules: R-REVIEWERS-4.
func TestOverlay_TableWinsRemovalHidesSeed(t *testing.T) {
	seed, err := NewStatic(map[string]map[string]string{"github": {
		"octocat": "seed-octo@example.com", "hubot": "seed-hubot@example.com", "monalisa": "seed-mona@example.com"}})
	if err != nil {
		t.Fatal(err)
	}
	o := Overlay{Seed: seed, Table: tableEntries{
		"octocat": {Username: "OctoCat", Email: "octo@example.com"},
		"hubot":   {Username: "hubot", Removed: true},
		"newbie":  {Username: "newbie", Email: "newbie@example.com"},
	}}
	got, err := o.Lookup(context.Background(), "github", []string{"OCTOCAT", "hubot", "monalisa", "newbie", "stranger"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"octocat": "octo@example.com", "monalisa": "seed-mona@example.com", "newbie": "newbie@example.com"}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}
