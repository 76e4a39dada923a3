package config

import (
	"fmt"
	"strconv"
)

// The signed webhook destinations' settings (R-CHANNEL-8).
const (
	// EnvOutboundWebhooks is a JSON array of {"name","url","secret"}:
	// where notify posts each version's review, signed with the
	// destination's whsec_ secret. It holds secrets: in a deployment it is
	// a key of notify's secret, never in the template.
	EnvOutboundWebhooks = "CRITICIZER_OUTBOUND_WEBHOOKS"
	// EnvAllowPrivateWebhookURLs lets a destination be a loopback or
	// private address: `make run` and the devstack's receiver. A
	// deployment refuses them (internal/safehttp), as it refuses such
	// diff URLs.
	EnvAllowPrivateWebhookURLs = "CRITICIZER_ALLOW_PRIVATE_WEBHOOK_URLS"
	// EnvChannels (on or off, the default) says the deployment has a
	// channel other than email: fetch, llm and notify then send notify a
	// post task at each version's phases (R-CHANNEL-4). Off, a review
	// makes exactly the calls of an email-only deployment (R-CHANNEL-15):
	// the template sets it from the OutboundWebhooks and CodeHostStatus
	// parameters, as the destinations live in a secret it cannot read.
	EnvChannels = "CRITICIZER_CHANNELS"
)

// readOutboundWebhooks reads the destinations (checked by the notify
// wiring, internal/outhook.Parse) and whether they may be private.
func (c *Config) readOutboundWebhooks(getenv func(string) string) error {
	if v := getenv(EnvOutboundWebhooks); v != "" {
		c.OutboundWebhooks = v
	}
	if v := getenv(EnvAllowPrivateWebhookURLs); v != "" {
		var err error
		if c.AllowPrivateWebhooks, err = strconv.ParseBool(v); err != nil {
			return fmt.Errorf("%s: want true or false", EnvAllowPrivateWebhookURLs)
		}
	}
	var err error
	c.Channels, err = onOff(getenv, EnvChannels)
	return err
}
