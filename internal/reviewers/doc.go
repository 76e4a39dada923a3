// Package reviewers decides who is mailed the critique of a changelist's
// review version, for the code review systems (GitHub, GitLab, Gerrit):
//
//   - the directory that turns a system's usernames into addresses (a
//     table people keep, over the deployment's static seed), never guessing
//     one (R-REVIEWERS-4);
//   - the roster of a changelist: what the webhooks said about each
//     reviewer — requested, reviewed, removed — kept as the latest time of
//     each, so events that arrive late, twice or out of order merge to the
//     same roster (R-REVIEWERS-2);
//   - the selection of a version's reviewers: those the system asks now,
//     plus those who already reviewed and were not removed since, minus the
//     change's author (R-REVIEWERS-2).
//
// It is pure: no AWS and no HTTP imports, so every rule is a plain test.
package reviewers
