package critic

// config holds Offline's tunables. It is copied into Offline at
// construction and never changed, which is what makes Offline safe for
// concurrent use.
type config struct {
	maxFindings    int
	largeHunkLines int
	largeFileLines int
	longLineChars  int
}

func defaultConfig() config {
	return config{
		maxFindings:    100,
		largeHunkLines: 200,
		largeFileLines: 800,
		longLineChars:  200,
	}
}

// Option configures NewOffline.
type Option func(*config)

// WithMaxFindings caps the number of findings in a critique (default 100).
// A review e-mail with hundreds of remarks goes unread; when the cap is hit
// the most severe findings are kept and Critique.Truncated is set.
// Values below 1 are ignored.
func WithMaxFindings(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxFindings = n
		}
	}
}

// WithLargeHunkLines sets how many changed (added plus removed) lines make
// a hunk "large" (default 200). Values below 1 are ignored.
func WithLargeHunkLines(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.largeHunkLines = n
		}
	}
}

// WithLargeFileLines sets how many changed lines make a file's change
// "large" (default 800). Values below 1 are ignored.
func WithLargeFileLines(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.largeFileLines = n
		}
	}
}

// WithLongLineChars sets the length, in characters, above which an added
// line is "long" (default 200). Values below 1 are ignored.
func WithLongLineChars(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.longLineChars = n
		}
	}
}
