package fetch

import (
	"time"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/pipeline"
	"github.com/criticizer/criticizer/internal/source"
	"github.com/criticizer/criticizer/internal/wire"
)

// GitHub builds the GitHub fetcher (wire.GitHubAPI: the static token, or
// a GitHub App's installation tokens, R-SOURCE-4).
func GitHub(cfg config.Config, now func() time.Time) source.Fetcher {
	gh, _, err := wire.GitHubAPI(cfg, pipeline.MaxDiffBytes, now)
	if err != nil {
		// config.Validate refuses such a key; this is a last guard.
		return unconfigured{err.Error()}
	}
	return gh
}
