package lb

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Remote drives an LB process (Serve) over its control endpoint: the same
// operations as a Balancer's, each one request that returns once the
// process has carried it out. It is safe for concurrent use.
type Remote struct {
	base  string // the control endpoint, http://host:port
	token string
	hc    *http.Client
}

// NewRemote returns a Remote for the control endpoint at base, with the
// token the process was started with.
func NewRemote(base, token string) *Remote {
	return &Remote{base: base, token: token, hc: &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 8, IdleConnTimeout: 30 * time.Second},
	}}
}

// SetBackend points a slot at a new replica URL (a restarted process),
// reached through the Unix socket at socket when it is not empty
// (Balancer.SetBackend).
func (r *Remote) SetBackend(ctx context.Context, slot int, url, socket string) error {
	return r.post(ctx, pathBackend, ControlRequest{Slot: slot, URL: url, Socket: socket})
}

// SetInPool puts a replica in the pool or takes it out.
func (r *Remote) SetInPool(ctx context.Context, slot int, in bool) error {
	return r.post(ctx, pathPool, ControlRequest{Slot: slot, In: in})
}

// Partition makes a replica unreachable (and cuts its connections), or
// reachable again.
func (r *Remote) Partition(ctx context.Context, slot int, on bool) error {
	return r.post(ctx, pathPartition, ControlRequest{Slot: slot, On: on})
}

// SetLatency adds d before every request is forwarded.
func (r *Remote) SetLatency(ctx context.Context, d time.Duration) error {
	return r.post(ctx, pathLatency, ControlRequest{Latency: d})
}

// CutFraction breaks about that fraction of all open connections.
func (r *Remote) CutFraction(ctx context.Context, f float64) error {
	return r.post(ctx, pathCut, ControlRequest{Fraction: f})
}

// CheckHealth turns on the process's health checks (Balancer.CheckHealth)
// for as long as it runs; h.OnChange is not sent: the changes come out of
// the process as lines (Watch).
func (r *Remote) CheckHealth(ctx context.Context, h Health) error {
	return r.post(ctx, pathHealth, ControlRequest{Interval: h.Interval, Threshold: h.Threshold, Path: h.Path})
}

// Pool reports, for every slot, whether the balancer routes new requests
// to it.
func (r *Remote) Pool(ctx context.Context) ([]bool, error) {
	var a PoolAnswer
	if err := r.get(ctx, pathPool, &a); err != nil {
		return nil, err
	}
	return a.InPool, nil
}

// Files asks the LB process what it ran short of so far.
func (r *Remote) Files(ctx context.Context) (FilesAnswer, error) {
	var a FilesAnswer
	err := r.get(ctx, pathFiles, &a)
	return a, err
}

// get GETs path and decodes its JSON answer into v.
func (r *Remote) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, r.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := r.do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		return fmt.Errorf("%w: GET %s: %v", ErrControl, path, err)
	}
	return nil
}

func (r *Remote) post(ctx context.Context, path string, body ControlRequest) error {
	b, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.base+path, bytes.NewReader(b))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := r.do(req)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // 204: nothing to read
	resp.Body.Close()
	return nil
}

// do sends a control request; a status other than 2xx is an error with the
// process's reason.
func (r *Remote) do(req *http.Request) (*http.Response, error) {
	if r.token != "" {
		req.Header.Set("Authorization", "Bearer "+r.token)
	}
	resp, err := r.hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("%w: %s %s: %v", ErrControl, req.Method, req.URL.Path, err)
	}
	if resp.StatusCode/100 != 2 {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		return nil, fmt.Errorf("%w: %s %s: %s: %s", ErrControl, req.Method, req.URL.Path, resp.Status, strings.TrimSpace(string(msg)))
	}
	return resp, nil
}

// Close lets go of the control connections.
func (r *Remote) Close() { r.hc.CloseIdleConnections() }
