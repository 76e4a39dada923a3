package reviewers

import "slices"

// Asked is what a code review system says of a changelist now: who it asks
// to review (people requested by name, and the members of requested teams;
// GitLab's reviewers, who stay listed after they review; Gerrit's
// reviewers and CCs) and who has submitted a review (GitHub, with the time
// of their latest review), and the change's author.
type Asked struct {
	Requested []Person
	Reviewed  []Person
	Author    string
}

// Select decides who is mailed a review version (R-REVIEWERS-2):
//
//   - everyone the system asks now (its answer wins over any older removal
//     the roster holds: a reviewer removed and asked again is asked);
//   - everyone who already reviewed — the system's reviews and the roster's
//     reviewed marks — unless the roster says they were removed after their
//     latest review (someone who reviewed, was asked again and was then
//     taken off is off);
//   - minus the change's author, who does not review their own change.
//
// People are kept in that order, once each (by username, or by address for
// a person the system names by address only). Unsubscribes and
// suppressions are applied later, at send time (R-UNSUB-2).
func Select(a Asked, r Roster) []Person {
	out := []Person{}
	seen := map[string]bool{}
	author := Key(a.Author)
	add := func(p Person) {
		k := Key(p.Username)
		if k == "" {
			k = "email:" + Key(p.Email)
		}
		if k == "email:" || seen[k] || (author != "" && Key(p.Username) == author) {
			return
		}
		seen[k] = true
		out = append(out, p)
	}
	for _, p := range a.Requested {
		add(p)
	}
	reviewed := map[string]Person{}
	var order []string
	for _, p := range a.Reviewed {
		k := Key(p.Username)
		if k == "" {
			continue
		}
		if q, ok := reviewed[k]; !ok || p.Reviewed.After(q.Reviewed) {
			if !ok {
				order = append(order, k)
			}
			reviewed[k] = Person{Username: p.Username, Email: p.Email, Reviewed: p.Reviewed}
		}
	}
	for k, m := range r {
		if m.Reviewed.IsZero() {
			continue
		}
		q, ok := reviewed[k]
		if !ok {
			order = append(order, k)
			q = Person{Username: m.Name}
		}
		if m.Reviewed.After(q.Reviewed) {
			q.Reviewed = m.Reviewed
		}
		reviewed[k] = q
	}
	// By username, so a selection does not depend on map order.
	slices.Sort(order)
	for _, k := range order {
		p := reviewed[k]
		if r.RemovedAfter(p.Username, p.Reviewed) {
			continue
		}
		add(p)
	}
	return out
}
