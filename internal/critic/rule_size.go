package critic

import (
	"fmt"

	"github.com/criticizer/criticizer/internal/diff"
)

// checkSize flags changes too big to review well: a whole file, or failing
// that individual hunks. Review quality drops sharply with size, so large
// changes are worth splitting. Deletions and generated files are exempt:
// nobody needs to read removed or machine-written code line by line.
func checkSize(cfg *config, f *changedFile, c *collector) {
	if f.generated || f.file.Deleted {
		return
	}
	if changed := f.additions + f.deletions; changed > cfg.largeFileLines {
		c.add(f, 0, SeverityWarning, RuleLargeFile,
			fmt.Sprintf("file changes %d lines (limit %d); consider splitting the change so each part can be reviewed carefully",
				changed, cfg.largeFileLines))
		return // the file-level finding subsumes per-hunk ones
	}
	for i := range f.file.Hunks {
		h := &f.file.Hunks[i]
		changed := 0
		for _, l := range h.Lines {
			if l.Kind == diff.Added || l.Kind == diff.Removed {
				changed++
			}
		}
		if changed > cfg.largeHunkLines {
			c.add(f, h.NewStart, SeverityInfo, RuleLargeHunk,
				fmt.Sprintf("hunk changes %d lines (limit %d); consider breaking it into smaller steps",
					changed, cfg.largeHunkLines))
		}
	}
}
