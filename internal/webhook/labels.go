package webhook

import (
	"encoding/json"
	"strings"
)

// MaxLabels bounds the labels kept of one payload.
const MaxLabels = 100

// Labels are the labels a code review system's webhook payload puts on the
// change, for the repository's skip_labels (.criticizer.yaml, R-REPO-4):
// GitHub's pull_request.labels[].name, GitLab's labels[].title (the merge
// request hook's top level, else object_attributes.labels), Gerrit's
// change.hashtags (Gerrit's "labels" are votes, not tags). The generic
// format has none. The body has been parsed by the source's adapter
// already; a body that does not decode here has no labels. They are what
// the change carries, not who put them there: a label skips a review
// only when the source says its author cannot have set it, and Gerrit's
// hashtags, which a change's owner may set, never do (R-REPO-7).
func Labels(source string, body []byte) []string {
	var p struct {
		PullRequest struct {
			Labels []struct {
				Name string `json:"name"`
			} `json:"labels"`
		} `json:"pull_request"`
		Labels []struct {
			Title string `json:"title"`
		} `json:"labels"`
		ObjectAttributes struct {
			Labels []struct {
				Title string `json:"title"`
			} `json:"labels"`
		} `json:"object_attributes"`
		Change struct {
			Hashtags []string `json:"hashtags"`
		} `json:"change"`
	}
	if err := json.Unmarshal(body, &p); err != nil {
		return nil
	}
	var out []string
	add := func(l string) {
		if l = strings.TrimSpace(l); l != "" && len(out) < MaxLabels {
			out = append(out, l)
		}
	}
	switch source {
	case "github":
		for _, l := range p.PullRequest.Labels {
			add(l.Name)
		}
	case "gitlab":
		ls := p.Labels
		if len(ls) == 0 {
			ls = p.ObjectAttributes.Labels
		}
		for _, l := range ls {
			add(l.Title)
		}
	case "gerrit":
		for _, h := range p.Change.Hashtags {
			add(h)
		}
	}
	return out
}
