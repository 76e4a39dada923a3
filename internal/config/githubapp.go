package config

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// GitHubApp is a GitHub App the fetch stage authenticates as, in
// place of CRITICIZER_GITHUB_TOKEN: an organisation installs the App on
// its repositories, and each request carries a short-lived installation
// token minted with the App's private key.
type GitHubApp struct {
	ID string // the App's id (or client id)
	// InstallationID is the one installation used; empty: looked up per
	// repository owner.
	InstallationID string
	PrivateKey     string // PEM
}

// Configured reports whether any App setting is set.
func (a GitHubApp) Configured() bool {
	return a.ID != "" || a.InstallationID != "" || a.PrivateKey != ""
}

// Installation is InstallationID as a number; 0 when unset. Validate has
// checked it.
func (a GitHubApp) Installation() int64 {
	n, _ := strconv.ParseInt(a.InstallationID, 10, 64)
	return n
}

// readGitHubApp reads the App settings. A private key pasted with its
// line breaks escaped ("\n", as in a one-line environment value) is
// restored.
func readGitHubApp(getenv func(string) string) GitHubApp {
	return GitHubApp{
		ID:             strings.TrimSpace(getenv(EnvGitHubAppID)),
		InstallationID: strings.TrimSpace(getenv(EnvGitHubAppInstallationID)),
		PrivateKey:     appKeyText(getenv(EnvGitHubAppPrivateKey)),
	}
}

// readAppKey is appKeyText for a secret's value.
func readAppKey(v string) (string, error) { return appKeyText(v), nil }

func appKeyText(v string) string {
	if !strings.Contains(v, "\n") {
		v = strings.ReplaceAll(v, `\n`, "\n")
	}
	return strings.TrimSpace(v)
}

// validateGitHubApp checks an App's settings: the id and the key together,
// the key an RSA private key in PEM, a numeric installation id, and not a
// static token as well (one credential, so which one a request used is
// never a question). Messages name variables, never values.
func (c Config) validateGitHubApp() error {
	a := c.GitHub.App
	if !a.Configured() {
		return nil
	}
	if a.ID == "" || a.PrivateKey == "" {
		return fmt.Errorf("a GitHub App needs both %s and %s", EnvGitHubAppID, EnvGitHubAppPrivateKey)
	}
	if c.GitHub.Token != "" {
		return fmt.Errorf("set %s or a GitHub App (%s), not both", EnvGitHubToken, EnvGitHubAppID)
	}
	if a.InstallationID != "" {
		if n, err := strconv.ParseInt(a.InstallationID, 10, 64); err != nil || n < 1 {
			return fmt.Errorf("%s: want a positive integer (the number in the installation's settings URL)", EnvGitHubAppInstallationID)
		}
	}
	if err := checkRSAKey(a.PrivateKey); err != nil {
		return fmt.Errorf("%s: %w", EnvGitHubAppPrivateKey, err)
	}
	return nil
}

// checkRSAKey accepts an RSA private key in PEM, PKCS #1 (as GitHub
// issues them) or PKCS #8.
func checkRSAKey(text string) error {
	b, _ := pem.Decode([]byte(text))
	if b == nil {
		return errors.New("not PEM (paste the .pem file GitHub gave, BEGIN and END lines included)")
	}
	if _, err := x509.ParsePKCS1PrivateKey(b.Bytes); err == nil {
		return nil
	}
	k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
	if _, ok := k.(*rsa.PrivateKey); err != nil || !ok {
		return errors.New("not an RSA private key")
	}
	return nil
}
