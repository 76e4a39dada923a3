package webhook

import (
	"errors"
	"testing"
)

// An event that names the head it replaced says so in Event.BeforeSHA,
// which intake orders heads by: GitHub's synchronize `before` when its
// `after` is the pull request's head (a payload whose two disagree, and
// every other action, name none); GitLab's update `oldrev`. An all-zero
// before is none; a before that is no commit is a 400 naming it.
// Rules: R-SOURCE-6.
func TestParseEvent_BeforeSHA(t *testing.T) {
	gh := GitHub{Secret: []byte(ghTestSecret)}
	const (
		before = "f95f852bd8fca8fcc58a9a2d6c842781e32a215e" // the recorded synchronize's
		head   = "ec26c3e57ca3a959ca5aad62de7213c562f8c821"
	)
	for name, tc := range map[string]struct {
		event, file string
		edit        func(m map[string]any)
		want        string
	}{
		"synchronize":                {"pull_request", "pull_request.synchronize.json", nil, before},
		"after is not the head":      {"pull_request", "pull_request.synchronize.json", func(m map[string]any) { m["after"] = "34c5c7793cb3b279e22454cb6750c80560547b3a" }, ""},
		"all-zero before":            {"pull_request", "pull_request.synchronize.json", func(m map[string]any) { m["before"] = "0000000000000000000000000000000000000000" }, ""},
		"opened":                     {"pull_request", "pull_request.opened.json", nil, ""},
		"opened with a stray before": {"pull_request", "pull_request.opened.json", func(m map[string]any) { m["before"], m["after"] = before, head }, ""},
	} {
		body := ghFixture(t, tc.file)
		if tc.edit != nil {
			body = ghEdit(t, tc.file, tc.edit)
		}
		ev, err := gh.ParseEvent(ghRequest(tc.event, body, nil))
		if err != nil || ev.BeforeSHA != tc.want {
			t.Errorf("%s: before %q (%v), want %q", name, ev.BeforeSHA, err, tc.want)
		}
	}
	_, err := gh.ParseEvent(ghRequest("pull_request", ghEdit(t, "pull_request.synchronize.json", func(m map[string]any) { m["before"] = "main" }), nil))
	var fe *FieldError
	if !errors.As(err, &fe) || fe.Field != "before" {
		t.Errorf("a before that is no commit: %v, want a 400 naming before", err)
	}

	gl := GitLab{Token: []byte(glTestToken)}
	ev, err := gl.ParseEvent(glRequest(glFixture(t, "merge_request.update-push.json"), nil))
	if err != nil || ev.BeforeSHA != "95790bf891e76fee5e1747ab589903a6a1f80f22" || ev.HeadSHA != "da1560886d4f094c3e6c9ef40349f7d38b5d27d7" {
		t.Errorf("gitlab update with new commits: before %q head %q (%v), want its oldrev", ev.BeforeSHA, ev.HeadSHA, err)
	}
	if ev, err := gl.ParseEvent(glRequest(glFixture(t, "merge_request.open.json"), nil)); err != nil || ev.BeforeSHA != "" {
		t.Errorf("gitlab open: before %q (%v), want none", ev.BeforeSHA, err)
	}
	_, err = gl.ParseEvent(glRequest(glEdit(t, "merge_request.update-push.json", func(m map[string]any) { glAttrs(m)["oldrev"] = "nope" }), nil))
	if !errors.As(err, &fe) || fe.Field != "object_attributes.oldrev" {
		t.Errorf("an oldrev that is no commit: %v, want a 400 naming it", err)
	}
}
