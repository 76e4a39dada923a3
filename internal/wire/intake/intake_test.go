package intake_test

import (
	"strings"
	"testing"
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/wire/intake"
)

// A GitLab signing secret that cannot work is refused when the intake
// function starts, naming the variable and never echoing the value.
func TestParsers_BadGitLabSigningSecretNamesTheVariable(t *testing.T) {
	for _, secret := range []string{"hunter2!", "not-whsec!", "whsec_!!!"} {
		_, err := intake.Parsers(config.Config{GitLab: config.GitLab{SigningSecret: secret}}, time.Now)
		if err == nil || !strings.Contains(err.Error(), config.EnvGitLabSigningSecret) || strings.Contains(err.Error(), secret) {
			t.Errorf("secret %q: %v; want an error naming %s", secret, err, config.EnvGitLabSigningSecret)
		}
	}
	if _, err := intake.Parsers(config.Config{GitLab: config.GitLab{SigningSecret: "whsec_c2VjcmV0"}}, time.Now); err != nil {
		t.Errorf("a valid secret: %v", err)
	}
	if _, err := intake.Parsers(config.Config{}, time.Now); err == nil || !strings.Contains(err.Error(), config.EnvWebhookSecret) {
		t.Errorf("no source configured: %v", err)
	}
}
