package config

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// secretSetting is a setting a CRITICIZER_SECRETS_ARN secret may hold:
// its variable, the field of Config it fills, and, when the value is not
// the setting itself, how to read it.
type secretSetting struct {
	name  string
	field *string
	read  func(string) (string, error)
}

// secretSettings is every setting a secret may hold — the credentials,
// and the settings that travel with them — with the field of c each
// fills. It is the one list: SecretEnv names it, ApplySecrets fills from
// it, and the deployment keeps every one of them out of the functions'
// environments (internal/deploy/cfn's TestSecrets_ReadByTheirFunctionsOnly).
func (c *Config) secretSettings() []secretSetting {
	return []secretSetting{
		{EnvWebhookSecret, &c.WebhookSecret, nil},
		{EnvOpenAIAPIKey, &c.LLM.OpenAI.APIKey, nil},
		{EnvGitHubWebhookSecret, &c.GitHub.WebhookSecret, nil},
		{EnvGitHubToken, &c.GitHub.Token, nil},
		{EnvGitHubAppID, &c.GitHub.App.ID, nil},
		{EnvGitHubAppInstallationID, &c.GitHub.App.InstallationID, nil},
		{EnvGitHubAppPrivateKey, &c.GitHub.App.PrivateKey, readAppKey},
		{EnvGitLabWebhookToken, &c.GitLab.WebhookToken, nil},
		{EnvGitLabSigningSecret, &c.GitLab.SigningSecret, nil},
		{EnvGitLabToken, &c.GitLab.Token, nil},
		{EnvGerritWebhookToken, &c.Gerrit.WebhookToken, nil},
		{EnvGerritUsername, &c.Gerrit.Username, nil},
		{EnvGerritPassword, &c.Gerrit.Password, nil},
		{EnvReviewerDirectory, &c.ReviewerDirectory, readDirectory},
		{EnvUnsubscribeKey, &c.UnsubscribeKey, nil},
		{EnvUnsubscribeKeyPrevious, &c.UnsubscribeKeyPrevious, nil},
		{EnvAdminAPIKey, &c.AdminAPIKey, nil},
		{EnvOutboundWebhooks, &c.OutboundWebhooks, nil},
	}
}

// SecretEnv returns the variables a CRITICIZER_SECRETS_ARN secret may set:
// the credentials, and the settings that travel with them.
func SecretEnv() []string {
	var c Config
	var names []string
	for _, s := range c.secretSettings() {
		names = append(names, s.name)
	}
	return names
}

// ApplySecrets fills in, from a CRITICIZER_SECRETS_ARN secret's values
// (variable name to value), every SecretEnv setting the environment left
// unset, then validates the result. A key that is not in SecretEnv is an
// error (a typo would otherwise silently leave a source unconfigured); the
// error names keys, never values.
func (c Config) ApplySecrets(values map[string]string) (Config, error) {
	settings := c.secretSettings()
	allowed := map[string]bool{}
	for _, s := range settings {
		allowed[s.name] = true
	}
	var unknown []string
	for k := range values {
		if !allowed[k] {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return Config{}, fmt.Errorf("%s: the secret has keys that are not settings it may hold: %s", EnvSecretsARN, strings.Join(quoteAll(unknown), ", "))
	}
	for _, s := range settings {
		if *s.field != "" {
			continue
		}
		v := values[s.name]
		if s.read != nil {
			var err error
			if v, err = s.read(v); err != nil {
				return Config{}, err
			}
		}
		*s.field = v
	}
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = strconv.Quote(v)
	}
	return out
}

// Secrets are the SecretEnv settings c holds, by variable, the unset ones
// left out: what the local stack puts in the secrets its functions read,
// as an operator puts them in the deployment's.
func (c Config) Secrets() map[string]string {
	out := map[string]string{}
	for _, s := range c.secretSettings() {
		if *s.field != "" {
			out[s.name] = *s.field
		}
	}
	return out
}

// WithoutSecrets is c with every SecretEnv setting unset: a function's
// configuration before its secrets are applied.
func (c Config) WithoutSecrets() Config {
	for _, s := range c.secretSettings() {
		*s.field = ""
	}
	return c
}
