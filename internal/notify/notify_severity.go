package notify

import (
	"context"

	"github.com/criticizer/criticizer/internal/critic"
	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/prefs"
)

// belowMinSeverity drops from the critique to be mailed the findings below
// the minimum severity: the deployment's (Notify.MinSeverity), raised by
// the repository's min_severity, never lowered (R-REPO-5). The email says
// how many it left out; the stored critique keeps them.
func (n *Notify) belowMinSeverity(ctx context.Context, j job.Job, c critic.Critique) critic.Critique {
	min := n.minSeverity(j)
	c, dropped := critic.DropBelow(c, min)
	if dropped > 0 {
		n.Log.InfoContext(ctx, "findings below the minimum severity left out of the email", "job_id", j.ID, "min_severity", min, "dropped", dropped)
	}
	return c
}

// minSeverity is the version's floor: the deployment's minimum, raised by
// the repository's (R-REPO-5).
func (n *Notify) minSeverity(j job.Job) critic.Severity {
	min := n.MinSeverity
	if j.Settings != nil {
		// Checked when the file was read: a bad value never gets here.
		if repo, err := critic.ParseSeverity(j.Settings.MinSeverity); err == nil {
			min = critic.Higher(min, repo)
		}
	}
	return min
}

// ownMinimum is the recipient's own minimum severity when it leaves out
// more than the floor does, else "": a recipient can only ask for less,
// never widen what the deployment and the repository mail (R-PREF-3).
func ownMinimum(floor critic.Severity, p prefs.Preferences) critic.Severity {
	own, err := critic.ParseSeverity(p.MinSeverity)
	if err != nil || own == "" || critic.Higher(floor, own) == floor {
		return ""
	}
	return own
}
