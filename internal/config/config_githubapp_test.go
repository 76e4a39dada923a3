package config_test

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
)

// A GitHub App is configured by its id and private key, which may come in
// the fetch function's secret (the key with its line breaks escaped as a
// one-line value, too); a partial App, an App beside a static token, a
// key that is not an RSA PEM key and a non-numeric installation id are
// refused, naming the variable and never quoting the key.
// Rules: R-SOURCE-4.
func TestGitHubApp_FromTheSecret_Validated(t *testing.T) {
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	key := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(k)}))
	base, err := config.FromEnv(env(map[string]string{config.EnvSecretsARN: "arn:aws:secretsmanager:us-east-1:1:secret:s"}))
	if err != nil {
		t.Fatal(err)
	}
	c, err := base.ApplySecrets(map[string]string{
		config.EnvGitHubAppID: "12345", config.EnvGitHubAppInstallationID: "42",
		config.EnvGitHubAppPrivateKey: strings.ReplaceAll(key, "\n", `\n`),
	})
	if err != nil {
		t.Fatal(err)
	}
	if a := c.GitHub.App; a.ID != "12345" || a.Installation() != 42 || a.PrivateKey != strings.TrimSpace(key) {
		t.Fatalf("App id %q, installation %d, key read back whole: %v", a.ID, a.Installation(), a.PrivateKey == strings.TrimSpace(key))
	}

	secretBits := "bm90LWEta2V5LXNlY3JldA"
	for name, tt := range map[string]struct {
		values map[string]string
		want   string
	}{
		"no key":           {map[string]string{config.EnvGitHubAppID: "1"}, config.EnvGitHubAppPrivateKey},
		"no id":            {map[string]string{config.EnvGitHubAppPrivateKey: key}, config.EnvGitHubAppID},
		"beside a token":   {map[string]string{config.EnvGitHubAppID: "1", config.EnvGitHubAppPrivateKey: key, config.EnvGitHubToken: "ghp_x"}, config.EnvGitHubToken},
		"bad installation": {map[string]string{config.EnvGitHubAppID: "1", config.EnvGitHubAppPrivateKey: key, config.EnvGitHubAppInstallationID: "acme"}, config.EnvGitHubAppInstallationID},
		"not a key": {map[string]string{config.EnvGitHubAppID: "1",
			config.EnvGitHubAppPrivateKey: "-----BEGIN RSA PRIVATE KEY-----\n" + secretBits + "\n-----END RSA PRIVATE KEY-----"}, config.EnvGitHubAppPrivateKey},
	} {
		_, err := base.ApplySecrets(tt.values)
		if err == nil || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), secretBits) || strings.Contains(err.Error(), "PRIVATE KEY-----") {
			t.Errorf("%s: %v, want an error naming %s", name, err, tt.want)
		}
	}
}
