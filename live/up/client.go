package up

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"slices"
	"time"

	"github.com/stormsim/stormsim/faults"
)

// Wait is how long a run aimed at an up waits for the state file of an up
// that is still starting (a Kubernetes Deployment starting beside the Job).
const Wait = 5 * time.Minute

// Await reads up's state file, waiting for it to appear and name a
// running up (until deadline), and checks it serves scenario name.
func Await(ctx context.Context, path, name string, deadline time.Time) (*State, error) {
	for {
		b, err := os.ReadFile(path)
		var st State
		switch {
		case err == nil && json.Unmarshal(b, &st) == nil && st.Endpoint != "" && st.Control != "":
			if st.Stopped {
				return nil, fmt.Errorf("run: --up %s: that stormsim up (pid %d) has stopped", path, st.PID)
			}
			if st.Scenario != name {
				return nil, inputf("run: --up %s serves scenario %s, not %s", path, st.Scenario, name)
			}
			return &st, nil
		case err != nil && !errors.Is(err, fs.ErrNotExist):
			return nil, inputf("run: --up %s: %v", path, err)
		}
		if time.Now().After(deadline) {
			if err != nil {
				return nil, inputf("run: --up %s: no state file after %v: is stormsim up running with --state %s?", path, Wait, path)
			}
			return nil, inputf("run: --up %s is not the state file of a stormsim up", path)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// ReadState reads the state file of an up that should be running now, for
// `stormsim fault`: a file that is missing or not a state file is an
// InputError; an up that has stopped is an error.
func ReadState(path string) (*State, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, inputf("fault: --up %s: %v", path, err)
	}
	var st State
	if err := json.Unmarshal(b, &st); err != nil || st.Control == "" {
		return nil, inputf("fault: --up %s is not the state file of a stormsim up", path)
	}
	if st.Stopped {
		return nil, fmt.Errorf("fault: the stormsim up of %s (pid %d) has stopped", path, st.PID)
	}
	return &st, nil
}

// Fault has up apply fault f now, through its control endpoint; it
// returns the steps done and those to come. It is a run's ServerFault
// when the run aims at an up.
func Fault(ctx context.Context, st *State, f faults.Fault) ([]string, error) {
	a, err := PostFault(ctx, st, f)
	if err != nil {
		return nil, err
	}
	out := slices.Clone(a.Applied)
	for _, s := range a.Later {
		out = append(out, "to come "+s)
	}
	return out, nil
}

// PostFault sends fault f to up's control endpoint. It returns up's answer
// (nil when none could be read) and an error when up did not apply it.
func PostFault(ctx context.Context, st *State, f faults.Fault) (*FaultAnswer, error) {
	body, err := json.Marshal(f)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, st.Control+"/fault", bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+st.Token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("the stormsim up (pid %d) does not answer: %w", st.PID, err)
	}
	defer resp.Body.Close()
	var a FaultAnswer
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return nil, fmt.Errorf("%s from the control endpoint, and no answer it could read: %w", resp.Status, err)
	}
	if a.Error != "" || resp.StatusCode != http.StatusOK {
		return &a, fmt.Errorf("%s: %s", resp.Status, a.Error)
	}
	return &a, nil
}
