package job

import "slices"

// The webhook sources: the code review systems Criticizer has adapters
// for, and the generic format any caller may speak. A job's Source is one
// of them, and each has its route (POST /webhooks/<source>).
//
// They are stated here, once, because job is the lowest package every
// layer that names a source already imports (intake's API, the pipeline,
// the reviewer directory), and it imports nothing of the project's; a
// package of their own would sit confusingly beside internal/source, the
// systems' adapters. infra (its own module) keeps a copy that a test
// checks against this file.
const (
	SourceGeneric = "generic"
	SourceGitHub  = "github"
	SourceGitLab  = "gitlab"
	SourceGerrit  = "gerrit"
)

// Sources returns every webhook source.
func Sources() []string {
	return []string{SourceGeneric, SourceGitHub, SourceGitLab, SourceGerrit}
}

// ReviewSystems returns the sources that are code review systems: their
// jobs carry a source reference rather than a diff and recipients, and
// their reviewers are usernames a directory maps to addresses. Every
// source but the generic one.
func ReviewSystems() []string {
	return slices.DeleteFunc(Sources(), func(s string) bool { return s == SourceGeneric })
}

// IsReviewSystem reports whether source is a code review system.
func IsReviewSystem(source string) bool { return slices.Contains(ReviewSystems(), source) }
