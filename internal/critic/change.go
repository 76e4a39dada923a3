package critic

import (
	"context"
	"fmt"
	"strings"

	"github.com/criticizer/criticizer/internal/diff"
	"github.com/criticizer/criticizer/internal/reposettings"
)

// SettingsEditNote is what a critique says of a change that edits the
// repository's settings file (R-REPO-6): the review ran under the base's
// settings, and the edit is reviewed as code.
const SettingsEditNote = "This change edits " + reposettings.FileName + ": settings in this change apply after merge; " +
	"this review used the base's."

// maxClaimNames is how many files that claim to be generated a summary
// names.
const maxClaimNames = 8

// ReviewChange is how the llm stage has c review in: as the repository's
// settings from the base say (ReviewIgnoring), and saying in the
// critique's summary what the change claimed of itself that did not
// count — files it calls generated that the base and the deployment do
// not (R-CRITIC-7: reviewed, after the hand-written files), and an edit
// of the settings file, which applies after merge (R-REPO-6). The change
// under review decides nothing of its own review.
func ReviewChange(ctx context.Context, c Critic, in Input) (Critique, error) {
	out, err := ReviewIgnoring(ctx, c, in)
	if err != nil {
		return Critique{}, err
	}
	d, err := diff.ParseString(in.Diff)
	if err != nil {
		return Critique{}, fmt.Errorf("%w: %w", ErrInvalidDiff, err)
	}
	var notes []string
	for i := range d.Files {
		f := &d.Files[i]
		if f.NewPath == reposettings.FileName || f.OldPath == reposettings.FileName {
			notes = append(notes, SettingsEditNote)
			break
		}
	}
	var kept []diff.File
	for _, f := range d.Files {
		if !ignored(in.Settings, f.Path()) {
			kept = append(kept, f)
		}
	}
	if names := claims(&diff.Diff{Files: kept}, in.Generated); len(names) > 0 {
		notes = append(notes, claimText(names))
	}
	if len(notes) > 0 {
		out.Summary = strings.TrimSpace(out.Summary + " " + strings.Join(notes, " "))
	}
	return out, nil
}

// claimText names the files that claim to be generated: "Treated as
// hand-written, though it claims to be generated (neither the base nor
// the deployment says so): a_pb2.py." Treated, not reviewed: a claim that
// did not fit the budget is listed as not reviewed, like any file.
func claimText(names []string) string {
	shown := names
	if len(shown) > maxClaimNames {
		shown = append(shown[:maxClaimNames:maxClaimNames], fmt.Sprintf("and %d more", len(names)-maxClaimNames))
	}
	it := "it claims"
	if len(names) > 1 {
		it = "they claim"
	}
	return "Treated as hand-written, though " + it + " to be generated (neither the base nor the deployment says so): " +
		strings.Join(shown, ", ") + "."
}
