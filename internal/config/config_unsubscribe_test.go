package config_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/unsubscribe"
)

const (
	currentKey  = "current-unsubscribe-key-0123456789abcdef"
	previousKey = "previous-unsubscribe-key-0123456789abcdef"
)

// The previous unsubscribe key is optional, has a stable name, and may
// live in the same secret JSON as the current one (it is in SecretEnv).
func TestUnsubscribeKeyPrevious_OptionalFromEnvOrSecret(t *testing.T) {
	if config.EnvUnsubscribeKeyPrevious != "CRITICIZER_UNSUBSCRIBE_KEY_PREVIOUS" {
		t.Fatalf("env name %q", config.EnvUnsubscribeKeyPrevious)
	}
	for _, name := range []string{config.EnvUnsubscribeKey, config.EnvUnsubscribeKeyPrevious} {
		if !slices.Contains(config.SecretEnv(), name) {
			t.Fatalf("config.SecretEnv() %v does not allow %s", config.SecretEnv(), name)
		}
	}
	if config.MinUnsubscribeKeyBytes != unsubscribe.MinKeyLen {
		t.Fatalf("config accepts %d-byte keys, the signer %d", config.MinUnsubscribeKeyBytes, unsubscribe.MinKeyLen)
	}
	c, err := config.FromEnv(env(nil))
	if err != nil || c.UnsubscribeKeyPrevious != "" {
		t.Fatalf("default: %q %v, want unset", c.UnsubscribeKeyPrevious, err)
	}
	c, err = config.FromEnv(env(map[string]string{config.EnvUnsubscribeKey: currentKey, config.EnvUnsubscribeKeyPrevious: previousKey}))
	if err != nil || c.UnsubscribeKey != currentKey || c.UnsubscribeKeyPrevious != previousKey {
		t.Fatalf("from env: %v", err)
	}
	// Both keys in the one secret JSON, as docs/operations.md's rotation says.
	c, err = config.FromEnv(env(map[string]string{config.EnvSecretsARN: "arn:aws:secretsmanager:eu-west-1:1:secret:u"}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ApplySecrets(map[string]string{config.EnvUnsubscribeKey: currentKey, config.EnvUnsubscribeKeyPrevious: previousKey})
	if err != nil || got.UnsubscribeKey != currentKey || got.UnsubscribeKeyPrevious != previousKey {
		t.Fatalf("from the secret: %v", err)
	}
	// The two settings make a signer that accepts tokens of either key.
	old, _ := unsubscribe.NewSigner(previousKey)
	s, err := unsubscribe.NewSigner(got.UnsubscribeKey, got.UnsubscribeKeyPrevious)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Verify(old.Token(unsubscribe.RecipientID("a@example.com"), unsubscribe.ScopeAll)); err != nil {
		t.Fatalf("a token of the previous key: %v", err)
	}
}

// The previous key is held to the current key's 32-byte minimum, from the
// environment or the secret, and the error names the variable, never the
// value.
func TestUnsubscribeKeyPrevious_TooShortRefusedWithoutEchoingIt(t *testing.T) {
	short := "hunter2-previous-key"
	vars := map[string]string{config.EnvUnsubscribeKey: currentKey, config.EnvUnsubscribeKeyPrevious: short}
	_, err := config.FromEnv(env(vars))
	if err == nil || !strings.Contains(err.Error(), config.EnvUnsubscribeKeyPrevious) || strings.Contains(err.Error(), short) {
		t.Fatalf("err = %v, want one naming %s without the value", err, config.EnvUnsubscribeKeyPrevious)
	}
	c, _ := config.FromEnv(env(map[string]string{config.EnvSecretsARN: "arn:aws:secretsmanager:eu-west-1:1:secret:u"}))
	if _, err := c.ApplySecrets(vars); err == nil || !strings.Contains(err.Error(), config.EnvUnsubscribeKeyPrevious) || strings.Contains(err.Error(), short) {
		t.Fatalf("from the secret: err = %v", err)
	}
	// Exactly the minimum is enough.
	vars[config.EnvUnsubscribeKeyPrevious] = strings.Repeat("p", config.MinUnsubscribeKeyBytes)
	if _, err := config.FromEnv(env(vars)); err != nil {
		t.Fatalf("a %d-byte previous key: %v", config.MinUnsubscribeKeyBytes, err)
	}
}

// A previous key without a current one is a half-done rotation (old links
// verify, new emails would carry none): refused at start, naming both
// variables and neither value.
func TestUnsubscribeKeyPrevious_NeedsTheCurrentKey(t *testing.T) {
	_, err := config.FromEnv(env(map[string]string{config.EnvUnsubscribeKeyPrevious: previousKey}))
	if err == nil || !strings.Contains(err.Error(), config.EnvUnsubscribeKeyPrevious) || !strings.Contains(err.Error(), config.EnvUnsubscribeKey) ||
		strings.Contains(err.Error(), previousKey) {
		t.Fatalf("err = %v", err)
	}
}
