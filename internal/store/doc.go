// Package store holds the contracts of Criticizer's state: one interface
// per kind of record, named for what it holds with no Store suffix (Jobs,
// Deliveries, Digests, Evidence, Votes, Dismissals, Learnings,
// Preferences, Mutes, ReplyWindows, ReplyClaims, Replays, Budgets,
// Rosters, Directory), the typed parameters and results of their methods
// (CreateRequest, JobWrite, Spend, ...), the errors a caller classifies
// (ErrNotFound, ErrConflict, ErrNotReached, ErrStaleHead) and the pure
// rules both drivers share (DecidePlacement, WindowStart, NextRun).
//
// It imports no AWS package, so a stage or handler that names only these
// contracts cannot spell a stored attribute: every write it makes is a
// method or a typed field, and each driver maps it to its own form (river's
// driver interface is the model). The drivers live beside it: package
// dynamo keeps the tables in DynamoDB (dynamo.Jobs, built by
// dynamo.NewJobs; dynamo.Deliveries; ...), package memstore in memory
// (memstore.Jobs), and package storetest runs one conformance suite per
// contract against both (R-STORE-1, R-LAYER-2).
package store
