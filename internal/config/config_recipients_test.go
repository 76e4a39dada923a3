package config_test

import (
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
)

// CRITICIZER_ALLOWED_RECIPIENT_DOMAINS: unset allows every domain; a list
// is read case-insensitively into ASCII form; an entry that is not a
// domain (a wildcard, an address) or a list too long for the environment
// is refused at start, naming the variable.
// Rules: R-RECIPIENT-1.
func TestFromEnv_AllowedRecipientDomains(t *testing.T) {
	c, err := config.FromEnv(env(nil))
	if err != nil || c.AllowedRecipientDomains.On() {
		t.Fatalf("unset: %v %v, want every domain allowed", c.AllowedRecipientDomains.List(), err)
	}
	c, err = config.FromEnv(env(map[string]string{config.EnvAllowedRecipientDomains: "Example.com, corp.example.org"}))
	if err != nil || strings.Join(c.AllowedRecipientDomains.List(), ",") != "corp.example.org,example.com" {
		t.Fatalf("list: %v %v", c.AllowedRecipientDomains.List(), err)
	}
	if !c.AllowedRecipientDomains.Allows("a@EXAMPLE.COM") || c.AllowedRecipientDomains.Allows("a@x.example.com") {
		t.Error("exact, case-insensitive matching expected")
	}
	for _, bad := range []string{"*.example.com", "ann@example.com", strings.Repeat("a.example,", 120)} {
		_, err := config.FromEnv(env(map[string]string{config.EnvAllowedRecipientDomains: bad}))
		if err == nil || !strings.Contains(err.Error(), config.EnvAllowedRecipientDomains) {
			t.Errorf("%q: %v, want an error naming the variable", bad, err)
		}
	}
}
