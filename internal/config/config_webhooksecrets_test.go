package config_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
)

// Regression: a GitLab signing secret ("whsec_<base64>") of any length was
// accepted. Its decoded key must be at least 32 bytes, whatever the
// string's length: a 31-byte key is refused (its string is 50 bytes), a
// 32-byte one taken; the error names the variable, never the value.
// Rules: R-PRIVACY-4.
func TestFromEnv_SigningSecretKeyOf32Bytes(t *testing.T) {
	whsec := func(n int) string {
		return "whsec_" + base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", n)))
	}
	for _, bad := range []string{whsec(31), whsec(8), "whsec_c2VjcmV0", "whsec_not base64!"} {
		_, err := config.FromEnv(env(map[string]string{config.EnvGitLabSigningSecret: bad}))
		if err == nil || !strings.Contains(err.Error(), config.EnvGitLabSigningSecret) || strings.Contains(err.Error(), strings.TrimPrefix(bad, "whsec_")) {
			t.Errorf("%d-byte string %q: %v, want an error naming the variable", len(bad), bad[:10], err)
		}
	}
	if _, err := config.FromEnv(env(map[string]string{config.EnvGitLabSigningSecret: whsec(32)})); err != nil {
		t.Errorf("a 32-byte key: %v", err)
	}
}

// Regression: one value could be the secret of several sources, so a
// leak of one forged all. The same value in two of intake's secrets — two
// sources, a source and the admin API key or the unsubscribe key — is
// refused at start, from the environment or a Secrets Manager secret,
// naming both variables and never the value.
// Rules: R-PRIVACY-4.
func TestFromEnv_OneSecretPerSource(t *testing.T) {
	same := "0123456789abcdef0123456789abcdef-shared"
	names := []string{config.EnvWebhookSecret, config.EnvGitHubWebhookSecret, config.EnvGitLabWebhookToken,
		config.EnvGerritWebhookToken, config.EnvAdminAPIKey, config.EnvUnsubscribeKey}
	for i, a := range names {
		for _, b := range names[i+1:] {
			_, err := config.FromEnv(env(map[string]string{a: same, b: same}))
			if err == nil || !strings.Contains(err.Error(), a) || !strings.Contains(err.Error(), b) || strings.Contains(err.Error(), same) {
				t.Errorf("%s = %s: %v, want an error naming both", a, b, err)
			}
		}
	}
	c, err := config.FromEnv(env(map[string]string{config.EnvSecretsARN: "arn:aws:secretsmanager:eu-west-1:1:secret:x",
		config.EnvGitHubWebhookSecret: same}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.ApplySecrets(map[string]string{config.EnvGerritWebhookToken: same}); err == nil ||
		!strings.Contains(err.Error(), config.EnvGerritWebhookToken) {
		t.Errorf("the same value from the secret: %v, want refused", err)
	}
	distinct := map[string]string{}
	for i, n := range names {
		distinct[n] = same + strings.Repeat("x", i)
	}
	if _, err := config.FromEnv(env(distinct)); err != nil {
		t.Errorf("distinct secrets: %v", err)
	}
}
