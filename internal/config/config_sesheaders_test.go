package config_test

import (
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
)

// TestPublicURL_SESHeaderBoundary: CRITICIZER_PUBLIC_URL is refused, with
// the variable named, when it is not printable ASCII or when the longest
// List-Unsubscribe value built under it would pass SES's 870 characters:
// at the bound it is accepted, one character more is refused. (That the
// bound is what the sender builds is TestListUnsubscribe_LongestFitsSESHeaderLimits.)
// Rules: R-LIMIT-2.
func TestPublicURL_SESHeaderBoundary(t *testing.T) {
	url := func(n int) string {
		return "https://" + strings.Repeat("a", n-len("https://")-len(".example")) + ".example"
	}
	if want := 870 - len("<") - len("/unsubscribe/") - config.MaxUnsubscribeTokenLen - len(">"); config.MaxPublicURLLen != want || want < 100 {
		t.Fatalf("MaxPublicURLLen = %d, want %d", config.MaxPublicURLLen, want)
	}
	cases := []struct {
		url string
		ok  bool
	}{
		{url: url(config.MaxPublicURLLen), ok: true},
		{url: url(config.MaxPublicURLLen) + "/", ok: true}, // a trailing slash is dropped
		{url: url(config.MaxPublicURLLen + 1)},
		{url: "https://criticizer.example/caf\u00e9"},
		{url: "https://criticizer.example/a b"},
		{url: "https://criticizer.example/<x>"},
		{url: "https://criticizer.example/\x7f"},
		{url: "https://abcdefghij.execute-api.eu-west-1.amazonaws.com", ok: true},
	}
	for _, c := range cases {
		_, err := config.FromEnv(env(map[string]string{config.EnvPublicURL: c.url}))
		switch {
		case c.ok && err != nil:
			t.Errorf("%d-character URL refused: %v", len(c.url), err)
		case !c.ok && err == nil:
			t.Errorf("%d-character URL %.40q… accepted", len(c.url), c.url)
		case !c.ok && !strings.Contains(err.Error(), config.EnvPublicURL):
			t.Errorf("error %q does not name %s", err, config.EnvPublicURL)
		}
	}
}
