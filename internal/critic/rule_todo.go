package critic

import "fmt"

// todoMarkers are the conventional "unfinished work" markers. Only the
// upper-case forms count: "todo" in prose or identifiers is not a marker.
var todoMarkers = []string{"TODO", "FIXME", "XXX", "HACK"}

// checkTodo flags added TODO-style markers: they are promises that tend to
// be forgotten unless someone notices them at review time.
func checkTodo(_ *config, f *changedFile, c *collector) {
	if f.generated {
		return
	}
	for l := range f.addedLines() {
		for _, m := range todoMarkers {
			if indexWord(l.Text, m) >= 0 {
				c.add(f, l.NewLine, SeverityInfo, RuleTodoAdded,
					fmt.Sprintf("%s comment added; link it to an issue so the follow-up is not forgotten", m))
				break // one finding per line
			}
		}
	}
}
