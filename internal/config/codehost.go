package config

import (
	"fmt"
	"regexp"
	"strings"
)

// The code host's status on a change (R-CHANNEL-10, R-CHANNEL-11).
const (
	// EnvCodeHostStatus turns on the status on the change: a check run
	// (GitHub App), a commit status (GitHub token, GitLab), a review
	// message (Gerrit). on or off (the default).
	EnvCodeHostStatus = "CRITICIZER_CODE_HOST_STATUS"
	// EnvCheckFailureOnError makes a reviewed version with an
	// error-severity finding a failure (check run, commit status, Gerrit
	// -1) rather than neutral. on or off (the default).
	EnvCheckFailureOnError = "CRITICIZER_CHECK_FAILURE_ON_ERROR"
	// EnvGerritStatusLabel names the Gerrit label the review message
	// votes on; unset: no vote.
	EnvGerritStatusLabel = "CRITICIZER_GERRIT_STATUS_LABEL"
)

// CodeHost is what notify posts on the change itself.
type CodeHost struct {
	// Status: post a status on the change (CRITICIZER_CODE_HOST_STATUS);
	// a repository can turn it off for itself, never on.
	Status bool
	// FailOnError: an error-severity finding fails the status.
	FailOnError bool
	// GerritLabel is the label a Gerrit review message votes on; "": none.
	GerritLabel string
}

// gerritLabelName is a Gerrit label's name: letters, digits and "-"
// (Gerrit's own rule for label names).
var gerritLabelName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9-]{0,63}$`)

// readCodeHost reads the code host status settings.
func (c *Config) readCodeHost(getenv func(string) string) error {
	var err error
	if c.Notify.CodeHost.Status, err = onOff(getenv, EnvCodeHostStatus); err != nil {
		return err
	}
	if c.Notify.CodeHost.FailOnError, err = onOff(getenv, EnvCheckFailureOnError); err != nil {
		return err
	}
	l := strings.TrimSpace(getenv(EnvGerritStatusLabel))
	if l != "" && !gerritLabelName.MatchString(l) {
		return fmt.Errorf("%s: want a Gerrit label's name (letters, digits, -)", EnvGerritStatusLabel)
	}
	c.Notify.CodeHost.GerritLabel = l
	return nil
}

// onOff reads an on/off variable (true/false too); unset is off.
func onOff(getenv func(string) string, name string) (bool, error) {
	switch v := strings.ToLower(strings.TrimSpace(getenv(name))); v {
	case "", "off", "false", "0", "no":
		return false, nil
	case "on", "true", "1", "yes":
		return true, nil
	}
	return false, fmt.Errorf("%s: want on or off", name)
}
