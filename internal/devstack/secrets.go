package devstack

// The local stack's webhook secrets (make run, the sample events, the
// tests that follow the docs). Each source has its own, at least 32
// bytes, as config requires of every deployment (R-PRIVACY-4); they are
// public, for the local stack only.
const (
	LocalGenericSecret = "local-generic-webhook-secret-not-for-production"
	LocalGitHubSecret  = "local-github-webhook-secret-not-for-production"
	LocalGitLabToken   = "local-gitlab-webhook-token-not-for-production"
	LocalGerritToken   = "local-gerrit-webhook-token-not-for-production"
)
