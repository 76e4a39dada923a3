package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/criticizer/criticizer/internal/job"
	"github.com/criticizer/criticizer/internal/reviewers"
)

// DirectoryAdmin is what the admin API does with the reviewer directory
// (store.Directory).
type DirectoryAdmin interface {
	Set(ctx context.Context, source, username, email, by string) (reviewers.Entry, error)
	Remove(ctx context.Context, source, username, by string) (bool, error)
	List(ctx context.Context, source string) ([]reviewers.Entry, error)
	Unknown(ctx context.Context, source string) ([]string, error)
}

// DirectoryList is the body of GET /admin/directory?source=S.
type DirectoryList struct {
	Source  string            `json:"source"`
	Entries []reviewers.Entry `json:"entries"`
	// Unknown are usernames reviewers were asked by that no entry
	// resolved: whom to add.
	Unknown []string `json:"unknown"`
}

// shownEntry is an entry as the admin API shows it: the address masked
// like every address the admin API answers with (these answers end up in
// terminals and tickets); `criticizer directory list` shows it whole.
func shownEntry(e reviewers.Entry) reviewers.Entry {
	if e.Email != "" {
		e.Email = MaskEmail(e.Email)
	}
	return e
}

// directory serves /admin/directory (R-REVIEWERS-4):
//
//	GET    /admin/directory?source=S             the source's entries and unknown usernames
//	PUT    /admin/directory/{source}/{username}  {"email": "…"}: set an entry
//	DELETE /admin/directory/{source}/{username}  remove it (also hides the seed's entry)
//
// An entry counts for the next delivery: the fetch stage reads the table
// at every fetch.
func (a *Admin) directory(ctx context.Context, req events.APIGatewayV2HTTPRequest, method, path string) events.APIGatewayV2HTTPResponse {
	if a.Directory == nil {
		return noRoute(method, path)
	}
	if path == "/admin/directory" {
		if method != http.MethodGet {
			return methodNotAllowed(http.MethodGet)
		}
		src := req.QueryStringParameters["source"]
		if field, msg := checkDirectorySource(src); field != "" {
			return problem(http.StatusBadRequest, field, msg)
		}
		entries, err := a.Directory.List(ctx, src)
		if err != nil {
			a.Log.ErrorContext(ctx, "list the directory failed", "source", src, "error", err)
			return unavailable("could not read the directory; retry")
		}
		unknown, err := a.Directory.Unknown(ctx, src)
		if err != nil {
			a.Log.ErrorContext(ctx, "read the unknown reviewers failed", "source", src, "error", err)
			return unavailable("could not read the directory; retry")
		}
		out := DirectoryList{Source: src, Entries: make([]reviewers.Entry, 0, len(entries)), Unknown: unknown}
		for _, e := range entries {
			out.Entries = append(out.Entries, shownEntry(e))
		}
		return jsonResponse(http.StatusOK, out, map[string]string{"Cache-Control": "no-store"})
	}
	rest := strings.TrimPrefix(path, "/admin/directory/")
	rawSrc, rawUser, ok := strings.Cut(rest, "/")
	src, err1 := url.PathUnescape(rawSrc)
	user, err2 := url.PathUnescape(rawUser)
	// Exactly two non-empty segments, as API Gateway routes them
	// (R-DEPLOY-1): anything else is no route, whatever the method.
	if !ok || rawSrc == "" || rawUser == "" || strings.Contains(rawUser, "/") || err1 != nil || err2 != nil {
		return problem(http.StatusNotFound, "path", "use /admin/directory/{source}/{username}")
	}
	if method != http.MethodPut && method != http.MethodDelete {
		return directoryMethodNotAllowed()
	}
	if field, msg := checkDirectorySource(src); field != "" {
		return problem(http.StatusBadRequest, field, msg)
	}
	if msg := reviewers.CheckUsername(user); msg != "" {
		return problem(http.StatusBadRequest, "username", msg)
	}
	switch method {
	case http.MethodPut:
		body, err := decodeBody(req)
		if err != nil {
			return problem(http.StatusBadRequest, "body", "body is not valid base64")
		}
		email, field, msg := decodeDirectoryPut(body)
		if field != "" {
			return problem(http.StatusBadRequest, field, msg)
		}
		e, err := a.Directory.Set(ctx, src, user, email, "admin-api")
		if err != nil {
			a.Log.ErrorContext(ctx, "set a directory entry failed", "source", src, "error", err)
			return unavailable("could not write the entry; retry")
		}
		a.Log.InfoContext(ctx, "directory entry set", "source", src)
		return jsonResponse(http.StatusOK, shownEntry(e), nil)
	case http.MethodDelete:
		existed, err := a.Directory.Remove(ctx, src, user, "admin-api")
		if err != nil {
			a.Log.ErrorContext(ctx, "remove a directory entry failed", "source", src, "error", err)
			return unavailable("could not write the removal; retry")
		}
		a.Log.InfoContext(ctx, "directory entry removed", "source", src)
		return jsonResponse(http.StatusOK, map[string]any{"source": src, "username": user, "removed": true, "had_entry": existed}, nil)
	}
	return directoryMethodNotAllowed()
}

func directoryMethodNotAllowed() events.APIGatewayV2HTTPResponse {
	return jsonResponse(http.StatusMethodNotAllowed, Problem{Error: "method_not_allowed", Message: "use PUT or DELETE"},
		map[string]string{"Allow": "PUT, DELETE"})
}

func checkDirectorySource(src string) (field, msg string) {
	switch {
	case src == "":
		return "source", "is required: one of " + strings.Join(job.ReviewSystems(), ", ")
	case !slices.Contains(job.ReviewSystems(), src):
		return "source", "must be one of " + strings.Join(job.ReviewSystems(), ", ")
	}
	return "", ""
}

// decodeDirectoryPut reads {"email": "…"} strictly.
func decodeDirectoryPut(body []byte) (email, field, msg string) {
	if len(body) > maxAdminBody {
		return "", "body", fmt.Sprintf("must be at most %d bytes", maxAdminBody)
	}
	var in struct {
		Email *string `json:"email"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&in); err != nil {
		field, msg := jsonError(err)
		return "", field, msg
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", "body", "must be a single JSON object"
	}
	if in.Email == nil {
		return "", "email", "is required"
	}
	addr, err := reviewers.CheckAddress(*in.Email)
	if err != nil {
		return "", "email", "is " + err.Error()
	}
	return addr, "", ""
}
