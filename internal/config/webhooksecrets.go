package config

import (
	"encoding/base64"
	"fmt"
	"strings"
)

// A webhook secret is all that stands between the internet and a review
// that mails every reviewer of a repository. Each source has its own
// (R-PRIVACY-4): one leaked secret must not forge another source's
// webhooks, nor be the admin API key or the unsubscribe key.

// checkSecrets refuses a webhook secret shorter than MinWebhookSecretBytes
// (for a GitLab signing secret, "whsec_<base64>", the key it decodes to),
// and a value that two of intake's secrets share. Errors name variables,
// never values.
func (c Config) checkSecrets() error {
	for _, w := range []struct{ name, v string }{
		{EnvWebhookSecret, c.WebhookSecret}, {EnvGitHubWebhookSecret, c.GitHub.WebhookSecret},
		{EnvGitLabWebhookToken, c.GitLab.WebhookToken}, {EnvGerritWebhookToken, c.Gerrit.WebhookToken},
	} {
		if w.v != "" && len(w.v) < MinWebhookSecretBytes {
			return fmt.Errorf("%s: %d bytes, need at least %d (e.g. openssl rand -hex 32)", w.name, len(w.v), MinWebhookSecretBytes)
		}
	}
	if s := c.GitLab.SigningSecret; s != "" {
		if n := signingKeyBytes(s); n < MinWebhookSecretBytes {
			return fmt.Errorf("%s: a key of %d bytes, need a whsec_ secret whose base64 decodes to at least %d (e.g. echo whsec_$(openssl rand -base64 32))",
				EnvGitLabSigningSecret, n, MinWebhookSecretBytes)
		}
	}
	seen := map[string]string{}
	for _, s := range []struct{ name, v string }{
		{EnvWebhookSecret, c.WebhookSecret}, {EnvGitHubWebhookSecret, c.GitHub.WebhookSecret},
		{EnvGitLabWebhookToken, c.GitLab.WebhookToken}, {EnvGitLabSigningSecret, c.GitLab.SigningSecret},
		{EnvGerritWebhookToken, c.Gerrit.WebhookToken}, {EnvAdminAPIKey, c.AdminAPIKey},
		{EnvUnsubscribeKey, c.UnsubscribeKey}, {EnvUnsubscribeKeyPrevious, c.UnsubscribeKeyPrevious},
	} {
		if s.v == "" {
			continue
		}
		if other, ok := seen[s.v]; ok {
			return fmt.Errorf("%s and %s hold the same value: give each its own secret (openssl rand -hex 32), so that one leaked secret cannot forge the other's requests",
				other, s.name)
		}
		seen[s.v] = s.name
	}
	return nil
}

// signingKeyBytes is the length of the key a "whsec_<base64>" signing
// secret decodes to (webhook.GitLab reads it the same way), 0 when it
// does not decode: the key signs, so its length is what counts, not the
// string's.
func signingKeyBytes(secret string) int {
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(strings.TrimSpace(secret), "whsec_"))
	if err != nil {
		return 0
	}
	return len(key)
}
