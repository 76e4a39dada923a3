package config

import (
	"fmt"

	"github.com/criticizer/criticizer/internal/delivery"
)

// EnvAllowedRecipientDomains lists the domains mail may go to
// (comma-separated, exact: a subdomain is listed on its own). Unset: every
// domain. An address outside it is settled skipped_domain and never sent
// (R-RECIPIENT-1).
const EnvAllowedRecipientDomains = "CRITICIZER_ALLOWED_RECIPIENT_DOMAINS"

// MaxAllowedRecipientDomainsBytes bounds the list: it travels in two
// functions' environments, which Lambda caps at 4 KB each (R-LIMIT-1).
const MaxAllowedRecipientDomainsBytes = 1024

// readRecipients reads the allowed recipient domains.
func (c *Config) readRecipients(getenv func(string) string) error {
	v := getenv(EnvAllowedRecipientDomains)
	if len(v) > MaxAllowedRecipientDomainsBytes {
		return fmt.Errorf("%s: %d bytes, at most %d", EnvAllowedRecipientDomains, len(v), MaxAllowedRecipientDomainsBytes)
	}
	d, err := delivery.ParseDomains(v)
	if err != nil {
		return fmt.Errorf("%s: %w", EnvAllowedRecipientDomains, err)
	}
	c.AllowedRecipientDomains = d
	return nil
}
