package main

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/criticizer/criticizer/internal/config"
	"github.com/criticizer/criticizer/internal/devstack"
	"github.com/criticizer/criticizer/internal/webhook"
)

// The README's copy of what `make run` prints is what it prints, at
// make run's own ports, names and secrets: a line the banner gains (a new
// local endpoint) must reach the front page too.
func TestWelcome_AsTheREADMEShowsIt(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const open = "```\nCriticizer is running locally.\n"
	i := strings.Index(string(readme), open)
	if i < 0 {
		t.Fatal("README.md shows no copy of make run's banner")
	}
	rest := string(readme)[i+len("```\n"):]
	shown := rest[:strings.Index(rest, "```")]

	sample := "events/generic-webhook.json"
	body, err := os.ReadFile("../../" + sample)
	if err != nil {
		t.Fatal(err)
	}
	cfg := config.Config{WebhookSecret: devstack.LocalGenericSecret, InboundDomain: LocalInboundDomain}
	res := devstack.Resources{JobsTable: "criticizer-jobs", DeliveriesTable: "criticizer-deliveries", PayloadBucket: "criticizer-payloads"}
	got := welcome("3000", devstack.RunPorts, cfg, res, "127.0.0.1:"+strconv.Itoa(LocalSMTPPort), sample,
		webhook.Sign([]byte(cfg.WebhookSecret), body))
	if strings.TrimSpace(got) != strings.TrimSpace(shown) {
		t.Errorf("README.md's banner differs from make run's:\n--- make run prints\n%s\n--- README.md shows\n%s", got, shown)
	}
}
