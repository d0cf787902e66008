package discover

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"time"
)

// APIPrefix is where Handler serves; mount it with
// mux.Handle(discover.APIPrefix, discover.Handler(m)).
const APIPrefix = "/api/v1/discover/"

// selectRequest is the body of POST APIPrefix+"select".
type selectRequest struct {
	// VM is a key, name or PID; "" goes back to automatic selection.
	VM string `json:"vm"`
}

// apiError is the body of an error answer.
type apiError struct {
	Error string `json:"error"`
}

// Handler serves the control API of m:
//
//	GET  /api/v1/discover/vms     -> Snapshot
//	POST /api/v1/discover/select  {"vm": "KEY|NAME|PID"} -> Status
//
// POST needs Content-Type: application/json and, if the request has an
// Origin, a same-host one: a web page cannot make a browser send it.
func Handler(m *Manager) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+APIPrefix+"vms", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, m.List())
	})
	mux.HandleFunc("POST "+APIPrefix+"select", func(w http.ResponseWriter, r *http.Request) {
		if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct != "application/json" {
			writeJSON(w, http.StatusUnsupportedMediaType, apiError{"Content-Type must be application/json"})
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			if u, err := url.Parse(o); err != nil || u.Host != r.Host {
				writeJSON(w, http.StatusForbidden, apiError{"cross-origin request refused"})
				return
			}
		}
		var req selectRequest
		if err := json.NewDecoder(io.LimitReader(r.Body, 4096)).Decode(&req); err != nil {
			writeJSON(w, http.StatusBadRequest, apiError{"bad JSON body: " + err.Error()})
			return
		}
		st, err := m.Select(req.VM)
		if err != nil {
			code := http.StatusConflict
			if errors.Is(err, ErrNoSuchVM) {
				code = http.StatusNotFound
			}
			writeJSON(w, code, apiError{err.Error()})
			return
		}
		writeJSON(w, http.StatusOK, st)
	})
	return mux
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v) //nolint:errcheck // the client went away
}

// ErrNoProxy is wrapped when nothing answers at the control address.
var ErrNoProxy = errors.New("no jdwpaccel proxy answers")

// Client queries a running proxy's control API.
type Client struct {
	// Addr is the proxy's HTTP address (HOST:PORT).
	Addr string
	// HTTP is the client to use (a 5 s timeout client when nil).
	HTTP *http.Client
}

func (c *Client) http() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	return &http.Client{Timeout: 5 * time.Second}
}

func (c *Client) do(ctx context.Context, method, path string, body, out any) error {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return err
		}
		rd = bytes.NewReader(b)
	}
	u := "http://" + c.Addr + APIPrefix + path
	req, err := http.NewRequestWithContext(ctx, method, u, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.http().Do(req)
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Op == "dial" {
			return fmt.Errorf("%w at %s (is \"jdwpaccel proxy\" running with that --http-addr?): %v", ErrNoProxy, c.Addr, err)
		}
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		var ae apiError
		if json.Unmarshal(b, &ae) == nil && ae.Error != "" {
			return errors.New(ae.Error)
		}
		if resp.StatusCode == http.StatusNotFound {
			return fmt.Errorf("%s answers 404 for %s: the proxy there has no VM discovery (start it with --vm scan: or --vm adb:)", c.Addr, u)
		}
		return fmt.Errorf("%s: %s", u, resp.Status)
	}
	return json.Unmarshal(b, out)
}

// VMs returns the proxy's VMs.
func (c *Client) VMs(ctx context.Context) (Snapshot, error) {
	var s Snapshot
	err := c.do(ctx, http.MethodGet, "vms", nil, &s)
	return s, err
}

// Select chooses the proxy's current VM by key, name or PID ("" for
// automatic).
func (c *Client) Select(ctx context.Context, vm string) (Status, error) {
	var st Status
	err := c.do(ctx, http.MethodPost, "select", selectRequest{VM: vm}, &st)
	return st, err
}
