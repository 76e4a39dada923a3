package config_test

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
)

// The source, critic and secret variables are part of the deployment
// contract too.
func TestEnvNames_SourcesCriticsSecretsAreStable(t *testing.T) {
	names := map[string]string{
		config.EnvCritic:              "CRITICIZER_CRITIC",
		config.EnvBedrockModelID:      "CRITICIZER_BEDROCK_MODEL_ID",
		config.EnvOpenAIBaseURL:       "CRITICIZER_OPENAI_BASE_URL",
		config.EnvOpenAIModel:         "CRITICIZER_OPENAI_MODEL",
		config.EnvOpenAIAPIKey:        "CRITICIZER_OPENAI_API_KEY",
		config.EnvGitHubWebhookSecret: "CRITICIZER_GITHUB_WEBHOOK_SECRET",
		config.EnvGitHubToken:         "CRITICIZER_GITHUB_TOKEN",
		config.EnvGitHubAPIURL:        "CRITICIZER_GITHUB_API_URL",
		config.EnvGitLabWebhookToken:  "CRITICIZER_GITLAB_WEBHOOK_TOKEN",
		config.EnvGitLabSigningSecret: "CRITICIZER_GITLAB_SIGNING_SECRET",
		config.EnvGitLabToken:         "CRITICIZER_GITLAB_TOKEN",
		config.EnvGitLabAPIURL:        "CRITICIZER_GITLAB_API_URL",
		config.EnvGerritWebhookToken:  "CRITICIZER_GERRIT_WEBHOOK_TOKEN",
		config.EnvGerritAPIURL:        "CRITICIZER_GERRIT_API_URL",
		config.EnvGerritUsername:      "CRITICIZER_GERRIT_USERNAME",
		config.EnvGerritPassword:      "CRITICIZER_GERRIT_PASSWORD",
		config.EnvReviewerDirectory:   "CRITICIZER_REVIEWER_DIRECTORY",
		config.EnvSecretsARN:          "CRITICIZER_SECRETS_ARN",
		config.EnvIncrementalReview:   "CRITICIZER_INCREMENTAL_REVIEW",
	}
	for got, want := range names {
		if got != want {
			t.Errorf("env name %q; want %q", got, want)
		}
	}
}

// With nothing set: the offline critic, no source configured, the public
// API roots.
func TestFromEnv_SourceAndCriticDefaults(t *testing.T) {
	c, err := config.FromEnv(env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if c.LLM.Critic != config.CriticOffline || c.LLM.OpenAI.BaseURL != "https://api.openai.com" {
		t.Errorf("critic %q, openai %+v", c.LLM.Critic, c.LLM.OpenAI)
	}
	if c.GitHub.Configured() || c.GitLab.Configured() || c.Gerrit.Configured() {
		t.Errorf("a source is configured with nothing set: %+v %+v %+v", c.GitHub, c.GitLab, c.Gerrit)
	}
	if c.GitHub.APIURL != "https://api.github.com" || c.GitLab.APIURL != "https://gitlab.com/api/v4" || c.Gerrit.APIURL != "" {
		t.Errorf("API roots: %q %q %q", c.GitHub.APIURL, c.GitLab.APIURL, c.Gerrit.APIURL)
	}
	if c.ReviewerDirectory != "" || c.SecretsARN != "" {
		t.Errorf("directory %q, secrets %q", c.ReviewerDirectory, c.SecretsARN)
	}
	if !c.LLM.IncrementalReview {
		t.Error("incremental review is off by default")
	}
	if c, err := config.FromEnv(env(map[string]string{config.EnvIncrementalReview: "false"})); err != nil || c.LLM.IncrementalReview {
		t.Errorf("%s=false: on %v, %v", config.EnvIncrementalReview, c.LLM.IncrementalReview, err)
	}
}

func TestFromEnv_SourcesAndCriticOverrides(t *testing.T) {
	c, err := config.FromEnv(env(map[string]string{
		config.EnvCritic: "OpenAI", config.EnvOpenAIBaseURL: "http://llm.internal:8000", config.EnvOpenAIModel: "gpt-4.1", config.EnvOpenAIAPIKey: "sk-x",
		config.EnvGitHubWebhookSecret: "ghs-0123456789abcdef0123456789abcdef", config.EnvGitHubToken: "ght", config.EnvGitHubAPIURL: "https://ghe.example.com/api/v3",
		config.EnvGitLabWebhookToken: "glw-0123456789abcdef0123456789abcdef", config.EnvGitLabSigningSecret: "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", config.EnvGitLabToken: "glt",
		config.EnvGitLabAPIURL:       "https://gitlab.example.com/api/v4",
		config.EnvGerritWebhookToken: "grw-0123456789abcdef0123456789abcdef", config.EnvGerritAPIURL: "https://review.example.com", config.EnvGerritUsername: "bot", config.EnvGerritPassword: "pw",
		config.EnvReviewerDirectory: `{"github": {"octocat": "octo@example.com"}}`,
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := config.Config{LLM: config.LLM{Critic: "openai", OpenAI: config.OpenAI{BaseURL: "http://llm.internal:8000", Model: "gpt-4.1", APIKey: "sk-x"}},
		GitHub: config.GitHub{WebhookSecret: "ghs-0123456789abcdef0123456789abcdef", Token: "ght", APIURL: "https://ghe.example.com/api/v3"},
		GitLab: config.GitLab{WebhookToken: "glw-0123456789abcdef0123456789abcdef", SigningSecret: "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", Token: "glt", APIURL: "https://gitlab.example.com/api/v4"},
		Gerrit: config.Gerrit{WebhookToken: "grw-0123456789abcdef0123456789abcdef", APIURL: "https://review.example.com", Username: "bot", Password: "pw"}}
	if c.LLM.Critic != want.LLM.Critic || c.LLM.OpenAI != want.LLM.OpenAI || c.GitHub != want.GitHub || c.GitLab != want.GitLab || c.Gerrit != want.Gerrit {
		t.Errorf("got %+v %+v %+v %+v %+v", c.LLM.Critic, c.LLM.OpenAI, c.GitHub, c.GitLab, c.Gerrit)
	}
	if c.ReviewerDirectory != `{"github": {"octocat": "octo@example.com"}}` {
		t.Errorf("directory %q", c.ReviewerDirectory)
	}
}

// "@/path.json" reads the directory from a file.
func TestFromEnv_ReviewerDirectoryFromFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "directory.json")
	if err := os.WriteFile(path, []byte(`{"gitlab": {"user1": "user1@example.com"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := config.FromEnv(env(map[string]string{config.EnvReviewerDirectory: "@" + path}))
	if err != nil {
		t.Fatal(err)
	}
	if c.ReviewerDirectory != `{"gitlab": {"user1": "user1@example.com"}}` {
		t.Errorf("the file's directory: %q", c.ReviewerDirectory)
	}
	if _, err := config.FromEnv(env(map[string]string{config.EnvReviewerDirectory: "@" + path + ".missing"})); err == nil ||
		!strings.Contains(err.Error(), config.EnvReviewerDirectory) {
		t.Errorf("a missing file: %v", err)
	}
}

// Settings that can never work are refused at startup, naming the
// variable and never echoing a secret.
func TestFromEnv_InvalidSourceOrCriticSettingsNameTheVariable(t *testing.T) {
	cases := []struct {
		name string
		vars map[string]string
		want string
	}{
		{"unknown critic", map[string]string{config.EnvCritic: "gpt"}, config.EnvCritic},
		{"bedrock without a model", map[string]string{config.EnvCritic: "bedrock"}, config.EnvBedrockModelID},
		{"openai without a model", map[string]string{config.EnvCritic: "openai"}, config.EnvOpenAIModel},
		{"openai bad URL", map[string]string{config.EnvCritic: "openai", config.EnvOpenAIModel: "m", config.EnvOpenAIBaseURL: "llm.internal"}, config.EnvOpenAIBaseURL},
		{"github bad API URL", map[string]string{config.EnvGitHubWebhookSecret: "s", config.EnvGitHubAPIURL: "ftp://x"}, config.EnvGitHubAPIURL},
		{"github API URL with credentials", map[string]string{config.EnvGitHubWebhookSecret: "s", config.EnvGitHubAPIURL: "https://u:hunter2@x"}, config.EnvGitHubAPIURL},
		{"gerrit bad server URL", map[string]string{config.EnvGerritAPIURL: "review.example.com"}, config.EnvGerritAPIURL},
		{"gitlab bad API URL without a webhook", map[string]string{config.EnvGitLabAPIURL: "gitlab.example.com"}, config.EnvGitLabAPIURL},
		{"incremental review not a boolean", map[string]string{config.EnvIncrementalReview: "sometimes"}, config.EnvIncrementalReview},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := config.FromEnv(env(c.vars))
			if err == nil {
				t.Fatal("accepted")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %q does not name %s", err, c.want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q echoes a secret", err)
			}
		})
	}
}

// A CRITICIZER_SECRETS_ARN secret fills in what the environment leaves
// unset; the environment wins; unknown keys are refused by name.
func TestApplySecrets(t *testing.T) {
	c, err := config.FromEnv(env(map[string]string{config.EnvSecretsARN: "arn:aws:secretsmanager:eu-west-1:1:secret:x",
		config.EnvGitHubToken: "from-env", config.EnvGerritAPIURL: "https://review.example.com"}))
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ApplySecrets(map[string]string{
		config.EnvGitHubWebhookSecret: "ghs-0123456789abcdef0123456789abcdef", config.EnvGitHubToken: "from-secret", config.EnvGerritWebhookToken: "grw-0123456789abcdef0123456789abcdef",
		config.EnvOpenAIAPIKey: "sk", config.EnvReviewerDirectory: `{"github":{"a":"a@example.com"}}`,
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.GitHub.WebhookSecret != "ghs-0123456789abcdef0123456789abcdef" || got.GitHub.Token != "from-env" || got.Gerrit.WebhookToken != "grw-0123456789abcdef0123456789abcdef" || got.LLM.OpenAI.APIKey != "sk" || got.ReviewerDirectory == "" {
		t.Errorf("after ApplySecrets: %+v %+v %q", got.GitHub, got.Gerrit, got.LLM.OpenAI.APIKey)
	}
	_, err = c.ApplySecrets(map[string]string{"CRITICIZER_GITHUB_SECRET": "hunter2", config.EnvJobsTable: "x"})
	if err == nil || !strings.Contains(err.Error(), "CRITICIZER_GITHUB_SECRET") || !strings.Contains(err.Error(), config.EnvJobsTable) || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("unknown keys: %v", err)
	}
	// What the secret supplies is validated like the environment.
	if _, err := c.ApplySecrets(map[string]string{config.EnvAdminAPIKey: "short"}); err == nil {
		t.Error("accepted a short admin API key from the secret")
	}
}

// Regression: a webhook secret of any length (one character) was
// accepted, then one of 16 bytes. Every webhook secret or token is at
// least 32 bytes, refused at start naming the variable and not the value.
// Rules: R-PRIVACY-2, R-PRIVACY-4.
func TestFromEnv_ShortWebhookSecretsRefused(t *testing.T) {
	short := "0123456789abcdef0123456789abcde" // 31 bytes
	for _, name := range []string{config.EnvWebhookSecret, config.EnvGitHubWebhookSecret, config.EnvGitLabWebhookToken, config.EnvGerritWebhookToken} {
		for _, v := range []string{"hunter2", short} {
			_, err := config.FromEnv(env(map[string]string{name: v}))
			if err == nil || !strings.Contains(err.Error(), name) || strings.Contains(err.Error(), v) {
				t.Errorf("%s of %d bytes: %v; want an error naming the variable", name, len(v), err)
			}
		}
		if _, err := config.FromEnv(env(map[string]string{name: short + "f"})); err != nil {
			t.Errorf("%s of 32 bytes: %v", name, err)
		}
	}
}

// The ports a diff_url may use: 80 and 443 by default, a list, or any.
func TestFromEnv_DiffURLPorts(t *testing.T) {
	for v, want := range map[string][]int{"": nil, "*": {0}, "443": {443}, "80, 8443": {80, 8443}} {
		c, err := config.FromEnv(env(map[string]string{config.EnvDiffURLPorts: v}))
		if err != nil || !slices.Equal(c.DiffURLPorts, want) {
			t.Errorf("%q: %v %v, want %v", v, c.DiffURLPorts, err, want)
		}
	}
	for _, v := range []string{"0", "70000", "http", "80,"} {
		if _, err := config.FromEnv(env(map[string]string{config.EnvDiffURLPorts: v})); err == nil || !strings.Contains(err.Error(), config.EnvDiffURLPorts) {
			t.Errorf("%q accepted: %v", v, err)
		}
	}
}
