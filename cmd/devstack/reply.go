package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/smtp"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/criticizer/criticizer/internal/devstack"
)

// LocalInboundDomain is the inbound domain of `make run`'s reply
// addresses; LocalSMTPPort the port its SMTP listener takes (SMTP_PORT
// overrides it).
const (
	LocalInboundDomain = "replies.localhost"
	LocalSMTPPort      = 2525
)

// replyCmd replies as a reviewer to the latest email the running `make
// run` stack sent them: to its Reply-To, quoting it below the text as a
// mail client does, through the stack's SMTP listener.
func replyCmd(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("reply", flag.ContinueOnError)
	nth := fs.Int("n", 1, "reply to the Nth latest email to the recipient")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() != 2 {
		return errors.New("reply: want RECIPIENT 'TEXT', e.g. reviewer1@example.com 'wrong 1'")
	}
	who, text := fs.Arg(0), fs.Arg(1)
	ses := &devstack.SESEmulator{BaseURL: devstack.RunPorts.SESURL()}
	emails, err := ses.Emails(ctx)
	if err != nil {
		return fmt.Errorf("is `make run` up? %w", err)
	}
	slices.Reverse(emails)
	var e *devstack.StoredEmail
	for i, n := range emails {
		if len(n.ReplyTo) > 0 && slices.ContainsFunc(n.Destination.To, func(to string) bool { return strings.EqualFold(to, who) }) {
			if *nth--; *nth == 0 {
				e = &emails[i]
				break
			}
		}
	}
	if e == nil {
		return fmt.Errorf("reply: no email with a Reply-To to %s in %s/store", who, ses.BaseURL)
	}
	port := os.Getenv("SMTP_PORT")
	if port == "" {
		port = strconv.Itoa(LocalSMTPPort)
	}
	msg := devstack.ReplyMessage(who, *e, text)
	if err := smtp.SendMail("127.0.0.1:"+port, nil, who, e.ReplyTo[:1], msg); err != nil {
		return fmt.Errorf("reply: %w", err)
	}
	fmt.Printf("replied to %q as %s; the confirmation arrives at %s\n", e.Subject, who, ses.BaseURL)
	return nil
}
