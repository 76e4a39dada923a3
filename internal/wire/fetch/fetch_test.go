package fetch_test

import (
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/wire/fetch"
)

// A reviewer directory that cannot be read is refused when the fetch
// function starts, naming the variable and never echoing an address.
func TestDirectory_InvalidNamesTheVariable(t *testing.T) {
	for _, v := range []string{"octocat=hunter2@x", `{"github":{"a":"A <hunter2@example.com>"}}`} {
		_, err := fetch.Directory(config.Config{ReviewerDirectory: v})
		if err == nil || !strings.Contains(err.Error(), config.EnvReviewerDirectory) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("%q: %v; want an error naming %s", v, err, config.EnvReviewerDirectory)
		}
	}
	d, err := fetch.Directory(config.Config{ReviewerDirectory: `{"github": {"octocat": "octo@example.com"}}`})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := d.Lookup(t.Context(), "github", []string{"OctoCat"}); got["octocat"] != "octo@example.com" {
		t.Errorf("lookup: %v", got)
	}
	if d, err := fetch.Directory(config.Config{}); d != nil || err != nil {
		t.Errorf("none configured: %v %v", d, err)
	}
}
