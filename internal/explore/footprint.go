package explore

import (
	"strings"
)

// access is how an action uses a resource.
type access int

const (
	read access = iota
	write
	// add creates something new in a collection (a message on a queue, a
	// mail at SES): two adds commute; an add conflicts with a read or a
	// write of the collection.
	add
)

// use is one resource an action touches. Resources are paths: "row/d_x",
// "queue/notify/m1"; a path conflicts with itself and with its prefixes
// ("queue/notify" read whole conflicts with a write of "queue/notify/m1").
type use struct {
	res string
	acc access
}

// footprint is everything an action may read or change, known before it
// runs: the call a process is parked on, or the environment move.
type footprint []use

// independent reports whether two actions commute and neither disables
// the other: then exploring both orders reaches the same states, and
// partial-order reduction explores one (sleep sets).
func independent(a, b footprint) bool {
	for _, x := range a {
		for _, y := range b {
			if conflicts(x, y) {
				return false
			}
		}
	}
	return true
}

func conflicts(x, y use) bool {
	if !overlap(x.res, y.res) {
		return false
	}
	switch {
	case x.acc == read && y.acc == read:
		return false
	case x.acc == add && y.acc == add:
		return false
	}
	return true
}

func overlap(a, b string) bool {
	if a == b {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	return strings.HasPrefix(b, a+"/")
}

// footprint is what a would touch in the world's current state. Every
// action reads the clock (handlers read it, the queues' visibility
// follows it); a tick writes it, so it commutes with nothing.
func (w *world) footprint(a Action) footprint {
	fp := footprint{{"clock", read}}
	switch a.Kind {
	case Step:
		p := w.sched.find(a.Target)
		fp = append(fp, use{"proc/" + a.Target, write})
		if p == nil || p.at == nil {
			return fp
		}
		fp = append(fp, opUses(*p.at)...)
		if a.Out.Fault() {
			fp = append(fp, use{"budget/faults", write})
		}
	case Deliver:
		name := "notify"
		for _, id := range strings.Split(a.Target, "+") {
			if q, _ := w.message(id); q != nil {
				name = q.name
			}
			fp = append(fp, use{"queue/" + name + "/" + id, write})
		}
		fp = append(fp, use{"live", write}, use{"seq/" + name, write})
	case Overrun:
		fp = append(fp, use{"proc/" + a.Target, write}, use{"clock", write}, use{"budget/faults", write})
	case Publish, Again:
		fp = append(fp, use{"event/" + a.Target, write}, use{"queue/feedback", add})
		if a.Kind == Again {
			fp = append(fp, use{"budget/faults", write})
		}
	case Tick:
		fp = append(fp, use{"clock", write}, use{"budget/ticks", write})
	case Sweep:
		fp = append(fp, use{"live", write}, use{"seq/sweeper", write}, use{"budget/sweeps", write})
	case Kill:
		fp = append(fp, use{"proc/" + a.Target, write}, use{"live", write}, use{"budget/faults", write})
	case Post:
		// The request's own state, and a new intake process.
		fp = append(fp, use{"request/" + a.Target, write}, use{"live", write}, use{"seq/intake", write})
	case Redrive:
		src := strings.TrimSuffix(a.Target, "-dlq")
		fp = append(fp, use{"queue/" + a.Target, write}, use{"queue/" + src, add}, use{"budget/redrives", write})
	}
	return fp
}

// opUses maps a call to the resources it touches.
func opUses(o op) footprint {
	acc := read
	if o.write {
		acc = write
	}
	dom, _, _ := strings.Cut(o.name, ".")
	switch o.name {
	case "sqs.SendMessage":
		return footprint{{"queue/" + o.key, add}}
	case "sqs.DeleteMessage", "sqs.ChangeMessageVisibility":
		return footprint{{"queue/" + o.key, write}}
	case "sqs.GetQueueAttributes":
		return footprint{{"queue/" + o.key, read}}
	case "ses.Send":
		return footprint{{"ses", add}}
	case "ses.Answer":
		return nil // local to the process
	}
	switch dom {
	case "outbox":
		dom = "row"
	case "jobs":
		dom = "job"
	case "recipients":
		// Standings names several recipients at once: the whole set.
		return footprint{{"rcpt", acc}}
	}
	if len(o.keys) > 0 {
		// A call on several resources touches each: joined into one key,
		// "row/a,b" would overlap neither "row/a" nor "row/b".
		fp := make(footprint, 0, len(o.keys))
		for _, k := range o.keys {
			fp = append(fp, use{dom + "/" + k, acc})
		}
		return fp
	}
	if o.key == "*" || o.key == "" {
		return footprint{{dom, acc}}
	}
	return footprint{{dom + "/" + o.key, acc}}
}
