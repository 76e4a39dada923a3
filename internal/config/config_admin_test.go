package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
)

// The admin API is off unless CRITICIZER_ADMIN_API_KEY is set, from the
// environment or from the intake's Secrets Manager secret (it is a
// credential, so it is one of the settings the secret may hold).
func TestAdminAPIKey_OffByDefault_FromEnvOrSecret(t *testing.T) {
	if config.EnvAdminAPIKey != "CRITICIZER_ADMIN_API_KEY" {
		t.Fatalf("env name %q", config.EnvAdminAPIKey)
	}
	if !slices.Contains(config.SecretEnv(), config.EnvAdminAPIKey) {
		t.Fatalf("config.SecretEnv() %v does not allow %s", config.SecretEnv(), config.EnvAdminAPIKey)
	}
	c, err := config.FromEnv(func(string) string { return "" })
	if err != nil || c.AdminAPIKey != "" {
		t.Fatalf("default: %q %v, want off", c.AdminAPIKey, err)
	}
	key := strings.Repeat("k", config.MinAdminAPIKeyBytes)
	c, err = config.FromEnv(func(n string) string {
		if n == config.EnvAdminAPIKey {
			return key
		}
		return ""
	})
	if err != nil || c.AdminAPIKey != key {
		t.Fatalf("from env: %v", err)
	}
	c, _ = config.FromEnv(func(string) string { return "" })
	got, err := c.ApplySecrets(map[string]string{config.EnvAdminAPIKey: key})
	if err != nil || got.AdminAPIKey != key {
		t.Fatalf("from the secret: %v", err)
	}
}

// A short key is refused at start, and the error names the variable, never
// the value.
func TestAdminAPIKey_TooShortRefusedWithoutEchoingIt(t *testing.T) {
	short := "hunter2-admin"
	_, err := config.FromEnv(func(n string) string {
		if n == config.EnvAdminAPIKey {
			return short
		}
		return ""
	})
	if err == nil || !strings.Contains(err.Error(), config.EnvAdminAPIKey) || strings.Contains(err.Error(), short) {
		t.Fatalf("err = %v, want one naming %s without the value", err, config.EnvAdminAPIKey)
	}
	c, _ := config.FromEnv(func(string) string { return "" })
	if _, err := c.ApplySecrets(map[string]string{config.EnvAdminAPIKey: short}); err == nil || strings.Contains(err.Error(), short) {
		t.Fatalf("from the secret: err = %v", err)
	}
}
