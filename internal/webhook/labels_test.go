package webhook

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The labels skip_labels is checked against come from the payloads each
// source sends (R-REPO-4): the recorded ones, and Gerrit's hashtags.
func TestLabels(t *testing.T) {
	read := func(p string) []byte {
		b, err := os.ReadFile(filepath.Join("testdata", p))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	for _, tc := range []struct {
		source string
		body   []byte
		want   []string
	}{
		{"github", read("github/pull_request.opened.json"), []string{"bug"}},
		{"gitlab", read("gitlab/merge_request.open.json"), []string{"API"}},
		{"gitlab", []byte(`{"object_attributes":{"labels":[{"title":"no-review"}]}}`), []string{"no-review"}},
		{"gerrit", []byte(`{"type":"patchset-created","change":{"hashtags":["wip"," no-review "]}}`), []string{"wip", "no-review"}},
		{"gerrit", read("gerrit/patchset-created.json"), nil},
		{"generic", []byte(`{"labels":[{"title":"x"}]}`), nil},
		{"github", []byte(`not json`), nil},
	} {
		if got := Labels(tc.source, tc.body); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s %.40s: %q, want %q", tc.source, tc.body, got, tc.want)
		}
	}
}
