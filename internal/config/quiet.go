package config

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// The notifier stays quiet unless something is new (R-QUIET-2, R-QUIET-3).
const (
	// EnvCollapseWindow is how long after a version is accepted its
	// notify stage waits, so that a burst of pushes is mailed once, about
	// the latest (R-QUIET-3). "0" turns the wait off.
	EnvCollapseWindow = "CRITICIZER_COLLAPSE_WINDOW"
	// EnvMailSameDiff: true mails a version whose diff content the
	// recipient was mailed before (R-QUIET-1); the default, false, does not.
	EnvMailSameDiff = "CRITICIZER_MAIL_SAME_DIFF"
	// EnvMailUnchangedReruns: true mails a rerun that finds nothing new
	// (R-QUIET-2); the default, false, leaves it quiet.
	EnvMailUnchangedReruns = "CRITICIZER_MAIL_UNCHANGED_RERUNS"
)

// DefaultCollapseWindow is 90 s: long enough to take in the pushes of one
// "fix the tests, fix the lint" burst, short against the time a reviewer
// takes to look, and far below the sweeper's stuck-job threshold.
const DefaultCollapseWindow = 90 * time.Second

// MaxCollapseWindow is SQS's longest message delay: the wait is a delay on
// the notify message, never a sleep in a function.
const MaxCollapseWindow = 15 * time.Minute

// readQuiet reads EnvCollapseWindow into LLM and EnvMailSameDiff and
// EnvMailUnchangedReruns into Notify.
func (c *Config) readQuiet(getenv func(string) string) error {
	c.LLM.CollapseWindow = DefaultCollapseWindow
	switch v := strings.TrimSpace(getenv(EnvCollapseWindow)); v {
	case "":
	case "0":
		c.LLM.CollapseWindow = 0
	default:
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 || d > MaxCollapseWindow {
			return fmt.Errorf("%s: want a duration from 0 to %s (SQS's longest delay), got %q", EnvCollapseWindow, MaxCollapseWindow, v)
		}
		c.LLM.CollapseWindow = d
	}
	var err error
	if c.Notify.MailSameDiff, err = boolean(getenv, EnvMailSameDiff); err != nil {
		return err
	}
	c.Notify.MailUnchangedReruns, err = boolean(getenv, EnvMailUnchangedReruns)
	return err
}

// boolean reads a true/false variable; unset is false.
func boolean(getenv func(string) string, name string) (bool, error) {
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		return false, nil
	}
	on, err := strconv.ParseBool(v)
	if err != nil {
		return false, fmt.Errorf("%s: want true or false, got %q", name, v)
	}
	return on, nil
}
