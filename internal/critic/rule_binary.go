package critic

// checkBinaryAdded flags new binary files. They cannot be reviewed, bloat
// every clone forever, and are sometimes build outputs committed by mistake.
func checkBinaryAdded(_ *config, f *changedFile, c *collector) {
	if f.file.Binary && f.file.Added {
		c.add(f, 0, SeverityInfo, RuleBinaryAdded,
			"binary file added; make sure it belongs in the repository (large assets may belong in Git LFS or object storage)")
	}
}
