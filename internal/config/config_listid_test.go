package config_test

import (
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
)

// The List-Id every email carries is the deploy's: criticizer. and the
// sender's domain by default, CRITICIZER_LIST_ID when set; a list id a
// filter could not match as RFC 2919 writes it, or a sender without a
// usable domain, is refused at start with the variable named.
// Rules: R-MAIL-4.
func TestListID_DefaultFromSenderDomain_CheckedWhenSet(t *testing.T) {
	c, err := config.FromEnv(env(map[string]string{config.EnvMailFrom: "Criticizer <critic@Reviews.Example.org>"}))
	if err != nil {
		t.Fatal(err)
	}
	if c.ListID != "criticizer.reviews.example.org" || c.MailDomain != "reviews.example.org" {
		t.Errorf("list id %q, domain %q; want criticizer.reviews.example.org under reviews.example.org", c.ListID, c.MailDomain)
	}
	if c, err = config.FromEnv(env(map[string]string{config.EnvMailFrom: "critic@example.com", config.EnvListID: " team-a.reviews.example.com "})); err != nil || c.ListID != "team-a.reviews.example.com" {
		t.Errorf("set list id: %q, %v", c.ListID, err)
	}
	for _, bad := range []string{"reviews", "reviews..example.com", ".reviews.example.com", "<reviews.example.com>", "Reviews <r.example.com>",
		"r\u00e9views.example.com", "reviews.example.com\r\nBcc: x@example.com", strings.Repeat("a", config.MaxListIDLen-1) + ".x"} {
		_, err := config.FromEnv(env(map[string]string{config.EnvListID: bad}))
		if err == nil || !strings.Contains(err.Error(), config.EnvListID) {
			t.Errorf("list id %q: %v; want refused naming %s", bad, err, config.EnvListID)
		}
	}
	for _, bad := range []string{"Criticizer", "Criticizer <critic@>", "critic@caf\u00e9.example", "critic@" + strings.Repeat("d", config.MaxMailDomainLen) + ".x"} {
		_, err := config.FromEnv(env(map[string]string{config.EnvMailFrom: bad}))
		if err == nil || !strings.Contains(err.Error(), config.EnvMailFrom) {
			t.Errorf("sender %q: %v; want refused naming %s", bad, err, config.EnvMailFrom)
		}
	}
}
