package job

// RepoSettings is what a repository's .criticizer.yaml, read at the base
// of the reviewed version by the fetch stage (package reposettings,
// R-REPO-6), asks of the
// review of one version. Only what later stages read is kept: who is
// skipped is decided by the fetch stage itself. Nothing here can widen who
// is mailed or turn redaction off (R-REPO-3): the file has no such keys.
type RepoSettings struct {
	// Ignore are doublestar globs of paths, from the repository root,
	// whose changes neither the model nor the offline critic reads.
	Ignore []string `json:"ignore,omitempty"`
	// Instructions are review notes for the files a glob matches: sent to
	// the model as the repository's words, inside the untrusted data.
	Instructions []PathInstruction `json:"instructions,omitempty"`
	// MinSeverity hides findings below it from the email ("", "info",
	// "warning" or "error"); it can only raise the deployment's.
	MinSeverity string `json:"min_severity,omitempty"`
	// Language is the language the critique is written in ("" for the
	// model's default, English).
	Language string `json:"language,omitempty"`
	// CodeHostStatusOff: the repository turned off the status Criticizer
	// posts on its changes (code_host_status: off). It can only turn it
	// off: the deployment turns it on (R-CHANNEL-10).
	CodeHostStatusOff bool `json:"code_host_status_off,omitempty"`
}

// PathInstruction is one entry of RepoSettings.Instructions.
type PathInstruction struct {
	Path string `json:"path"`
	Text string `json:"text"`
}

// Empty reports whether s asks nothing of the review.
func (s *RepoSettings) Empty() bool {
	return s == nil || (len(s.Ignore) == 0 && len(s.Instructions) == 0 && s.MinSeverity == "" && s.Language == "" && !s.CodeHostStatusOff)
}
