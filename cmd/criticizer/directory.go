package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/reviewers"
	"github.com/criticizer/criticizer/internal/store"
)

// helpDirectory is the part of the help about the reviewer directory.
const helpDirectory = `
The reviewer directory. GitHub and GitLab do not disclose reviewers'
addresses: the directory maps each source's usernames to addresses.
Entries are read at every fetch, so a change counts for the next delivery,
with no redeploy. Usernames are case-insensitive, per source (github,
gitlab, gerrit). A reviewer nobody mapped is never mailed at a guessed
address: their row reads skipped_no_email, the job lists them, and the
directory's unknown list collects them until an entry is set.

  criticizer directory list [--source S]       entries (and removals) and the unknown usernames
  criticizer directory set <source> <username> <address>
  criticizer directory remove <source> <username>
               a removal also hides the username's CRITICIZER_REVIEWER_DIRECTORY entry
  criticizer directory import <file.json|->    copy a CRITICIZER_REVIEWER_DIRECTORY seed
               ({"github": {"octocat": "octo@example.com"}}) into the table;
               entries already in the table are kept
`

func (c *cli) directoryList(ctx context.Context, args []string) error {
	var src string
	if _, _, err := parse("directory list", args, 0, func(fs *flag.FlagSet) { fs.StringVar(&src, "source", "", "") }); err != nil {
		return err
	}
	sources := job.ReviewSystems()
	if src != "" {
		if !slices.Contains(sources, src) {
			return usageError{"directory list: --source must be github, gitlab or gerrit"}
		}
		sources = []string{src}
	}
	o, err := c.connect(ctx)
	if err != nil {
		return err
	}
	type listing struct {
		Source  string            `json:"source"`
		Entries []reviewers.Entry `json:"entries"`
		Unknown []string          `json:"unknown"`
	}
	var all []listing
	for _, s := range sources {
		entries, err := o.Directory.List(ctx, s)
		if err != nil {
			return err
		}
		unknown, err := o.Directory.Unknown(ctx, s)
		if err != nil {
			return err
		}
		all = append(all, listing{s, entries, unknown})
	}
	if c.json {
		return c.emit(all)
	}
	tw := tabwriter.NewWriter(c.out, 0, 2, 2, ' ', 0)
	fmt.Fprintln(tw, "SOURCE\tUSERNAME\tADDRESS\tUPDATED\tBY")
	for _, l := range all {
		for _, e := range l.Entries {
			addr := e.Email
			if e.Removed {
				addr = "(removed)"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Source, e.Username, addr, e.UpdatedAt.Format("2006-01-02 15:04"), e.UpdatedBy)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, l := range all {
		if len(l.Unknown) > 0 {
			fmt.Fprintf(c.out, "\nUnknown %s reviewers (no address; add them with directory set):\n", l.Source)
			for _, u := range l.Unknown {
				fmt.Fprintf(c.out, "  %s\n", u)
			}
		}
	}
	return nil
}

func (c *cli) directorySet(ctx context.Context, args []string) error {
	_, pos, err := parse("directory set", args, 3, func(*flag.FlagSet) {})
	if err != nil {
		return err
	}
	if len(pos) != 3 {
		return usageError{"directory set: give the source, the username and the address"}
	}
	src, user, err := directoryName("directory set", pos[0], pos[1])
	if err != nil {
		return err
	}
	addr, err := reviewers.CheckAddress(pos[2])
	if err != nil {
		return usageError{"directory set: the address is " + err.Error()}
	}
	o, err := c.connect(ctx)
	if err != nil {
		return err
	}
	e, err := o.Directory.Set(ctx, src, user, addr, operator())
	if err != nil {
		return err
	}
	if c.json {
		return c.emit(e)
	}
	fmt.Fprintf(c.out, "%s:%s → %s (counts for the next delivery)\n", src, e.Username, e.Email)
	return nil
}

func (c *cli) directoryRemove(ctx context.Context, args []string) error {
	_, pos, err := parse("directory remove", args, 2, func(*flag.FlagSet) {})
	if err != nil {
		return err
	}
	if len(pos) != 2 {
		return usageError{"directory remove: give the source and the username"}
	}
	src, user, err := directoryName("directory remove", pos[0], pos[1])
	if err != nil {
		return err
	}
	o, err := c.connect(ctx)
	if err != nil {
		return err
	}
	had, err := o.Directory.Remove(ctx, src, user, operator())
	if err != nil {
		return err
	}
	if c.json {
		return c.emit(map[string]any{"source": src, "username": user, "removed": true, "had_entry": had})
	}
	if had {
		fmt.Fprintf(c.out, "%s:%s removed: no address from the next delivery\n", src, user)
	} else {
		fmt.Fprintf(c.out, "%s:%s had no entry in the table; recorded as removed (hides a seed entry)\n", src, user)
	}
	return nil
}

func (c *cli) directoryImport(ctx context.Context, args []string) error {
	_, pos, err := parse("directory import", args, 1, func(*flag.FlagSet) {})
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return usageError{"directory import: give a JSON file (or - for standard input)"}
	}
	var data []byte
	if pos[0] == "-" {
		data, err = io.ReadAll(os.Stdin)
	} else {
		data, err = os.ReadFile(pos[0])
	}
	if err != nil {
		return err
	}
	seed, err := reviewers.ParseStatic(data)
	if err != nil {
		return usageError{"directory import: " + err.Error()}
	}
	o, err := c.connect(ctx)
	if err != nil {
		return err
	}
	added, kept := 0, 0
	for _, e := range seed.Entries("") {
		if _, err := o.Directory.Get(ctx, e.Source, e.Username); err == nil {
			kept++
			continue
		} else if !isNotFound(err) {
			return err
		}
		if _, err := o.Directory.Set(ctx, e.Source, e.Username, e.Email, operator()); err != nil {
			return err
		}
		added++
	}
	fmt.Fprintf(c.out, "%d entries imported, %d already in the table kept\n", added, kept)
	return nil
}

// directoryName checks a source and a username given on the command line.
func directoryName(cmd, src, user string) (string, string, error) {
	if !slices.Contains(job.ReviewSystems(), src) {
		return "", "", usageError{cmd + ": the source must be github, gitlab or gerrit"}
	}
	if msg := reviewers.CheckUsername(user); msg != "" {
		return "", "", usageError{cmd + ": the username " + msg}
	}
	return src, user, nil
}

func isNotFound(err error) bool { return errors.Is(err, store.ErrNotFound) }
