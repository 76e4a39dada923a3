package pipeline

import (
	"context"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/obs"
	"github.com/criticizer/criticizer/internal/reposettings"
	"github.com/criticizer/criticizer/internal/source"
	"github.com/criticizer/criticizer/internal/store"
)

// deniedSettings is the warning for a .criticizer.yaml the source's
// credentials may not read.
const deniedSettings = "could not read " + reposettings.FileName + ": the source's credentials may not read the repository's files " +
	"(a GitHub token needs contents: read); the review ran with defaults"

// repoSettings reads the repository's .criticizer.yaml at ref.BaseSHA,
// code already merged (the upstream repository's base on GitHub, the
// target project's on GitLab, the destination branch's tip on Gerrit),
// through the source's API (R-REPO-1), never at the version's head nor
// an unmerged parent: the change under review cannot set how it is
// reviewed (R-REPO-6).
// It parses it: absent, or
// not readable with the source's credentials, it is defaults; a file
// with any problem is defaults and warnings (R-REPO-2). A failure to
// reach the source fails the attempt, as the diff's does.
func (f *Fetch) repoSettings(ctx context.Context, ref source.Ref) (reposettings.Settings, []string, error) {
	ff, ok := f.Source.(source.FileFetcher)
	if !ok {
		return reposettings.Settings{}, nil, nil
	}
	file, err := ff.BaseFile(ctx, ref, reposettings.FileName, reposettings.MaxBytes)
	switch {
	case err != nil:
		return reposettings.Settings{}, nil, err
	case file.Denied:
		return reposettings.Settings{}, []string{deniedSettings}, nil
	case !file.Found:
		return reposettings.Settings{}, nil, nil
	}
	s, warnings := reposettings.Parse(file.Content)
	return s, warnings, nil
}

// applySettings decides, from the repository's settings, whether the
// version is reviewed (R-REPO-4: an author in skip_authors, a label in
// skip_labels) and what the job keeps of them. A skipped version has no
// recipients: the llm stage runs no model, notify mails no one, and the
// job ends succeeded saying why (job.Job.Skipped).
//
// A label skips only when the change's author cannot have set it
// (R-REPO-7): the source says which of the labels skip_labels names are
// beyond the author (source.LabelJudge; it is asked only when one is
// named). A label the author could have set is input, and the review
// goes on, the job's warnings saying why skip_labels did not apply. A
// failure to reach the source fails the attempt, as the diff's does.
func (f *Fetch) applySettings(ctx context.Context, j job.Job, ref source.Ref, author string, labels []string, s reposettings.Settings, warnings []string) (skip string, w store.JobWrite, err error) {
	if !s.Empty() {
		w.Settings = &s.RepoSettings
	}
	why := s.SkipAuthorReason(author)
	if named := s.SkipLabelsOf(labels); why == "" && len(named) > 0 {
		v := source.LabelVerdict{Why: source.WhyNoLabelJudge}
		if lj, ok := f.Source.(source.LabelJudge); ok {
			// Asked only when a label is named, within one file
			// request's bound, as the settings file itself.
			lctx, cancel := context.WithTimeout(ctx, source.FileRequestTimeout)
			v, err = lj.LabelsBeyondAuthor(lctx, ref, author, named)
			cancel()
			if err != nil {
				return "", store.JobWrite{}, err
			}
		}
		if len(v.Beyond) > 0 {
			why = reposettings.SkipLabelReason(v.Beyond[0])
		} else {
			warnings = append(warnings, v.Why)
			obs.Metric(ctx, f.Log, map[string]string{"Source": j.Source}, map[string]float64{"SkipLabelsNotApplied": 1})
		}
	}
	if len(warnings) > 0 {
		w.SettingsWarnings = warnings
		f.Log.WarnContext(ctx, "the repository's settings were refused or did not apply in part", "job_id", j.ID, "problems", len(warnings))
	}
	if why != "" {
		f.Log.InfoContext(ctx, "version not reviewed: the repository's settings skip it", "job_id", j.ID)
		w.Skipped = why
		w.Reviewers = &store.FetchedReviewers{Recipients: []string{}, NoEmail: []string{}}
		return why, w, nil
	}
	return "", w, nil
}
